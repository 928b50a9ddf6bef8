"""Helpers for the daemon tests: a real server on a free loopback port, and MCP clients for it."""

from __future__ import annotations

import functools
import json
import os
import queue
import re
import ssl
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar

import httpx2
from mcp import Client
from mcp.client.client import ConnectMode
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, Implementation

from vaultmem.config import Settings
from vaultmem.index.embedder import Embedder, FakeEmbedder
from vaultmem.server.daemon import Daemon

T = TypeVar("T")
REPO = Path(__file__).resolve().parent.parent


@contextmanager
def running_daemon(
    vault: Path, token_file: Path, *, embedder: Embedder | None = None, **overrides: Any
) -> Iterator[Daemon]:
    """A daemon on 127.0.0.1:<free port> serving ``vault`` (fake embedder unless one is given)."""
    settings = Settings.resolve(vault, **{"durable": False, **overrides})
    daemon = Daemon(settings, port=0, embedder=embedder or FakeEmbedder(), token_file=token_file)
    daemon.start()
    try:
        yield daemon
    finally:
        daemon.stop()


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context per process for every test's HTTP client. httpx builds one per client
    otherwise, loading the CA bundle each time (~50 ms of CPU: 11 s of test_graph_tools.py's 76 s
    under cProfile); the daemon speaks plain HTTP on loopback, so it is never used."""
    return ssl.create_default_context()


def http_client(token: str | None, **headers: str) -> httpx2.AsyncClient:
    all_headers = dict(headers)
    if token is not None:
        all_headers["Authorization"] = f"Bearer {token}"
    return httpx2.AsyncClient(headers=all_headers, timeout=httpx2.Timeout(30.0), verify=tls_context())


@asynccontextmanager
async def mcp_client(
    url: str, token: str, *, mode: ConnectMode = "auto", client_info: Implementation | None = None
) -> AsyncIterator[Client]:
    """An MCP client over streamable HTTP, sending the bearer token.

    ``mode="legacy"`` speaks the pre-2026 handshake as most hosts still do: an ``initialize`` that
    opens a session, and a GET event stream held open for it (the modern protocol has no sessions).
    """
    async with (
        http_client(token) as http,
        Client(
            streamable_http_client(url, http_client=http), cache=None, mode=mode, client_info=client_info
        ) as client,
    ):
        yield client


def structured(result: CallToolResult) -> dict[str, Any]:
    """The tool's structured result; fails the test on a tool error."""
    assert not result.is_error, result.content
    assert result.structured_content is not None
    # The text block carries the same JSON, for hosts that read only text.
    text = result.content[0].text  # type: ignore[union-attr]
    assert json.loads(text) == result.structured_content
    return dict(result.structured_content)


def error_text(result: CallToolResult) -> str:
    assert result.is_error, result.structured_content
    return " ".join(getattr(block, "text", "") for block in result.content)


def wait_for(predicate: Callable[[], T], timeout: float = 20.0, interval: float | None = None) -> T:
    """Poll until ``predicate`` returns something truthy; fail after ``timeout`` seconds.

    Without ``interval`` the pause grows from 20 ms by half each time, to at most 0.2 s: many
    predicates run git or read the vault, and polled every 20 ms through a watcher's quiet period
    they took CPU from the daemon under test (the suite is CPU-bound on 2 cores). A predicate on a
    state that lasts only moments (a queue between two retries) gives a fixed ``interval``: polls
    0.2 s apart can keep missing it."""
    deadline = time.monotonic() + timeout
    pause = 0.02 if interval is None else interval
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(pause)
        if interval is None:
            pause = min(pause * 1.5, 0.2)


def stdio_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env.update(extra)
    return env


#: Runs ``vaultmem mcp`` with the fake embedder, so a stdio server starts in a fraction of a second.
FAKE_STDIO_SERVER = (
    "import sys\n"
    "from vaultmem.config import Settings\n"
    "from vaultmem.index.embedder import FakeEmbedder\n"
    "from vaultmem.server.daemon import run_stdio\n"
    "run_stdio(Settings.resolve(sys.argv[1], durable=False), embedder=FakeEmbedder())\n"
)


def fake_stdio_command(vault: Path) -> tuple[str, list[str]]:
    return sys.executable, ["-c", FAKE_STDIO_SERVER, str(vault)]


class Lines:
    """The lines a process prints, read on a thread so that every wait is bounded."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self.thread.start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.put(line)

    def until(self, pattern: str, timeout: float = 60.0) -> re.Match[str]:
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line matching {pattern!r} in: {''.join(self.seen)}") from None
            self.seen.append(line)
            found = regex.search(line)
            if found:
                return found

    def drain(self) -> str:
        while True:
            try:
                self.seen.append(self.lines.get_nowait())
            except queue.Empty:
                return "".join(self.seen)
