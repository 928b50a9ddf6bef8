"""The daemon and the stdio server as real processes, started the way the README and the MCP hosts
start them, with the real embedding model."""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import git
from mcp import Client, StdioServerParameters
from mcp_harness import Lines, mcp_client, stdio_env, structured, wait_for

from vaultmem.server.token import read_token

pytestmark = pytest.mark.model
VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))


@contextmanager
def serve_process(
    vault: Path, config_home: Path, vaultmem: str = VAULTMEM
) -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    """``vaultmem serve --vault V --init`` as the Makefile runs it, on a free port (``vaultmem``: the
    script to run, this environment's by default)."""
    env = stdio_env(XDG_CONFIG_HOME=str(config_home))
    with served([vaultmem, "serve", "--vault", str(vault), "--init", "--port", "0"], env) as (
        process,
        url,
        token,
        _,
    ):
        yield process, url, token


@contextmanager
def served(
    argv: list[str], env: dict[str, str], *, stop: signal.Signals | None = None
) -> Iterator[tuple[subprocess.Popen[str], str, str, Lines]]:
    """A daemon started with ``argv``, once its banner names its URL and token file; at the end it
    is sent ``stop`` (and waited for) if given, then killed if still running."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert process.stdout is not None
    output = Lines(process.stdout)
    try:
        url = output.until(r"MCP URL:\s+(\S+)").group(1)
        # Not printed to a pipe (item 10 of issue 13): read from the file the banner names.
        token = read_token(Path(output.until(r"token file:\s+(.+?)\s*$").group(1)))
        assert token is not None
        output.until(r"Stop with Ctrl-C")
        yield process, url, token, output
    finally:
        if stop is not None and process.poll() is None:
            process.send_signal(stop)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=60)
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
        output.thread.join(timeout=30)  # the pipe is at EOF once the process is gone
        process.stdout.close()


def test_the_daemon_started_like_the_readme_serves_writes_and_hand_edits_and_stops_cleanly(
    tmp_path: Path,
) -> None:
    """Issue: "starts the daemon as a subprocess the way the README does, writes through MCP, edits
    a file by hand, and finds both through memory_search"; SIGINT stops it with nothing lost."""
    vault = tmp_path / "fresh-vault"  # does not exist yet: --init creates it from the template
    found: dict[str, Any] = {}

    with serve_process(vault, tmp_path / "config") as (process, url, token):
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/mcp", url)
        token_files = list((tmp_path / "config" / "vaultmem" / "tokens").glob("*.token"))
        assert [p.read_text(encoding="utf-8").strip() for p in token_files] == [token]

        async def write() -> None:
            async with mcp_client(url, token) as client:
                found["note"] = structured(
                    await client.call_tool(
                        "memory_append",
                        {"content": "The staging database lives on port 6543.", "kind": "reference"},
                    )
                )

        anyio.run(write)
        hand = vault / "memory" / "semantic" / "espresso-ratio.md"
        hand.write_text(
            "---\ntitle: Espresso ratio\nkind: preference\n---\nOne to two, eighteen grams in.\n",
            encoding="utf-8",
        )

        def search(query: str) -> list[dict[str, Any]]:
            async def run() -> list[dict[str, Any]]:
                async with mcp_client(url, token) as client:
                    result = structured(await client.call_tool("memory_search", {"query": query}))
                    return list(result["results"])

            return anyio.run(run)

        hits = search("staging database port")
        assert hits[0]["id"] == found["note"]["id"]
        hand_hits = wait_for(
            lambda: [h for h in search("espresso ratio grams") if h["slug"] == "espresso-ratio"]
        )
        assert hand_hits[0]["kind"] == "preference"

        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0

    log = git(vault, "log", "--format=%B", "--name-only")
    assert found["note"]["id"] in log
    assert "memory/semantic/espresso-ratio.md" in log  # the watcher committed the hand edit
    assert git(vault, "status", "--porcelain", "--untracked-files=all").strip() == ""


def test_sigterm_stops_the_daemon_cleanly(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    with serve_process(vault, tmp_path / "config") as (process, url, token):

        async def write() -> None:
            async with mcp_client(url, token) as client:
                await client.call_tool("memory_capture", {"content": "caught before SIGTERM"})

        anyio.run(write)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    assert "caught before SIGTERM" not in git(vault, "status", "--porcelain")
    assert git(vault, "status", "--porcelain", "--untracked-files=all").strip() == ""
    assert "memory_capture: add" in git(vault, "log", "--format=%s")


def test_the_stdio_server_serves_the_same_tools_and_commits_on_exit(tmp_path: Path) -> None:
    """Issue: `vaultmem mcp`: the same tools over stdio, for hosts that spawn a process."""
    vault = tmp_path / "vault"
    subprocess.run([VAULTMEM, "init", str(vault)], check=True, env=stdio_env(XDG_CONFIG_HOME=str(tmp_path)))
    params = StdioServerParameters(command=VAULTMEM, args=["mcp", "--vault", str(vault)], env=stdio_env())
    out: dict[str, Any] = {}

    async def main() -> None:
        with anyio.fail_after(120):
            async with Client(params, cache=None) as client:
                out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
                out["note"] = structured(
                    await client.call_tool(
                        "memory_append", {"content": "Deploys happen on Tuesdays.", "kind": "convention"}
                    )
                )
                out["capture"] = structured(await client.call_tool("memory_capture", {"content": "an aside"}))
                query = {"query": "when do deploys happen"}
                out["search"] = structured(await client.call_tool("memory_search", query))

    anyio.run(main)
    assert {"memory_append", "memory_capture", "memory_forget", "memory_search"} <= set(out["tools"])
    assert out["capture"]["success"] is True
    assert out["search"]["results"][0]["id"] == out["note"]["id"]
    assert out["note"]["id"] in git(vault, "log", "--format=%B")
    assert git(vault, "status", "--porcelain", "--untracked-files=all").strip() == ""
