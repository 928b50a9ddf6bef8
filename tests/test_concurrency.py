"""Concurrent writers: one note per idempotency key, no lost write, every acknowledged write in git."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conftest import OpenService, git, git_status, note_files

from vaultmem.filing.rules import idempotency_tag
from vaultmem.notes.model import note_from_text

THREADS, PER_THREAD, KEYS = 8, 50, 120


def test_8_threads_x_50_appends_with_overlapping_keys(open_service: OpenService, vault: Path) -> None:
    """issue: "8 threads x 50 appends with overlapping idempotency keys give one note per key, no lost
    write, and commits that cover every acknowledged write"."""
    service = open_service(background_commits=True)
    barrier = threading.Barrier(THREADS)

    def worker(t: int) -> list[tuple[str, dict]]:
        barrier.wait()
        out = []
        for i in range(PER_THREAD):
            key = f"key-{(t * 17 + i * 7) % KEYS}"
            # The content differs per thread: the key alone must decide (no fingerprint help).
            result = service.append(f"thread {t} write {i} for {key}", "fix", idempotency_key=key)
            out.append((key, result))
        return out

    with ThreadPoolExecutor(THREADS) as pool:
        acknowledged = [r for rs in pool.map(worker, range(THREADS)) for r in rs]
    assert len(acknowledged) == THREADS * PER_THREAD

    ids_per_key: dict[str, set[str]] = defaultdict(set)
    fresh_per_key: dict[str, int] = defaultdict(int)
    for key, result in acknowledged:
        assert set(result) == {"id", "slug", "deduplicated"}
        ids_per_key[key].add(result["id"])
        fresh_per_key[key] += not result["deduplicated"]
    assert all(len(ids) == 1 for ids in ids_per_key.values())  # one note per key
    assert all(n == 1 for n in fresh_per_key.values())  # written once, deduplicated after

    files = note_files(vault)
    assert len(files) == len(ids_per_key)  # no lost write, no extra write
    by_tag: dict[str, str] = {}
    for path in files:
        note = note_from_text(path.read_text("utf-8"), path.relative_to(vault).as_posix())
        (tag,) = [t for t in note.tags if t.startswith("idem-")]
        assert tag not in by_tag
        by_tag[tag] = note.id or ""
    for key, ids in ids_per_key.items():
        assert by_tag[idempotency_tag(key)] == next(iter(ids))

    service.close()
    assert git_status(vault) == ""
    committed = set(git(vault, "log", "--name-only", "--format=").split())
    assert {p.relative_to(vault).as_posix() for p in files} <= committed
    messages = git(vault, "log", "--format=%B")
    for ids in ids_per_key.values():
        assert f"id: {next(iter(ids))}\n" in messages


def test_concurrent_identical_content_gives_one_note(open_service: OpenService, vault: Path) -> None:
    service = open_service(background_commits=True)
    barrier = threading.Barrier(THREADS)

    def worker(_: int) -> dict:
        barrier.wait()
        return service.append("the very same memory", "reference")

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(worker, range(THREADS)))
    assert len({r["id"] for r in results}) == 1
    assert sum(not r["deduplicated"] for r in results) == 1
    service.close()
    (path,) = note_files(vault)
    note = note_from_text(path.read_text("utf-8"), "x.md")
    assert note.occurrences == THREADS  # every reinforce counted, none lost
    assert git_status(vault) == ""


def test_concurrent_same_title_gets_distinct_files(open_service: OpenService, vault: Path) -> None:
    service = open_service(background_commits=True)
    barrier = threading.Barrier(THREADS)

    def worker(t: int) -> dict:
        barrier.wait()
        return service.capture(f"different text number {t} word{t}", title="Same title")

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(worker, range(THREADS)))
    assert all(r["success"] for r in results)
    assert len({r["slug"] for r in results}) == THREADS
    service.close()
    assert len(note_files(vault)) == THREADS
    assert git_status(vault) == ""


WRITER = """
import sys
from vaultmem.config import Settings
from vaultmem.memory import Memory
service = Memory(Settings.resolve(sys.argv[1], durable=False), index=False, background_commits=True)
for i in range(int(sys.argv[3])):
    service.append(f"process {sys.argv[2]} write {i}", "fix", idempotency_key=f"shared-{i}")
service.close()
"""


def test_two_processes_on_one_vault_never_lose_a_write(vault: Path) -> None:
    """design.md: "two processes on one vault must never lose a write"."""
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(vault), name, "30"], stderr=subprocess.PIPE)
        for name in ("a", "b")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    files = note_files(vault)
    assert len(files) == 30  # one note per shared key across both processes
    assert git_status(vault) == ""
