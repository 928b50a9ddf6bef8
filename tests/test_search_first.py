"""A restarted server answers ``memory_search`` while it scans the vault (issue 16, item 4: the
start at 100k notes; docs/architecture.md, "Searching while the vault is scanned").

A restart whose index opens from the snapshot its clean stop saved, on a vault of at least
``search_first_notes`` notes, answers searches from the index at once: a hit is shown only if its
file is byte for byte what the index holds, otherwise the search waits for the scan and the
reconcile; every other tool waits for them. Through ``vaultmem serve`` as a subprocess and a real
MCP client, with the vault's write lock held from outside so that the scan cannot end meanwhile."""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_harness import Lines, mcp_client, stdio_env, structured
from test_other_clients import stdio_server
from test_server_process import served

from vaultmem.config import Settings
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.memory import Memory, SearchRequest
from vaultmem.vault.writer import WRITE_LOCK

VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))
NOTES = {
    "kettle": "Descale the kettle with citric acid every month.",
    "deploy": "The deploy needs --force when the cache is cold.",
    "garden": "Water the tomatoes before eight in the morning.",
}


@contextmanager
def serving(vault: Path, config: Path) -> Iterator[tuple[subprocess.Popen[str], str, str, Lines]]:
    """``vaultmem serve`` on a free port (the test-only fake model: a start in a fraction of a
    second), stopped with SIGINT: a clean stop, which saves the snapshot a restart opens from."""
    env = stdio_env(XDG_CONFIG_HOME=str(config), VAULTMEM_EMBEDDER="fake")
    with served([VAULTMEM, "serve", "--vault", str(vault), "--port", "0"], env, stop=signal.SIGINT) as daemon:
        yield daemon


def call(url: str, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        async with mcp_client(url, token) as client:
            return structured(await client.call_tool(tool, arguments))

    return anyio.run(run)


@contextmanager
def write_lock_held(vault: Path) -> Iterator[Callable[[], None]]:
    """The vault's cross-process write lock, held by this test until it calls what this yields: a
    start's scan takes it, so the scan cannot end before."""
    fd = os.open(vault / ".git" / WRITE_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    held = [True]

    def release() -> None:
        if held[0]:
            fcntl.flock(fd, fcntl.LOCK_UN)
            held[0] = False

    try:
        yield release
    finally:
        release()
        os.close(fd)


@pytest.fixture
def served_once(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A vault with ``search_first_notes: 0``, three notes written through MCP, cleanly stopped
    (so its index saved the snapshot a restart opens from); the notes' paths by name."""
    vault, config = tmp_path / "vault", tmp_path / "config"
    done = subprocess.run(
        [VAULTMEM, "init", str(vault)], capture_output=True, text=True, env=stdio_env(), timeout=120
    )
    assert done.returncode == 0, done.stderr
    (vault / "vaultmem.yaml").write_text("search_first_notes: 0\nwrite_lock_timeout: 120\n", encoding="utf-8")
    paths = {}
    with serving(vault, config) as (_, url, token, _):
        for name, text in NOTES.items():
            written = call(url, token, "memory_append", {"content": text, "kind": "fix"})
            paths[name] = next(vault.rglob(f"{written['slug']}.md")).relative_to(vault).as_posix()
    return vault, config, paths


def test_a_restart_answers_searches_while_the_scan_waits_and_every_other_tool_waits_for_it(
    served_once: tuple[Path, Path, dict[str, str]],
) -> None:
    vault, config, paths = served_once
    edited = vault / paths["deploy"]
    edited.write_text(
        edited.read_text(encoding="utf-8").replace("--force", "--force-rebuild"), encoding="utf-8"
    )  # a hand edit while vaultmem was stopped
    (vault / paths["garden"]).unlink()  # and a deletion

    with write_lock_held(vault) as release, serving(vault, config) as (process, url, token, _):
        started = time.monotonic()
        # limit 1: the fake model's vectors rank every note, and a shown hit whose file changed waits
        kettle = call(url, token, "memory_search", {"query": "descale kettle citric acid", "limit": 1})
        assert kettle["results"] and "citric acid" in kettle["results"][0]["snippet"]
        assert time.monotonic() - started < 20  # answered while the scan still waits for the lock

        answers: dict[str, Any] = {}

        def later(name: str, tool: str, arguments: dict[str, Any]) -> None:
            answers[name] = call(url, token, tool, arguments)

        waiting = [
            threading.Thread(target=later, args=("deploy", "memory_search", {"query": "deploy cache force"})),
            threading.Thread(target=later, args=("tomatoes", "memory_search", {"query": "water tomatoes"})),
            threading.Thread(
                target=later, args=("append", "memory_append", {"content": "Oil the hinge.", "kind": "fix"})
            ),
        ]
        for thread in waiting:
            thread.start()
        time.sleep(1.5)
        # The deploy note's file is not what the index holds, the garden note's is gone, and a
        # write needs the scan: none of them is answered before it.
        assert answers == {}, answers
        assert process.poll() is None
        release()
        for thread in waiting:
            thread.join(timeout=60)
    assert "--force-rebuild" in answers["deploy"]["results"][0]["snippet"]
    assert all("tomatoes" not in hit["snippet"] for hit in answers["tomatoes"]["results"])
    assert answers["append"]["slug"]


def test_a_hit_whose_file_changed_waits_for_the_start_and_a_small_vault_starts_as_before(
    vault: Path,
) -> None:
    """In process, the facade: ``search_first`` leaves the scan to :meth:`Memory.start` only for an
    index from its snapshot on a vault of ``search_first_notes`` notes or more."""
    settings = Settings.resolve(vault, durable=False, search_first_notes=0)
    with Memory(settings, embedder=FakeEmbedder(), search_first=True) as memory:
        memory.start()
        memory.append("Descale the kettle with citric acid every month.", "fix")
    # No snapshot yet at the first open (a new index): it scanned first.
    with Memory(settings, embedder=FakeEmbedder(), search_first=True) as memory:
        assert not memory.scanned  # the clean close above saved the snapshot
        found = memory.search(SearchRequest("kettle citric"))
        assert found["results"]
        note = next(p for p in vault.rglob("*.md") if "citric acid" in p.read_text(encoding="utf-8"))
        note.write_text(note.read_text(encoding="utf-8").replace("month", "week"), encoding="utf-8")
        starting = threading.Timer(0.5, memory.start)
        starting.start()
        began = time.monotonic()
        again = memory.search(SearchRequest("kettle citric"))
        assert time.monotonic() - began >= 0.4  # waited for the start
        assert "every week" in again["results"][0]["snippet"]
        starting.join()
    big = Settings.resolve(vault, durable=False)  # search_first_notes: 5,000 by default
    with Memory(big, embedder=FakeEmbedder(), search_first=True) as memory:
        assert memory.scanned
        memory.start()
    for snapshot in settings.state_dir.rglob("mirror.snapshot"):
        snapshot.unlink()  # as after a crash: the table is read, and may hold more than the vault
    with Memory(settings, embedder=FakeEmbedder(), search_first=True) as memory:
        assert memory.scanned
        memory.start()


def test_a_hit_whose_file_became_a_link_out_of_the_vault_is_not_answered_before_the_start(
    served_once: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    """The same bytes, but through a symlink out of the vault, which the scan never follows: the
    start drops the note, so an early answer must not show it (it did: file_hash followed the link)."""
    vault, config, paths = served_once
    note, outside = vault / paths["kettle"], tmp_path / "elsewhere.md"
    outside.write_bytes(note.read_bytes())
    note.unlink()
    note.symlink_to(outside)
    answers: dict[str, Any] = {}
    query = {"query": "descale kettle citric acid", "limit": 1}
    with write_lock_held(vault) as release, serving(vault, config) as (_, url, token, _):
        searching = threading.Thread(target=lambda: answers.update(call(url, token, "memory_search", query)))
        searching.start()
        searching.join(timeout=3)
        assert answers == {}, answers  # it waits for the start
        release()
        searching.join(timeout=60)
    assert answers["results"] and all("citric" not in hit["snippet"] for hit in answers["results"])


def test_a_stop_while_the_start_waits_for_another_process_s_lock_is_prompt_and_clean(
    served_once: tuple[Path, Path, dict[str, str]],
) -> None:
    """SIGTERM while the start waits for the write lock (write_lock_timeout: 120): the server stops
    at once with status 0, not after the timeout with the lock's error; the next start is sound."""
    vault, config, _ = served_once
    with write_lock_held(vault), serving(vault, config) as (process, url, token, output):
        assert call(url, token, "memory_search", {"query": "descale kettle", "limit": 1})["results"]
        began = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, output.drain()
        assert time.monotonic() - began < 15
        assert "held" not in output.drain()
    with serving(vault, config) as (_, url, token, _):
        found = call(url, token, "memory_search", {"query": "descale kettle citric acid", "limit": 1})
        assert "citric acid" in found["results"][0]["snippet"]
        assert call(url, token, "memory_append", {"content": "Oil the hinge.", "kind": "fix"})["slug"]


def test_a_call_waiting_when_the_start_fails_is_refused_and_writes_nothing(
    served_once: tuple[Path, Path, dict[str, str]],
) -> None:
    """The start fails behind the server (the lock held past write_lock_timeout): a write that
    waited for it is refused, never run on a vault that was never scanned (it was let through, and
    wrote once the lock came free); ``vaultmem serve`` exits with the lock's error."""
    vault, config, _ = served_once
    (vault / "vaultmem.yaml").write_text("search_first_notes: 0\nwrite_lock_timeout: 3\n", encoding="utf-8")
    answers: dict[str, Any] = {}

    def append() -> None:
        try:
            answers.update(call(url, token, "memory_append", {"content": "Oil the hinge.", "kind": "fix"}))
        except Exception as exc:  # the server stopping under the client's goodbye
            answers["raised"] = repr(exc)

    with write_lock_held(vault) as release, serving(vault, config) as (process, url, token, output):
        listening = time.monotonic()
        writing = threading.Thread(target=append)
        writing.start()
        time.sleep(max(0.0, listening + 4.5 - time.monotonic()))  # the start failed at 3 s
        release()  # free for the write, which waited behind the start's gate
        writing.join(timeout=60)
        assert process.wait(timeout=60) == 1
        assert "error: another vaultmem process has held" in output.drain()
    assert "slug" not in answers, answers
    assert not [p for p in vault.rglob("*.md") if "hinge" in p.read_text(encoding="utf-8")]


def test_the_stdio_server_answers_a_search_while_its_start_waits_and_holds_a_write_back(
    served_once: tuple[Path, Path, dict[str, str]],
) -> None:
    """``vaultmem mcp`` (a host's own process) opens the same way: a search whose hit is as on disk
    is answered while another process holds the vault's write lock, a write waits for the start."""
    vault, config, _ = served_once
    env = stdio_env(XDG_CONFIG_HOME=str(config), VAULTMEM_EMBEDDER="fake")
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    search = {"name": "memory_search", "arguments": {"query": "descale kettle citric acid", "limit": 1}}
    append = {"name": "memory_append", "arguments": {"content": "Oil the hinge.", "kind": "fix"}}
    messages = (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": search},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": append},
    )
    argv = [VAULTMEM, "mcp", "--vault", str(vault)]
    with (
        write_lock_held(vault) as release,
        stdio_server(vault, *map(json.dumps, messages), argv=argv, env=env) as (_, replies),
    ):
        found = json.loads(replies.until(r'"id":\s*2\b', timeout=30).string)["result"]
        assert not found["isError"] and "citric acid" in found["structuredContent"]["results"][0]["snippet"]
        time.sleep(1.0)
        assert not re.search(r'"id":\s*3\b', replies.drain())  # the write waits for the start
        release()
        written = json.loads(replies.until(r'"id":\s*3\b', timeout=30).string)["result"]
        assert not written["isError"], written
    assert any("Oil the hinge." in p.read_text(encoding="utf-8") for p in vault.rglob("*.md"))
