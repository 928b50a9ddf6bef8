"""Scenario 5: what sync clients and Obsidian leave in a vault.

A Dropbox conflicted copy, a Drive-style ``name (1).md``, ``Note.md`` beside ``note.md``, churn of
``.obsidian/workspace.json`` and a ``.trash/`` folder. Pass: conflict copies are indexed as flagged
copies (tag ``conflict-copy``, their own row: the original keeps its id and row) and reported by
``doctor``, never merged, changed or deleted; ignored paths produce no index rows and no commits;
leftover swap and backup files are never committed, even when the vault's .gitignore misses them.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _support import file_hashes, git
from layers import parts

from vaultmem.config import Settings
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.memory import Memory
from vaultmem.operations.doctor import diagnose

OpenRuntime = Callable[[], Memory]


@pytest.fixture
def open_runtime(vault: Path) -> Iterator[OpenRuntime]:
    opened: list[Memory] = []

    def _open() -> Memory:
        settings = Settings.resolve(vault, durable=False, commit_quiet_period=0.2)
        runtime = Memory(settings, embedder=FakeEmbedder())
        runtime.reconcile()
        opened.append(runtime)
        return runtime

    yield _open
    for runtime in opened:
        runtime.close()


def wait(predicate: Callable[[], object], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def test_conflict_copies_are_indexed_flagged_and_reported_never_merged(
    vault: Path, open_runtime: OpenRuntime
) -> None:
    runtime = open_runtime()
    original = runtime.append("The VPN gateway is vpn2.", "reference", title="Vpn gateway")
    path = vault / runtime.note(original["id"]).path
    runtime.flush()
    runtime.start_watching()
    dropbox = path.with_name("vpn-gateway (Ann's conflicted copy 2026-01-01).md")
    drive = path.with_name("vpn-gateway (1).md")
    dropbox.write_text(path.read_text(encoding="utf-8").replace("vpn2", "vpn3"), encoding="utf-8")
    shutil.copy(path, drive)
    lower, upper = path.with_name("deploy-day.md"), path.with_name("Deploy-day.md")
    lower.write_text("---\ntitle: deploy day\n---\nTuesdays.\n", encoding="utf-8")
    upper.write_text("---\ntitle: Deploy day\n---\nThursdays.\n", encoding="utf-8")
    workspace = vault / ".obsidian" / "workspace.json"
    workspace.parent.mkdir(exist_ok=True)
    for n in range(30):
        workspace.write_text(f'{{"active": {n}}}', encoding="utf-8")
    trash = vault / ".trash" / "old-note.md"
    trash.parent.mkdir(exist_ok=True)
    trash.write_text("---\ntitle: old\n---\nthrown away\n", encoding="utf-8")
    written = {p: p.read_bytes() for p in (path, dropbox, drive, lower, upper)}

    # Polling reads every note every 50 ms: reads must not postpone the indexing of a change.
    wait(lambda: parts(runtime).index.path_hashes() == file_hashes(vault))
    rows = {r.path: r for r in parts(runtime).index.iter_records()}
    rel = path.relative_to(vault).as_posix()
    assert rows[rel].id == original["id"]  # the original keeps its id and its row
    for copy in (dropbox, drive):
        row = rows[copy.relative_to(vault).as_posix()]
        assert "conflict-copy" in row.tags and row.id != original["id"]
    assert "conflict-copy" not in rows[rel].tags
    assert runtime.note(original["id"]).path == rel
    # A write for the same content reinforces the original, never the copy.
    again = runtime.append("The VPN gateway is vpn2.", "reference")
    assert again == {"id": original["id"], "slug": "vpn-gateway", "deduplicated": True}
    runtime.forget(original["id"])
    wait(lambda: not any(".obsidian" in p or ".trash" in p for p in parts(runtime).index.path_hashes()))
    wait(lambda: git(vault, "status", "--porcelain", "--untracked-files=all").strip() == "")

    report = diagnose(
        parts(runtime).layout, parts(runtime).catalog, parts(runtime).index, parts(runtime).repo
    )
    assert report.conflict_copies == sorted(p.relative_to(vault).as_posix() for p in (dropbox, drive))
    for p, data in written.items():
        if p != path:
            assert p.read_bytes() == data  # never merged, rewritten or deleted
    committed = git(vault, "log", "--name-only", "--format=")
    assert ".obsidian/workspace.json" not in committed and ".trash/" not in committed
    assert not any(".trash" in p or ".obsidian" in p for p in parts(runtime).index.path_hashes())


def test_a_restart_with_conflict_copies_present_starts_and_indexes_them_apart(vault: Path) -> None:
    settings = Settings.resolve(vault, durable=False)
    with Memory(settings, index=False, background_commits=False) as service:
        note = service.append("Coffee beans come from Square Mile.", "preference", title="Coffee beans")
        path = vault / service.note(note["id"]).path
    # A copy whose name sorts before the original's: it must not take the original's id.
    shutil.copy(path, path.with_name("coffee-beans (1).md"))
    shutil.copy(path, path.with_name("coffee-beans.sync-conflict-20260101-101010-ABCDEFG.md"))
    with Memory(settings, embedder=FakeEmbedder(), background_commits=False) as runtime:
        runtime.reconcile()
        assert parts(runtime).index.path_hashes() == file_hashes(vault)
        assert runtime.note(note["id"]).path == path.relative_to(vault).as_posix()
        assert parts(runtime).index.get(note["id"]).path == path.relative_to(vault).as_posix()  # type: ignore[union-attr]
        assert runtime.forget(note["id"])["already_deleted"] is False
    assert "coffee-beans (1).md" in git(vault, "ls-files")  # the restart committed it as a hand edit
    assert (path.with_name("coffee-beans (1).md")).read_bytes() != path.read_bytes()


def test_swap_and_backup_leftovers_are_never_committed_even_without_a_gitignore(vault: Path) -> None:
    (vault / ".gitignore").write_text(".vaultmem/\n", encoding="utf-8")  # a person's own, minimal
    git(vault, "add", ".gitignore")
    git(vault, "-c", "user.name=p", "-c", "user.email=p@p", "commit", "-q", "-m", "minimal ignore")
    folder = vault / "memory" / "semantic"
    leftovers = ["note.md~", ".note.md.swp", "4913", "note.md.bak", "note.md.orig", "draft.tmp",
                 "note.md___jb_old___", "note.md___jb_tmp___", ".note.md.a1B2c3"]  # fmt: skip
    # (the last three: a JetBrains safe write and an rsync run that crashed midway)
    for name in leftovers:
        (folder / name).write_text("leftover", encoding="utf-8")
    (vault / ".trash").mkdir()
    (vault / ".trash" / "gone.md").write_text("---\ntitle: gone\n---\nx\n", encoding="utf-8")
    (folder / "real.md").write_text("---\ntitle: real\n---\nA real hand note.\n", encoding="utf-8")
    settings = Settings.resolve(vault, durable=False)
    with Memory(settings, index=False, background_commits=False):
        pass
    tracked = git(vault, "ls-files")
    assert "memory/semantic/real.md" in tracked
    assert not any(name in tracked for name in leftovers) and ".trash" not in tracked
