"""What ``as_of`` reads from git: the vault's main line, however its history arrived.

In-process through the facade, on real files, real git and real LanceDB, with the fake embedder (the
vector leg through the real model is tests/test_as_of.py's). Commits made here by hand carry their
own committer dates, so moments are asked by time as well as by commit.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeClock, git, hand_write
from layers import parts
from mcp_harness import wait_for

from vaultmem.config import Settings
from vaultmem.errors import IndexError_, InvalidInput, NotFound
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.memory import Memory, SearchRequest, SearchSpec, Thought
from vaultmem.sync import versions

DAY = 86_400
T0 = 1_900_000_000  # 2030-03-17: after the vault's own first commit, as every later commit is


def commit_at(root: Path, stamp: int, message: str, *paths: str) -> str:
    """Commit ``paths`` (or everything) by hand with committer date ``stamp``; its id."""
    env = {**os.environ, "GIT_COMMITTER_DATE": f"@{stamp} +0000", "GIT_AUTHOR_DATE": f"@{stamp} +0000"}
    run = {"cwd": root, "env": env, "check": True, "capture_output": True}
    subprocess.run(["git", "add", "-A", "--", *(paths or ["."])], **run)
    subprocess.run(["git", "-c", "user.name=p", "-c", "user.email=p@p", "commit", "-q", "-m", message], **run)
    return git(root, "rev-parse", "HEAD").strip()


def note_text(note_id: str, body: str, **keys: str) -> str:
    extra = "".join(f"{k}: {v}\n" for k, v in keys.items())
    return f"---\nid: {note_id}\ntitle: Deploy notes\nkind: reference\n{extra}---\n{body}\n"


NOTE_ID = "0192f0c1-8d2e-7b3a-9c4d-5e6f7a8b9c0d"
REL = "memory/semantic/deploy-notes.md"


def iso(stamp: int) -> str:
    return dt.datetime.fromtimestamp(stamp, dt.UTC).isoformat()


OpenMemory = Callable[..., Memory]


@pytest.fixture
def open_memory(vault: Path, clock: FakeClock) -> Iterator[OpenMemory]:
    """A Memory with its index (fake embedder) on the vault; each one opened is closed at teardown."""
    opened: list[Memory] = []

    def _open(root: Path | None = None) -> Memory:
        settings = Settings.resolve(root or vault, durable=False)
        memory = Memory(settings, clock=clock, embedder=FakeEmbedder(), background_commits=False)
        memory.reconcile()
        opened.append(memory)
        return memory

    yield _open
    for memory in opened:
        memory.close()


def found(memory: Memory, query: str, as_of: str, **arguments: Any) -> dict[str, dict[str, Any]]:
    """``{id: hit}`` of a memory_search as of ``as_of``."""
    result = memory.search(SearchRequest(query, as_of=as_of, **arguments))
    return {h["id"]: h for h in result["results"]}


def test_a_start_and_present_searches_read_no_history_only_the_first_as_of_does(
    vault: Path, open_memory: OpenMemory
) -> None:
    """A daemon nobody asks about the past never reads its history: no snapshot of the versions is
    written by a start, a search or a close; the first `as_of` read builds one."""
    memory = open_memory()
    memory.append("The deploy needs --force when the cache is cold.", "fix")
    memory.search(SearchRequest("deploy"))
    memory.close()
    assert not (vault / ".vaultmem" / versions.SNAPSHOT).exists()
    memory = open_memory()
    assert found(memory, "deploy", "2999-01-01T00:00:00Z")
    memory.close()
    assert (vault / ".vaultmem" / versions.SNAPSHOT).is_file()


def test_moments_before_the_first_commit_find_nothing_and_after_the_last_one_the_last_commit(
    vault: Path, open_memory: OpenMemory
) -> None:
    hand_write(vault, REL, note_text(NOTE_ID, "First the deploy used blue-green."))
    first = commit_at(vault, T0, "hand edit")
    hand_write(vault, REL, note_text(NOTE_ID, "Now the deploy is a rolling update."))
    commit_at(vault, T0 + DAY, "hand edit")
    memory = open_memory()
    assert found(memory, "deploy", "1999-12-31T23:59:59Z") == {}  # before the vault existed
    assert found(memory, "deploy", iso(T0 - 1)) == {}  # the vault, before the note
    assert found(memory, "deploy", first)[NOTE_ID]["snippet"] == "First the deploy used blue-green."
    assert found(memory, "deploy", iso(T0 + DAY - 1))[NOTE_ID]["snippet"].startswith("First")
    # A time with no zone is UTC; a time after the last commit is the memory as last committed.
    naive = iso(T0 + DAY).removesuffix("+00:00")
    assert found(memory, "deploy", naive)[NOTE_ID]["snippet"].startswith("Now")
    assert found(memory, "deploy", "2999-01-01")[NOTE_ID]["snippet"].startswith("Now")


def test_a_bad_as_of_is_refused_with_a_message_naming_the_argument(
    vault: Path, open_memory: OpenMemory
) -> None:
    memory = open_memory()
    memory.append("The deploy needs --force when the cache is cold.", "fix")
    git(vault, "checkout", "-q", "-b", "elsewhere")
    hand_write(vault, "memory/semantic/other.md", "elsewhere", commit=True)
    elsewhere = git(vault, "rev-parse", "HEAD").strip()
    git(vault, "checkout", "-q", "main")
    cases = {
        "": "as_of is empty",
        "yesterday": "neither an ISO 8601 date-time",
        "2026-13-45": "neither an ISO 8601 date-time",
        "x" * 100: "as_of is 100 characters",
        "deadbeefdeadbeef": "names no commit of this vault's history",
        elsewhere: "a commit the vault's current branch does not contain",
    }
    for as_of, message in cases.items():
        with pytest.raises(InvalidInput, match=message):
            memory.search(SearchRequest("deploy", as_of=as_of))
        with pytest.raises(InvalidInput, match=message):
            memory.recall_get(NOTE_ID, as_of=as_of)


def test_history_merged_in_from_another_machine_is_held_from_the_merge_on(
    vault: Path, tmp_path: Path, open_memory: OpenMemory
) -> None:
    """Issue 17: history can arrive by merge. The main line is the first-parent chain: the other
    machine's note is in this memory from the merge on; its own commit, which the main line does not
    pass through, means the vault once the merge brought it in."""
    hand_write(vault, REL, note_text(NOTE_ID, "The deploy uses blue-green here."))
    commit_at(vault, T0, "here")
    other = tmp_path / "laptop"
    subprocess.run(["git", "clone", "-q", str(vault), str(other)], check=True, capture_output=True)
    laptop_id = "0192f0c1-8d2e-7b3a-9c4d-aaaaaaaaaaaa"
    hand_write(
        other, "memory/semantic/laptop.md", note_text(laptop_id, "The laptop's deploy key rotates monthly.")
    )
    theirs = commit_at(other, T0 + DAY, "on the laptop")
    hand_write(
        vault, "memory/semantic/desk.md", note_text("0192f0c1-8d2e-7b3a-9c4d-bbbbbbbbbbbb", "Desk deploy.")
    )
    ours = commit_at(vault, T0 + 2 * DAY, "on the desk")
    git(vault, "fetch", "-q", str(other), "main")
    env = {**os.environ, "GIT_COMMITTER_DATE": f"@{T0 + 3 * DAY} +0000"}
    merge_args = ["merge", "-q", "--no-ff", "-m", "sync", "FETCH_HEAD"]
    subprocess.run(
        ["git", "-c", "user.name=p", "-c", "user.email=p@p", *merge_args],
        cwd=vault, env=env, check=True, capture_output=True,
    )  # fmt: skip
    merge = git(vault, "rev-parse", "HEAD").strip()
    memory = open_memory()
    assert laptop_id not in found(memory, "deploy", ours)
    assert laptop_id not in found(memory, "deploy", iso(T0 + 2 * DAY))  # after the laptop's commit
    assert laptop_id in found(memory, "deploy", merge)
    assert laptop_id in found(memory, "deploy", iso(T0 + 3 * DAY))
    at_theirs = found(memory, "deploy", theirs)  # off the main line: as of the merge that brought it
    assert set(at_theirs) == set(found(memory, "deploy", merge))


def test_a_renamed_note_keeps_its_id_and_a_copy_of_it_is_found_under_its_own(
    vault: Path, open_memory: OpenMemory
) -> None:
    hand_write(vault, REL, note_text(NOTE_ID, "The deploy runs from the release branch."))
    before = commit_at(vault, T0, "add")
    git(vault, "mv", REL, "memory/semantic/release-deploys.md")
    renamed = commit_at(vault, T0 + DAY, "rename")
    copy = "memory/semantic/release-deploys (1).md"
    hand_write(vault, copy, (vault / "memory/semantic/release-deploys.md").read_text(encoding="utf-8"))
    copied = commit_at(vault, T0 + 2 * DAY, "a sync client's copy")
    memory = open_memory()
    assert found(memory, "deploy", before)[NOTE_ID]["slug"] == "deploy-notes"
    assert found(memory, "deploy", renamed)[NOTE_ID]["slug"] == "release-deploys"
    after_copy = found(memory, "deploy", copied)
    assert after_copy[NOTE_ID]["slug"] == "release-deploys"  # the original keeps the id
    assert len(after_copy) == 2  # the copy is found too, under an id derived from its path
    thought = memory.recall_get(NOTE_ID, as_of=before).item
    assert isinstance(thought, Thought) and thought.path == REL


def test_filters_scope_and_status_apply_to_what_each_note_was_then(
    vault: Path, open_memory: OpenMemory
) -> None:
    hand_write(vault, REL, note_text(NOTE_ID, "The deploy is owned by infra.", project="infra", tags="[ops]"))
    infra = commit_at(vault, T0, "add")
    hand_write(vault, REL, note_text(NOTE_ID, "The deploy is owned by web now.", project="web", tags="[]"))
    web = commit_at(vault, T0 + DAY, "moved")
    hand_write(
        vault, REL, note_text(NOTE_ID, "The deploy is owned by web now.", project="web", status="archived")
    )
    archived = commit_at(vault, T0 + 2 * DAY, "archived")
    memory = open_memory()
    assert NOTE_ID in found(memory, "deploy", infra, scope="project", project="infra")
    assert NOTE_ID not in found(memory, "deploy", web, scope="project", project="infra")
    assert NOTE_ID in found(memory, "deploy", web, scope="project", project="web")
    assert NOTE_ID not in found(memory, "deploy", infra, scope="global")
    assert found(memory, "deploy", archived) == {}  # memory_search lists live memories

    def recalled(as_of: str, **spec: Any) -> list[Any]:
        spec.setdefault("statuses", frozenset({"active"}))
        answer = memory.recall_search(SearchSpec("deploy", as_of=as_of, **spec))
        return [i["thought"] for i in answer.items]

    assert [t.tags for t in recalled(infra, tag="ops")] == [("ops",)]
    assert recalled(web, tag="ops") == []
    assert [t.status for t in recalled(archived, statuses=frozenset({"archived"}))] == ["archived"]
    assert recalled(archived) == []


def test_a_second_process_restores_the_snapshot_and_reads_only_the_commits_made_since(
    vault: Path, open_memory: OpenMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    hand_write(vault, REL, note_text(NOTE_ID, "The deploy uses blue-green."))
    first = commit_at(vault, T0, "add")
    memory = open_memory()
    assert NOTE_ID in found(memory, "deploy", first)
    memory.close()  # writes the snapshot
    hand_write(
        vault, "memory/semantic/later.md", note_text("0192f0c1-8d2e-7b3a-9c4d-cccccccccccc", "Later deploy.")
    )
    later = commit_at(vault, T0 + DAY, "later")
    reads: list[str | None] = []
    real = versions.main_line

    def spy(repo: Any, head: str, since: str | None = None) -> Any:
        reads.append(since)
        return real(repo, head, since)

    monkeypatch.setattr(versions, "main_line", spy)
    memory = open_memory()
    assert set(found(memory, "deploy", later)) == {NOTE_ID, "0192f0c1-8d2e-7b3a-9c4d-cccccccccccc"}
    assert reads == [first]  # the snapshot's tip: only the commit made since was read from git
    assert found(memory, "deploy", first).keys() == {NOTE_ID}


def test_an_unusable_snapshot_or_a_rewritten_branch_is_read_again_from_git(
    vault: Path, open_memory: OpenMemory
) -> None:
    hand_write(vault, REL, note_text(NOTE_ID, "The deploy uses blue-green."))
    first = commit_at(vault, T0, "add")
    hand_write(vault, REL, note_text(NOTE_ID, "The deploy uses canaries."))
    dropped = commit_at(vault, T0 + DAY, "change")
    memory = open_memory()
    assert found(memory, "deploy", dropped)[NOTE_ID]["snippet"] == "The deploy uses canaries."
    git(vault, "reset", "-q", "--hard", first)  # the branch rewritten under the running process
    hand_write(vault, REL, note_text(NOTE_ID, "The deploy uses rolling updates."))
    rewritten = commit_at(vault, T0 + 2 * DAY, "change again")
    assert found(memory, "deploy", rewritten)[NOTE_ID]["snippet"] == "The deploy uses rolling updates."
    with pytest.raises(InvalidInput, match="does not contain"):
        found(memory, "deploy", dropped)
    memory.close()
    snapshot = vault / ".vaultmem" / versions.SNAPSHOT
    lines = snapshot.read_text(encoding="utf-8").splitlines()
    first_row = 1 + json.loads(lines[0])["terms"]  # the header, each term's postings, the rows
    row = json.loads(lines[first_row])
    row[2] = 10**6  # a row naming a document that is not there
    lines[first_row] = json.dumps(row)
    snapshot.write_text("\n".join(lines) + "\n", encoding="utf-8")
    memory = open_memory()
    assert found(memory, "deploy", rewritten)[NOTE_ID]["snippet"] == "The deploy uses rolling updates."


def test_recall_reads_that_walk_edges_or_other_actions_refuse_as_of(
    vault: Path, open_memory: OpenMemory
) -> None:
    memory = open_memory()
    note_id = memory.append("The deploy needs --force when the cache is cold.", "fix")["id"]
    head = git(vault, "rev-parse", "HEAD").strip()
    with pytest.raises(InvalidInput, match="include_edges cannot be combined with as_of"):
        memory.recall_get(note_id, include_edges=True, as_of=head)
    spec = SearchSpec("deploy", statuses=frozenset({"active"}), group_by_cluster=True, as_of=head)
    with pytest.raises(InvalidInput, match="group_by_cluster cannot be combined with as_of"):
        memory.recall_search(spec)
    with pytest.raises(NotFound, match="before the vault's first commit"):
        memory.recall_get(note_id, as_of="2000-01-01")


class HeldEmbedder(FakeEmbedder):
    """The fake embedder, made to wait (while ``hold`` is set) before embedding a past revision."""

    def __init__(self) -> None:
        super().__init__()
        self.hold = threading.Event()
        self.go = threading.Event()

    def embed(self, texts: Sequence[str]) -> Any:
        if self.hold.is_set() and any("revision" in t for t in texts):
            assert self.go.wait(30), "the test never let the background embedding go on"
        return super().embed(texts)


def test_past_texts_the_embedding_cache_lacks_are_embedded_in_the_background_meanwhile_degraded(
    vault: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A history the embedding cache never saw (cloned, or the state directory deleted) is not
    embedded inside the first `as_of` call when it is long: the answer comes at once, `degraded`
    with the number of versions the vector leg skipped, and complete once the background is done."""
    monkeypatch.setattr(versions, "EMBED_INLINE", 2)
    commits = []
    for day in range(6):
        hand_write(vault, REL, note_text(NOTE_ID, f"Deploy revision {day} of the release checklist."))
        commits.append(commit_at(vault, T0 + day * DAY, f"revision {day}"))
    embedder = HeldEmbedder()
    with Memory(Settings.resolve(vault, durable=False), clock=clock, embedder=embedder) as memory:
        memory.reconcile()
        parts(memory).index.wait_for_writes()  # the present text is embedded (and cached) first
        embedder.hold.set()
        spec = SearchSpec("deploy checklist", statuses=frozenset({"active"}), as_of=commits[2])
        try:
            first = memory.recall_search(spec)
            assert first.degraded and any("have no vector yet" in w for w in first.warnings), first.warnings
            assert parts(memory).past.texts_to_embed() == 5  # the five older revisions
        finally:
            embedder.go.set()
        wait_for(lambda: parts(memory).past.texts_to_embed() == 0)
        settled = memory.recall_search(spec)
        assert not settled.degraded and settled.warnings == []
        assert [i["thought"].content for i in settled.items] == [
            "Deploy revision 2 of the release checklist."
        ]


def test_a_first_read_of_a_long_history_answers_retry_shortly_while_it_goes_on(
    vault: Path, open_memory: OpenMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A history too long to read within one call's time is not read inside it: the call is a
    retryable 503 that says so, the reading goes on, and a later call answers."""
    hand_write(vault, REL, note_text(NOTE_ID, "The deploy uses blue-green."))
    first = commit_at(vault, T0, "add")
    memory = open_memory()
    started, go = threading.Event(), threading.Event()
    real = versions.main_line

    def slow(repo: Any, head: str, since: str | None = None) -> Any:
        started.set()
        assert go.wait(30)
        return real(repo, head, since)

    monkeypatch.setattr(versions, "FIRST_READ_WAIT", 0.05)
    monkeypatch.setattr(versions, "main_line", slow)
    try:
        with pytest.raises(IndexError_, match="still being read"):  # 503, retryable, on the wire
            memory.search(SearchRequest("deploy", as_of=first))
        assert started.is_set()  # the reading is under way meanwhile
    finally:
        go.set()
    wait_for(lambda: _answers(memory, first))
    assert NOTE_ID in found(memory, "deploy", first)


def _answers(memory: Memory, as_of: str) -> bool:
    try:
        memory.search(SearchRequest("deploy", as_of=as_of))
    except IndexError_:
        return False
    return True
