"""Time travel through the real surface: ``as_of`` on memory_search and memory_recall search/get,
over HTTP with a real MCP client, a real daemon (watcher, commit writer, git) and the real ONNX model.

Issue 18, item 3: "the answer is what the memory held then — notes that existed then, with their
text then, and their status then (a note forgotten later is found; one created later is not)".
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import git, note_files
from graph_wire import Wire
from mcp_harness import running_daemon, structured, wait_for

from vaultmem.index.embedder import Embedder, OnnxEmbedder
from vaultmem.server.daemon import Daemon
from vaultmem.sync.versions import SNAPSHOT

TITLE = "Staging database"
TEXTS = [
    "The staging database listens on port 6543 behind the VPN.",
    "The staging database moved to port 7654 after the network change.",
    "Staging now uses the shared Postgres cluster; the old database host is gone.",
]
HAND_TEXT = "Hand edit: staging reaches the shared Postgres cluster through pgbouncer on port 6432."
#: No word in common with any version (after stemming and stop words): only the vector leg ranks it.
PARAPHRASE = "Which relational DB machines replaced the previous one?"


@pytest.fixture(scope="module")
def onnx() -> Embedder:
    return OnnxEmbedder(threads=1)


@dataclass(frozen=True)
class Moment:
    """One commit of the note's history: its id, its committer time, the text and status then."""

    commit: str
    time: str
    text: str | None  # None: the note did not exist yet
    status: str | None


def head_moment(vault: Path, text: str | None, status: str | None) -> Moment:
    commit, when = git(vault, "log", "-1", "--format=%H %cI").split()
    return Moment(commit, when, text, status)


def after_this_second(vault: Path) -> None:
    """Wait until the clock is past the last commit's second, so the next commit's time differs
    (git records whole seconds): a wait on a condition, bounded."""
    stamp = int(git(vault, "log", "-1", "--format=%ct").strip())
    wait_for(lambda: time.time() >= stamp + 1, timeout=5)


def committed(daemon: Daemon, vault: Path, before: str) -> None:
    """Wait for the commit of the write just acknowledged (the writer commits in the background)."""
    assert daemon.memory is not None
    daemon.memory.flush()
    wait_for(lambda: git(vault, "rev-parse", "HEAD").strip() != before)


def search_hit(wire: Wire, note_id: str, **arguments: Any) -> dict[str, Any] | None:
    result = structured(wire.call("memory_search", **arguments))
    return next((h for h in result["results"] if h["id"] == note_id), None)


def recall_item(wire: Wire, note_id: str, **arguments: Any) -> dict[str, Any] | None:
    items = wire.recall(action="search", **arguments)["items"]
    return next((i for i in items if i["thought"]["id"] == note_id), None)


def write_history(wire: Wire, daemon: Daemon, vault: Path) -> tuple[str, list[Moment]]:
    """Created, updated twice by an agent, edited by hand (committed by the watcher), forgotten; the
    past is read after every commit, so the daemon keeps its versions current commit by commit."""
    moments = [head_moment(vault, None, None)]
    wire.call("memory_search", query="staging", as_of=moments[0].commit)
    after_this_second(vault)
    note_id = str(
        structured(wire.call("memory_append", content=TEXTS[0], kind="reference", title=TITLE))["id"]
    )
    committed(daemon, vault, moments[-1].commit)
    moments.append(head_moment(vault, TEXTS[0], "active"))
    wire.call("memory_search", query="staging", as_of=moments[-1].commit)
    for text in TEXTS[1:]:
        after_this_second(vault)
        wire.store(action="update", thought_id=note_id, content=text)
        committed(daemon, vault, moments[-1].commit)
        moments.append(head_moment(vault, text, "active"))
        wire.call("memory_search", query="staging", as_of=moments[-1].commit)
    after_this_second(vault)
    [path] = [p for p in note_files(vault) if note_id in p.read_text(encoding="utf-8")]
    before = path.read_text(encoding="utf-8")
    path.write_text(before.replace(TEXTS[2], HAND_TEXT), encoding="utf-8")  # the person's editor
    wait_for(lambda: git(vault, "log", "-1", "--format=%s").startswith("hand edit:"), timeout=30)
    moments.append(head_moment(vault, HAND_TEXT, "active"))
    wire.call("memory_search", query="staging", as_of=moments[-1].commit)
    after_this_second(vault)
    wire.call("memory_forget", id=note_id, reason="obsolete")
    committed(daemon, vault, moments[-1].commit)
    moments.append(head_moment(vault, HAND_TEXT, "deleted"))
    return note_id, moments


@pytest.fixture
def daemon(vault: Path, tmp_path: Path, onnx: Embedder) -> Iterator[Daemon]:
    with running_daemon(vault, tmp_path / "token", embedder=onnx, commit_quiet_period=0.3) as running:
        yield running


def test_each_version_of_a_note_is_what_memory_search_and_memory_recall_answer_as_of_its_commit(
    vault: Path, daemon: Daemon
) -> None:
    """Issue 18: "A note created, updated twice ... and forgotten: `as_of` each version's time returns
    that version's text and status; `as_of` before it existed does not find it." The hand edit, which
    the watcher commits, is a version too. Each moment is asked both as a time and as a commit."""
    wire = Wire(daemon)
    note_id, moments = write_history(wire, daemon, vault)
    assert len(moments) == 6 and len({m.time for m in moments}) == 6
    for moment in moments:
        for as_of in (moment.time, moment.commit, moment.commit[:10]):
            where = f"as_of {as_of} ({moment.text!r}, {moment.status})"
            hit = search_hit(wire, note_id, query="staging", as_of=as_of, include_deleted=True)
            if moment.text is None:
                assert hit is None, where
                continue
            assert hit is not None and hit["snippet"] == moment.text and hit["status"] == moment.status, where
            live = search_hit(wire, note_id, query="staging", as_of=as_of)
            item = recall_item(wire, note_id, query="staging", as_of=as_of)
            if moment.status == "deleted":  # a forgotten memory is left out unless asked for
                assert live is None and item is None, where
                continue
            assert live is not None and live["snippet"] == moment.text, where
            assert item is not None, where
            assert item["thought"]["content"] == moment.text and item["thought"]["status"] == "active", where
            got = wire.recall(action="get", thought_id=note_id, as_of=as_of)["item"]
            assert (got["content"], got["status"]) == (moment.text, "active"), where

    # Before it existed, and once forgotten, get is a 404 that says which moment it read.
    for moment, why in ((moments[0], "did not exist then"), (moments[-1], "forgotten by then")):
        message, error = wire.error("memory_recall", action="get", thought_id=note_id, as_of=moment.commit)
        assert error is not None and error["statusCode"] == 404, message
        assert why in message and moment.commit[:12] in message, message
    # The present is untouched: forgotten, found only with include_deleted.
    assert search_hit(wire, note_id, query="staging") is None
    now = search_hit(wire, note_id, query="staging", include_deleted=True)
    assert now is not None and now["status"] == "deleted"


def test_an_as_of_search_ranks_the_vectors_of_the_texts_of_then(
    vault: Path, daemon: Daemon, onnx: Embedder
) -> None:
    """The vector leg of a past search reads the vector of each version's own text (each distinct
    text embedded once), not the note's vector now: a query sharing no word with any version finds
    the note through the vector leg alone, with the cosine of that version's text."""
    wire = Wire(daemon)
    note_id, moments = write_history(wire, daemon, vault)
    query = onnx.embed([PARAPHRASE])[0]
    expected = {m.text: float(onnx.embed([f"{TITLE}\n{m.text}"])[0] @ query) for m in moments[1:]}
    assert len({round(v, 3) for v in expected.values()}) == len(expected)  # the versions differ
    for moment in moments[1:-1]:
        item = recall_item(
            wire, note_id, query=PARAPHRASE, as_of=moment.commit, min_relevance=0, compact=False
        )
        assert item is not None, moment
        assert item["match_source"] == ["embedding"], item  # no BM25 anchor: the vector leg alone
        assert item["scores"]["similarity"] == pytest.approx(expected[moment.text], abs=1e-3), moment


def test_the_past_read_again_after_the_state_directory_was_deleted_gives_the_same_answers(
    vault: Path, tmp_path: Path, onnx: Embedder
) -> None:
    """Issue 18: the versioned store is derived state rebuilt from git: a daemon started after the
    state directory was deleted (no index, no embedding cache, no snapshot) answers every `as_of`
    exactly as the daemon that wrote the history did."""

    def answers(wire: Wire, note_id: str, moments: list[Moment]) -> list[Any]:
        out: list[Any] = []
        for moment in moments:
            for query in ("staging database port", PARAPHRASE):
                out.append(structured(wire.call("memory_search", query=query, as_of=moment.commit)))
                out.append(wire.recall(action="search", query=query, as_of=moment.time, compact=False))
            got = wire.call("memory_recall", action="get", thought_id=note_id, as_of=moment.commit)
            out.append(got.structured_content)
        return [_rounded(a) for a in out]

    token = tmp_path / "token"
    with running_daemon(vault, token, embedder=onnx, commit_quiet_period=0.3) as daemon:
        wire = Wire(daemon)
        note_id, moments = write_history(wire, daemon, vault)
        first = answers(wire, note_id, moments)
    state = vault / ".vaultmem"
    assert (state / SNAPSHOT).is_file()  # the store was written out when the daemon stopped
    shutil.rmtree(state)
    with running_daemon(vault, token, embedder=onnx, commit_quiet_period=0.3) as daemon:
        again = answers(Wire(daemon), note_id, moments)
    assert again == first


def _rounded(answer: Any) -> Any:
    """An answer with the scores rounded (float sums may differ in the last bits)."""
    if isinstance(answer, dict):
        return {k: _rounded(v) for k, v in answer.items()}
    if isinstance(answer, list | tuple):
        return [_rounded(v) for v in answer]
    if isinstance(answer, float):
        return round(answer, 4)
    return answer


def test_a_bad_as_of_is_a_classified_400_naming_the_argument(vault: Path, tmp_path: Path) -> None:
    """Issue 18 brief: "Clear errors for a bad `as_of` (unparseable, an unknown commit) as classified
    400s naming the argument", on both tools; `as_of` where it does not apply is refused the same way."""
    with running_daemon(vault, tmp_path / "token") as fake:
        wire = Wire(fake)
        wire.create("The deploy needs --force when the cache is cold.")
        calls = [
            ("memory_search", {"query": "deploy", "as_of": "last tuesday"}, "neither an ISO 8601"),
            ("memory_search", {"query": "deploy", "as_of": "0123456789abcdef"}, "names no commit"),
            ("memory_recall", {"action": "search", "query": "deploy", "as_of": "2026-02-30"}, "neither"),
            ("memory_recall", {"action": "get", "thought_id": "0192f0c1-8d2e-7b3a-9c4d-5e6f7a8b9c0d",
                               "as_of": "fedcba9876543210"}, "names no commit"),
            ("memory_recall", {"action": "list", "as_of": "2026-03-14"}, "as_of applies to search and get"),
        ]  # fmt: skip
        for tool, arguments, message in calls:
            text, error = wire.error(tool, **arguments)
            assert error is not None, (tool, arguments, text)
            assert error["statusCode"] == 400 and error["retryable"] is False, (tool, arguments, error)
            assert "as_of" in text and message in text, (tool, arguments, text)
