"""Scenario 4: missed events.

1,000 files created, modified, renamed and deleted while vaultmem is stopped; an inotify queue
overflow forced while it runs (a real one: the kernel's queue limit lowered while the watcher opens
its inotify instance, then a burst of changes); editor save patterns. Pass: afterwards the index's
(path, hash) set equals the vault's exactly; each save pattern is indexed once; swap and backup
files are never indexed or committed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _support import file_hashes, git
from layers import parts

from vaultmem.config import Settings
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.memory import Memory

QUEUE_LIMIT = Path("/proc/sys/fs/inotify/max_queued_events")
#: The longest a path that keeps changing waits before the watcher hands it on (``VaultWatcher.max_delay``).
MAX_DELAY_S = 0.75


def note(title: str, body: str) -> str:
    return f"---\ntitle: {title}\nkind: reference\n---\n{body}\n"


def open_runtime(vault: Path, **overrides: object) -> Memory:
    settings = Settings.resolve(vault, durable=False, commit_quiet_period=0.3, **overrides)
    runtime = Memory(settings, embedder=FakeEmbedder())
    runtime.reconcile()
    return runtime


def wait(predicate: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def test_a_thousand_changes_while_stopped_are_all_caught_at_start(vault: Path) -> None:
    folder = vault / "memory" / "semantic"
    for n in range(300):
        (folder / f"old-{n}.md").write_text(note(f"old {n}", f"original text {n}"), encoding="utf-8")
    with open_runtime(vault) as runtime:
        assert parts(runtime).index.path_hashes() == file_hashes(vault)
    rng = random.Random(4)
    olds = [folder / f"old-{n}.md" for n in range(300)]
    rng.shuffle(olds)
    ops = Counter[str]()
    for n in range(400):  # created
        sub = vault / "memory" / rng.choice(["semantic", "episodic", "procedural"])
        (sub / f"new-{n}.md").write_text(note(f"new {n}", f"fresh text {n}"), encoding="utf-8")
        ops["created"] += 1
    for path in olds[:250]:  # modified
        path.write_text(note(path.stem, f"changed while stopped {path.stem}"), encoding="utf-8")
        ops["modified"] += 1
    for path in olds[250:275]:  # renamed (some of them modified above too)
        path.rename(path.with_name(f"renamed-{path.name}"))
        ops["renamed"] += 1
    for path in olds[275:]:
        path.unlink()
        ops["deleted"] += 1
    for path in sorted(vault.glob("memory/*/new-*.md"))[:150]:
        path.rename(path.with_name(f"moved-{path.name}"))
        ops["renamed"] += 1
    for path in olds[:150]:  # deleted after being modified
        path.unlink()
        ops["deleted"] += 1
    assert sum(ops.values()) == 1000
    with open_runtime(vault) as runtime:
        assert parts(runtime).index.path_hashes() == file_hashes(vault)
    assert git(vault, "status", "--porcelain", "--untracked-files=all").strip() == ""


@contextlib.contextmanager
def small_inotify_queue(limit: int) -> Iterator[None]:
    """Lower the kernel's per-instance queue while an inotify instance is created (root only)."""
    try:
        old = QUEUE_LIMIT.read_text()
        QUEUE_LIMIT.write_text(str(limit))
    except OSError:
        pytest.skip("cannot lower fs.inotify.max_queued_events here")
    try:
        yield
    finally:
        QUEUE_LIMIT.write_text(old)


def test_a_real_event_queue_overflow_is_repaired_by_a_rescan(
    vault: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = vault / "memory" / "episodic"
    with open_runtime(vault) as runtime:
        with small_inotify_queue(16):
            runtime.start_watching()  # its inotify instance gets the 16-event queue
        with caplog.at_level(logging.WARNING, logger="watchdog"):
            for n in range(600):
                (folder / f"burst-{n}.md").write_text(note(f"burst {n}", f"burst {n}"), encoding="utf-8")
            for n in range(0, 600, 3):
                (folder / f"burst-{n}.md").unlink()
            wait(lambda: parts(runtime).index.path_hashes() == file_hashes(vault))
        overflowed = any("overflow" in r.getMessage().lower() for r in caplog.records)
        print(f"overflow scenario: the kernel queue overflowed: {overflowed}")
    assert git(vault, "status", "--porcelain", "--untracked-files=all").strip() == ""


def test_editor_save_patterns_index_once_and_leftovers_never(vault: Path) -> None:
    folder = vault / "memory" / "semantic"
    names = ["atomic", "vim", "overwrite", "burst"]
    for name in names:
        (folder / f"{name}.md").write_text(note(name, "before"), encoding="utf-8")
    with open_runtime(vault) as runtime:
        outcomes: Counter[tuple[str, str]] = Counter()
        sync = runtime._keeper.sync_path  # type: ignore[union-attr]

        def counting(rel: str) -> str:
            outcome = sync(rel)
            outcomes[(rel, outcome)] += 1
            return outcome

        runtime._keeper.sync_path = counting  # type: ignore[method-assign, union-attr]
        runtime.start_watching()
        # Atomic rename (most editors, Obsidian): a hidden temp file renamed over the note.
        tmp = folder / ".atomic.md.tmp.1234"
        tmp.write_text(note("atomic", "after"), encoding="utf-8")
        tmp.replace(folder / "atomic.md")
        # Vim with backupcopy=no: note -> note~, write anew, probe file 4913, swap file, drop backup.
        (folder / ".vim.md.swp").write_bytes(b"swap")
        (folder / "4913").write_bytes(b"")
        (folder / "4913").unlink()
        (folder / "vim.md").rename(folder / "vim.md~")
        (folder / "vim.md").write_text(note("vim", "after"), encoding="utf-8")
        (folder / "vim.md~").unlink()
        # Direct overwrite.
        with open(folder / "overwrite.md", "w", encoding="utf-8") as handle:
            handle.write(note("overwrite", "after"))
        # A burst of 200 saves: indexed once when it takes less than the watcher's longest delay
        # (a path that keeps changing is handed on every 0.75 s, so that it is not starved); a
        # loaded machine can stretch it past that.
        began = time.monotonic()
        for n in range(200):
            (folder / "burst.md").write_text(note("burst", f"after {n}"), encoding="utf-8")
        burst_flushes = 1 + int((time.monotonic() - began) / MAX_DELAY_S)
        (folder / "backup.md.bak").write_text(note("bak", "x"), encoding="utf-8")
        (folder / "notes.md.orig").write_text(note("orig", "x"), encoding="utf-8")
        wait(lambda: parts(runtime).index.path_hashes() == file_hashes(vault))
        wait(lambda: not any(f"semantic/{n}.md" in git(vault, "status", "--porcelain") for n in names))
        time.sleep(0.5)  # a late duplicate event would show up now
        for name in names:
            times = outcomes[(f"memory/semantic/{name}.md", "indexed")]
            assert times == 1 or (name == "burst" and 1 <= times <= burst_flushes), outcomes
        indexed = parts(runtime).index.path_hashes()
    seen = {rel for rel, _ in outcomes}
    leftovers = (".vim.md.swp", "4913", "vim.md~", "backup.md.bak", "notes.md.orig", ".atomic.md.tmp")
    assert not any(any(x in rel for x in leftovers) for rel in seen | set(indexed))
    committed = git(vault, "log", "--name-only", "--format=")
    assert not any(x in committed for x in leftovers)
    os.remove(folder / ".vim.md.swp")
