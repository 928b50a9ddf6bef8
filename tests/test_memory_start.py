"""A start that fails part way leaves nothing running: the writer (the catalog scan, the write
lock, the commit thread) and the index are opened one after the other, and whichever fails, what
was opened before it is closed."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from vaultmem.config import Settings
from vaultmem.errors import IndexError_, VaultBusy
from vaultmem.index import opening
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.memory import Memory, SearchRequest

HOLD_THE_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()  # until the test closes our stdin
"""


@contextmanager
def _lock_held(lock: Path) -> Iterator[None]:
    """The vault's write lock held by another process (as a long reindex holds it) meanwhile."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_LOCK, str(lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.communicate(timeout=30)  # closes its stdin (it lets go) and our end of its stdout


def _threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.is_alive()}


def _settled(before: set[str], timeout: float = 10.0) -> set[str]:
    """The threads started since ``before`` that are still alive after up to ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while (extra := _threads() - before) and time.monotonic() < deadline:
        time.sleep(0.05)
    return extra


def test_a_start_that_cannot_take_the_write_lock_fails_cleanly_and_the_next_finds_all(vault: Path) -> None:
    """Another vaultmem process holds the vault's write lock (a long reindex, say): the start
    fails with the lock's message and leaves no thread running, and
    the next start, once the lock is free, opens the index and finds every note."""
    with Memory(Settings.resolve(vault, durable=False), embedder=FakeEmbedder()) as memory:
        memory.reconcile()
        note_id = memory.append("The staging database listens on port 6543.", "reference")["id"]
    settings = Settings.resolve(vault, durable=False, write_lock_timeout=0.5)
    with _lock_held(vault / ".git" / "vaultmem-write.lock"):
        before = _threads()
        with pytest.raises(VaultBusy, match="another vaultmem process"):
            Memory(settings, embedder=FakeEmbedder())
        assert not _settled(before), "a failed start left threads running"
    with Memory(settings, embedder=FakeEmbedder()) as memory:
        memory.reconcile()
        hits = memory.search(SearchRequest("which port does the staging database listen on"))["results"]
        assert [h["id"] for h in hits][:1] == [note_id]


def test_a_start_whose_index_fails_to_open_releases_the_vault(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index cannot be opened (what ``open_index`` raises is what the start raises): the
    writer the start made is closed, its commit thread stopped and the write lock released."""

    def fails(*_args: object) -> None:
        raise IndexError_("the search index failed to open: a disk error")

    monkeypatch.setattr(opening, "open_index", fails)
    before = _threads()
    settings = Settings.resolve(vault, durable=False, write_lock_timeout=0.5)
    with pytest.raises(IndexError_, match="a disk error"):
        Memory(settings, embedder=FakeEmbedder())
    assert not _settled(before), "a failed start left threads running"
    with Memory(settings, index=False) as memory:  # the lock is free: no VaultBusy
        memory.append("The vault is writable again.", "reference")


def test_a_cli_command_that_cannot_take_the_write_lock_says_so_and_exits(vault: Path) -> None:
    """Through the CLI: ``vaultmem search`` while another process holds the write lock exits
    with the lock's message within its timeout (no thread keeps it alive), and succeeds after."""
    (vault / "vaultmem.yaml").write_text("write_lock_timeout: 0.5\n", encoding="utf-8")
    cli = [str(Path(sys.executable).with_name("vaultmem")), "--vault", str(vault)]
    env = {**os.environ, "VAULTMEM_EMBEDDER": "fake"}
    assert subprocess.run([*cli, "reindex"], env=env, capture_output=True, timeout=120).returncode == 0
    with _lock_held(vault / ".git" / "vaultmem-write.lock"):
        busy = subprocess.run(
            [*cli, "search", "anything"], env=env, capture_output=True, text=True, timeout=60
        )
    assert busy.returncode != 0 and "another vaultmem process" in busy.stderr, busy
    assert "Traceback" not in busy.stderr
    free = subprocess.run([*cli, "search", "anything"], env=env, capture_output=True, text=True, timeout=60)
    assert free.returncode == 0, free.stderr
