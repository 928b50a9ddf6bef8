"""Machines as a person sets them up (issue 17): a bare remote in ``tmp_path``, vaults made from it
by ``vaultmem clone`` (a subprocess), each served by its own ``vaultmem serve`` (a subprocess, real
MCP client over HTTP), synced by ``vaultmem sync`` or by the daemon itself."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
from mcp import Client
from mcp_harness import mcp_client, structured
from reliability._support import ServeProcess

from tests.conftest import git
from tests.sync_harness import fsck, notes_with_markers, status, tree

__all__ = [
    "Machine",
    "bare_remote",
    "closed_port_url",
    "fsck",
    "notes_with_markers",
    "settle",
    "status",
    "tree",
    "vaultmem",
]

T = TypeVar("T")
VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))
#: Automatic rounds off: the tests decide when a machine syncs.
MANUAL = "sync_interval: 0\nsync_debounce: 0\n"


def vaultmem(*args: str, timeout: float = 120, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([VAULTMEM, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def closed_port_url() -> str:
    """A remote on a loopback port nothing listens on: what an offline machine sees."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/vault.git"


def bare_remote(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    return path


class Machine:
    """One vault cloned from the remote, with its own daemon while :meth:`serve` runs."""

    def __init__(self, remote: Path, root: Path, *, git_dir: Path | None = None) -> None:
        self.root = root
        extra = ["--git-dir", str(git_dir)] if git_dir else []
        done = vaultmem("clone", str(remote), str(root), *extra)
        assert done.returncode == 0, done.stderr
        self.daemon: ServeProcess | None = None

    @property
    def name(self) -> str:
        return self.root.name

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return vaultmem("--vault", str(self.root), *args)

    def sync(self) -> dict[str, Any]:
        """One ``vaultmem sync --json`` (beside the daemon, when it runs); its report."""
        done = self.cli("sync", "--json")
        assert done.returncode == 0, f"{self.name}: {done.stderr}"
        return dict(json.loads(done.stdout))

    def serve(self, *, fake_embedder: bool = False) -> ServeProcess:
        self.daemon = ServeProcess(
            self.root, self.root.parent / f"{self.name}-config", fake_embedder=fake_embedder
        )
        return self.daemon

    def stop(self) -> None:
        if self.daemon is not None:
            assert self.daemon.stop() == 0
            self.daemon = None

    def kill(self) -> None:
        if self.daemon is not None:
            self.daemon.kill()
            self.daemon = None

    def session(self, work: Callable[[Client], Awaitable[T]]) -> T:
        """Run ``work`` with one MCP client of this machine's daemon."""
        daemon = self.daemon
        assert daemon is not None

        async def run() -> T:
            async with mcp_client(daemon.url, daemon.token) as client:
                return await work(client)

        return anyio.run(run)

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """A tool's result (a graph tool's ``structuredContent.result``)."""

        async def one(client: Client) -> dict[str, Any]:
            return await call(client, tool, **arguments)

        return self.session(one)

    def search_ids(self, query: str, **arguments: Any) -> list[str]:
        return [hit["id"] for hit in self.call("memory_search", query=query, **arguments)["results"]]

    def health(self) -> dict[str, Any]:
        return dict(self.call("memory_status", action="health", include_details=True)["item"])


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's result over MCP: a memory tool's structured content, a graph tool's ``result``
    (the wire envelope); fails the test on a tool error."""
    result = await client.call_tool(tool, arguments)
    content = structured(result) if set(result.structured_content or {}) != {"result"} else None
    if content is None:
        assert not result.is_error, result.content
        content = dict(result.structured_content or {})["result"]
    return dict(content)


def settle(remote: Path, *machines: Machine, rounds: int = 8) -> int:
    """``vaultmem sync`` on each machine in turn until all of them are at the remote's commit with
    nothing uncommitted (a round anywhere would then bring nothing in and send nothing out); the
    number of rounds it took."""
    for n in range(1, rounds + 1):
        machines[(n - 1) % len(machines)].sync()
        if n >= len(machines):
            tip = git(remote, "rev-parse", "main")
            if all(git(m.root, "rev-parse", "HEAD") == tip and status(m) == "" for m in machines):
                return n
    raise AssertionError(f"the machines did not meet after {rounds} rounds of sync")
