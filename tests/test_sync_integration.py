"""The index follows the vault: hand edits, renames, deletes, edits made while the daemon was down,
and the daemon's own writes — with the real ONNX model and real LanceDB (issue 3, "Must show")."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from layers import parts

from vaultmem.config import Settings
from vaultmem.index.embedder import Embedder, OnnxEmbedder
from vaultmem.memory import Memory
from vaultmem.operations.search import SearchRequest

pytestmark = pytest.mark.model

HAND_NOTE = """---
title: Sourdough starter
tags: [baking]
---
Feed the sourdough starter with rye flour every twelve hours and keep it at 24 degrees.
"""


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return OnnxEmbedder(threads=1)


class CountingEmbedder:
    """The real embedder, counting the texts it embeds."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.texts: list[str] = []

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.texts.extend(texts)
        return self.inner.embed(texts)


@pytest.fixture
def open_runtime(vault: Path, embedder: Embedder) -> Iterator[Callable[..., Memory]]:
    opened: list[Memory] = []

    def _open(emb: Embedder | None = None, **overrides: object) -> Memory:
        settings = Settings.resolve(vault, durable=False, commit_quiet_period=0.2, **overrides)
        runtime = Memory(settings, embedder=emb or embedder)
        runtime.reconcile()
        opened.append(runtime)
        return runtime

    yield _open
    for runtime in opened:
        runtime.close()


def slugs(runtime: Memory, query: str, **kw: object) -> list[str]:
    result = runtime.search(SearchRequest(query=query, **kw))  # type: ignore[arg-type]
    return [r["slug"] for r in result["results"]]


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)


def git_log(vault: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "log", "--format=%s", *args], cwd=vault, capture_output=True, text=True, check=True
    ).stdout


def test_a_file_written_by_hand_is_found_and_committed(
    vault: Path, open_runtime: Callable[..., Memory]
) -> None:
    runtime = open_runtime()
    runtime.start_watching()
    (vault / "memory" / "semantic" / "sourdough-starter.md").write_text(HAND_NOTE, encoding="utf-8")
    wait_for(lambda: "sourdough-starter" in slugs(runtime, "how often do I feed the starter"))
    wait_for(lambda: "hand edit" in git_log(vault, "-1"))
    assert (
        "memory/semantic/sourdough-starter.md"
        in subprocess.run(
            ["git", "show", "--name-only", "--format=", "HEAD"], cwd=vault, capture_output=True, text=True
        ).stdout
    )


def test_a_rename_and_a_hand_delete_are_reflected(vault: Path, open_runtime: Callable[..., Memory]) -> None:
    note = vault / "memory" / "semantic" / "sourdough-starter.md"
    note.write_text(HAND_NOTE, encoding="utf-8")
    runtime = open_runtime()
    assert slugs(runtime, "sourdough starter rye flour")[0] == "sourdough-starter"
    runtime.start_watching()
    renamed = note.with_name("rye-starter.md")
    note.rename(renamed)
    wait_for(lambda: (s := slugs(runtime, "sourdough starter rye flour")) != [] and s[0] == "rye-starter")
    assert "sourdough-starter" not in slugs(runtime, "sourdough starter rye flour")
    renamed.unlink()
    wait_for(lambda: "rye-starter" not in slugs(runtime, "sourdough starter rye flour"))
    assert parts(runtime).index.path_hashes_for(["memory/semantic/rye-starter.md"]) == {}
    # The deletion is recorded in git once the quiet period has passed.
    wait_for(
        lambda: (
            "rye-starter.md"
            not in subprocess.run(["git", "ls-files"], cwd=vault, capture_output=True, text=True).stdout
        )
    )


def test_edits_made_while_the_daemon_was_down_are_caught_at_start(
    vault: Path, open_runtime: Callable[..., Memory]
) -> None:
    first = open_runtime()
    result = first.append("The staging database lives on port 5433.", "reference", title="Staging db")
    first.close()
    path = next((vault / "memory" / "semantic").glob("staging-db*.md"))
    text = path.read_text(encoding="utf-8").replace("port 5433", "port 6543 since the migration")
    path.write_text(text, encoding="utf-8")
    (vault / "memory" / "semantic" / "kettle.md").write_text(
        "Descale the kettle monthly.\n", encoding="utf-8"
    )
    second = open_runtime()
    hit = second.search(SearchRequest(query="which port does the staging database use"))["results"][0]
    assert hit["id"] == result["id"]
    assert "6543" in hit["snippet"]
    assert "kettle" in slugs(second, "descale kettle")
    assert parts(second).index.count() == len(list(parts(second).catalog.entries()))


def test_the_daemons_own_writes_are_indexed_once(
    vault: Path, embedder: Embedder, open_runtime: Callable[..., Memory]
) -> None:
    counting = CountingEmbedder(embedder)
    runtime = open_runtime(counting)
    # What the watcher did with each path it handled. (Counting handled events from a snapshot
    # taken after the write was flaky: on a loaded machine the watcher had already handled the
    # write's event before the snapshot, and the wait for one more event ran out.)
    handled: list[tuple[str, str]] = []
    sync_path = runtime._keeper.sync_path  # type: ignore[union-attr]

    def recording(rel: str) -> str:
        outcome = sync_path(rel)
        handled.append((rel, outcome))
        return outcome

    runtime._keeper.sync_path = recording  # type: ignore[method-assign]
    runtime.start_watching()
    body = "Use ruff format before committing Python code."
    written = runtime.append(body, "convention", title="Formatting")
    rel = runtime.note(written["id"]).path
    # Read your writes: searchable as soon as the call returns.
    assert "formatting" in slugs(runtime, "ruff format python")

    def note_embeddings() -> int:
        return sum(1 for text in counting.texts if body in text)

    assert note_embeddings() == 1
    # The watcher sees the file event too; it must recognise the write and not index it again.
    wait_for(lambda: any(path == rel for path, _ in handled), timeout=60)
    assert [outcome for path, outcome in handled if path == rel] == ["unchanged"]
    assert "formatting" in slugs(runtime, "ruff format python")
    assert note_embeddings() == 1
    assert parts(runtime).index.count() == 1


def test_a_malformed_hand_note_is_reported_and_left_untouched(
    vault: Path, open_runtime: Callable[..., Memory]
) -> None:
    bad = vault / "memory" / "semantic" / "broken.md"
    raw = b"---\nstatus: [unclosed\n---\nbody\n"
    bad.write_bytes(raw)
    runtime = open_runtime()
    report = runtime.reconcile()
    assert "memory/semantic/broken.md" in report.malformed
    assert bad.read_bytes() == raw
    assert parts(runtime).index.path_hashes_for(["memory/semantic/broken.md"]) == {}
