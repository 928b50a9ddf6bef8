"""Regression tests for the defects the reliability suite found, one sentence each."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from conftest import OpenService, git, hand_write
from layers import parts

from vaultmem.sync.watcher import VaultWatcher
from vaultmem.vault.history import GitRepo


def test_a_symlink_out_of_the_vault_is_reported_and_the_vault_still_opens(
    vault: Path, tmp_path: Path, open_service: OpenService
) -> None:
    secret = tmp_path / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("---\ntitle: secret\n---\nnot the vault's\n", encoding="utf-8")
    os.symlink(secret, vault / "memory" / "semantic" / "link.md")
    service = open_service()  # used to raise InvalidInput from the catalog scan: no daemon start
    assert "outside the vault" in parts(service).catalog.problems["memory/semantic/link.md"]
    assert parts(service).catalog.by_path("memory/semantic/link.md") is None
    assert service.append("still writes", "reference")["deduplicated"] is False


def test_a_commit_of_paths_already_committed_is_a_no_op_even_with_untracked_files(vault: Path) -> None:
    repo = GitRepo(vault)
    hand_write(vault, "memory/semantic/a.md", "---\ntitle: a\n---\na\n", commit=True)
    hand_write(vault, "memory/semantic/untracked.md", "---\ntitle: u\n---\nu\n")
    assert repo.commit_paths(["memory/semantic/a.md"], "again") is False  # used to raise GitError
    assert "untracked.md" not in git(vault, "ls-files")


def _watcher(root: Path, synced: list[str]) -> VaultWatcher:
    return VaultWatcher(
        root,
        root / ".vaultmem",
        sync_path=lambda rel: synced.append(rel) or "indexed",  # type: ignore[func-returns-value]
        rescan=list,
        commit=lambda paths: None,
        debounce=0.15,
    )


def test_reads_do_not_postpone_indexing_and_steady_saves_are_indexed_within_max_delay(vault: Path) -> None:
    synced: list[str] = []
    watcher = _watcher(vault, synced)
    watcher.start()
    try:
        note = hand_write(vault, "memory/semantic/read-often.md", "---\ntitle: r\n---\nread me\n")
        saved = hand_write(vault, "memory/semantic/saved-often.md", "---\ntitle: s\n---\nv0\n")
        stop = threading.Event()

        def busy() -> None:  # a poller reading one note and an editor saving the other, every 20 ms
            n = 0
            while not stop.is_set():
                note.read_bytes()
                n += 1
                saved.write_text(f"---\ntitle: s\n---\nv{n}\n", encoding="utf-8")
                time.sleep(0.02)

        thread = threading.Thread(target=busy, daemon=True)
        thread.start()
        deadline = time.monotonic() + 5
        while {"memory/semantic/read-often.md", "memory/semantic/saved-often.md"} - set(synced):
            assert time.monotonic() < deadline, synced
            time.sleep(0.02)
        stop.set()
        thread.join(timeout=5)
    finally:
        watcher.stop()


def test_git_and_the_state_directory_are_not_watched(vault: Path) -> None:
    (vault / ".vaultmem").mkdir(exist_ok=True)
    watcher = _watcher(vault, [])
    watcher.start()
    try:
        names = {p.name for p in watcher._watched}
        assert ".git" not in names and ".vaultmem" not in names and "memory" in names
        synced: list[str] = []
        watcher._sync_path = lambda rel: synced.append(rel) or "indexed"  # type: ignore[func-returns-value]
        (vault / "later").mkdir()  # a new top-level folder gets a watch of its own
        deadline = time.monotonic() + 5
        while vault / "later" not in watcher._watched:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        hand_write(vault, "later/new.md", "---\ntitle: n\n---\nnew\n")
        while "later/new.md" not in synced:
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        watcher.stop()


def test_a_note_over_the_size_cap_is_reported_without_being_read(
    vault: Path, open_service: OpenService
) -> None:
    from vaultmem.vault.note_files import MAX_NOTE_BYTES

    hand_write(vault, "memory/semantic/pasted-log.md", b"---\ntitle: log\n---\n" + b"x" * MAX_NOTE_BYTES)
    service = open_service()
    assert "MiB" in parts(service).catalog.problems["memory/semantic/pasted-log.md"]


def test_parsing_a_huge_note_does_not_split_its_whole_body_into_lines() -> None:
    from vaultmem.notes.frontmatter import MalformedNote, parse

    body = "word " * 2_000_000
    started = time.thread_time()  # this thread's CPU time: a loaded machine cannot fail it
    assert parse("---\ntitle: big\n---\n" + body).meta == {"title": "big"}
    try:
        parse("---\nk: " + "v" * 10_000_000 + "\n---\nb\n")
        raise AssertionError("a 10 MB frontmatter block was accepted")
    except MalformedNote:
        pass
    assert time.thread_time() - started < 1.0  # was about 0.7 s of CPU for the two


def test_a_query_longer_than_the_cap_is_refused() -> None:
    import pytest

    from vaultmem.errors import InvalidInput
    from vaultmem.operations.search import MAX_QUERY_CHARS, SearchRequest

    with pytest.raises(InvalidInput, match="the most is"):
        SearchRequest(query="q " * MAX_QUERY_CHARS).validated()
    assert SearchRequest(query="q" * MAX_QUERY_CHARS).validated()
