"""NoteIndex on real LanceDB in tmp_path, with the deterministic fake embedder."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from vaultmem.errors import IndexError_, InvalidInput
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.index.note_index import NoteIndex
from vaultmem.index.records import NoteRecord, SearchFilters


class CountingEmbedder(FakeEmbedder):
    """A fake that counts how many texts it embedded."""

    def __init__(self, model_id: str = "fake-bow") -> None:
        super().__init__(model_id=model_id)
        self.embedded: list[str] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.embedded.extend(texts)
        return super().embed(texts)


def note(n: int, text: str, **overrides: object) -> NoteRecord:
    values: dict[str, object] = {
        "id": f"0190a000-0000-7000-8000-{n:012d}",
        "path": f"notes/n{n}.md",
        "slug": f"n{n}",
        "title": f"Note {n}",
        "kind": "note",
        "status": "active",
        "project": "alpha",
        "tags": (),
        "text": text,
        "content_hash": f"hash-{n}-{text}",
        "created": f"2025-01-01T10:{n % 60:02d}:00+00:00",
        "updated": "2025-01-01T10:00:00+00:00",
    }
    values.update(overrides)
    return NoteRecord(**values)  # type: ignore[arg-type]


CORPUS = [
    note(1, "the cat sat on the mat"),
    note(2, "dogs chase cats around the garden", project="O'Brien's", tags=("pets", "it's")),
    note(3, "quantum physics lecture notes", kind="reference"),
    note(4, "an archived cat photo", status="archived"),
    note(5, "a deleted cat memory", status="deleted"),
    note(6, "a captured cat idea awaiting review", status="unfiled"),
]


@pytest.fixture
def index(tmp_path: Path) -> NoteIndex:
    idx = NoteIndex(tmp_path / "state", FakeEmbedder())
    idx.upsert(CORPUS)
    return idx


def ids(result: object) -> set[int]:
    return {int(h.record.id[-12:]) for h in result.hits}  # type: ignore[attr-defined]


def test_upsert_then_get_round_trips_a_record(index: NoteIndex) -> None:
    assert index.get(CORPUS[1].id) == CORPUS[1]
    assert index.get("0190a000-0000-7000-8000-999999999999") is None
    assert index.count() == len(CORPUS)


def test_upsert_replaces_by_id(index: NoteIndex) -> None:
    changed = note(1, "the cat moved to the sofa")
    index.upsert([changed])
    assert index.count() == len(CORPUS)
    assert index.get(changed.id) == changed
    assert ids(index.search_bm25("sofa", SearchFilters(project="alpha"))) == {1}


def test_delete_ids_removes_notes(index: NoteIndex) -> None:
    index.delete_ids([CORPUS[0].id])
    assert index.get(CORPUS[0].id) is None
    assert 0 not in ids(index.search_bm25("cat", SearchFilters(statuses=None), k=10))


def test_default_filters_search_live_notes_only(index: NoteIndex) -> None:
    assert ids(index.search_bm25("cat", k=10)) == {1, 2, 6}


def test_status_filters_and_include_deleted(index: NoteIndex) -> None:
    assert ids(index.search_bm25("cat", SearchFilters(statuses=frozenset({"archived"})))) == {4}
    assert ids(index.search_bm25("cat", SearchFilters(statuses=None))) == {1, 2, 4, 6}
    assert 5 in ids(index.search_bm25("cat", SearchFilters(statuses=None, include_deleted=True)))


def test_filters_with_quotes_are_escaped_in_both_legs(index: NoteIndex) -> None:
    scope = SearchFilters(project="O'Brien's", tags=frozenset({"it's", "pets"}))
    assert ids(index.search_bm25("cats", scope)) == {2}
    assert ids(index.search_vector("cats", scope)) == {2}
    assert ids(index.search("cats", scope)) == {2}
    assert ids(index.search("cats", SearchFilters(tags=frozenset({"it's", "missing"})))) == set()


def test_kind_filter(index: NoteIndex) -> None:
    assert ids(index.search_vector("lecture", SearchFilters(kind="reference"))) == {3}


def test_hybrid_marks_where_a_hit_came_from(index: NoteIndex) -> None:
    hit = index.search("cat mat", SearchFilters(project="alpha"), k=1).hits[0]
    assert int(hit.record.id[-12:]) == 1
    assert "bm25" in hit.match_source and "embedding" in hit.match_source
    assert hit.similarity is not None and hit.relevance is not None


def test_empty_query_is_invalid(index: NoteIndex) -> None:
    with pytest.raises(InvalidInput):
        index.search("   ")


def test_ids_with_prefix_ignores_hyphens_and_case(index: NoteIndex) -> None:
    found = index.ids_with_prefix("0190A0000000700080000000000", limit=100)
    assert found == sorted(r.id for r in CORPUS)
    assert index.ids_with_prefix("0190a000-0000-7000-8000-000000000002") == [CORPUS[1].id]
    assert index.ids_with_prefix("0190a", limit=2) == sorted(r.id for r in CORPUS)[:2]
    with pytest.raises(InvalidInput):
        index.ids_with_prefix("xyz'")


def test_path_hashes_lists_every_note(index: NoteIndex) -> None:
    assert index.path_hashes() == {r.path: r.content_hash for r in CORPUS}


def test_unchanged_text_is_never_re_embedded(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    idx = NoteIndex(tmp_path / "state", embedder)
    idx.upsert(CORPUS)
    idx.wait_for_writes()  # upserts are applied by the index's writer thread
    first = len(embedder.embedded)
    idx.upsert([note(1, "the cat sat on the mat", status="archived", content_hash="other")])
    idx.upsert(CORPUS)
    idx.wait_for_writes()
    assert len(embedder.embedded) == first
    idx.upsert([note(1, "a new text")])
    idx.wait_for_writes()
    assert len(embedder.embedded) == first + 1


def test_embedding_cache_survives_reopen_and_rebuild(tmp_path: Path) -> None:
    idx = NoteIndex(tmp_path / "state", FakeEmbedder())
    idx.upsert(CORPUS)
    idx.close()
    embedder = CountingEmbedder()
    reopened = NoteIndex(tmp_path / "state", embedder)
    reopened.upsert(CORPUS)
    assert reopened.rebuild() == len(CORPUS)
    assert embedder.embedded == []


def test_rebuild_from_scratch_gives_identical_results(tmp_path: Path) -> None:
    a = NoteIndex(tmp_path / "a", FakeEmbedder())
    a.upsert(CORPUS)
    for i in range(3):  # several writes and a compaction on one side only
        a.upsert([CORPUS[i]])
    a.maintenance()
    a.rebuild()  # BM25 statistics of a table with history may still count replaced rows
    b = NoteIndex(tmp_path / "b", FakeEmbedder())
    b.upsert(list(reversed(CORPUS)))
    b.maintenance()  # BM25 statistics are the same once both FTS indexes cover every row
    for query in ("cat", "dogs garden", "physics"):
        ra, rb = a.search(query), b.search(query)
        assert [(h.record, round(h.score, 6)) for h in ra.hits] == [
            (h.record, round(h.score, 6)) for h in rb.hits
        ]


def test_model_change_is_detected_and_rebuild_clears_it(tmp_path: Path) -> None:
    first = NoteIndex(tmp_path / "state", FakeEmbedder())
    first.upsert(CORPUS)
    first.close()
    other = NoteIndex(tmp_path / "state", FakeEmbedder(dim=32, model_id="other"))
    assert other.needs_rebuild()
    degraded = other.search("cat")
    assert degraded.degraded and ids(degraded) == {1, 2, 6}
    with pytest.raises(IndexError_):
        other.search_vector("cat")
    other.rebuild()
    assert not other.needs_rebuild()
    assert ids(other.search_vector("cat", k=10)) == {1, 2, 3, 6}


def test_many_single_upserts_stay_searchable_through_maintenance(tmp_path: Path) -> None:
    idx = NoteIndex(tmp_path / "state", FakeEmbedder(), maintenance_threshold=5)
    for i in range(12):
        idx.upsert([note(100 + i, f"unique{i} marmalade")])
    idx.wait_for_maintenance()
    assert ids(idx.search_bm25("unique11")) == {111}
    assert len(idx.search_bm25("marmalade", k=20).hits) == 12


def test_the_tail_of_a_bulk_load_is_folded_into_the_full_text_index_once_writes_pause(
    tmp_path: Path,
) -> None:
    """Issue 15: maintenance ran every N write batches, so the rows a bulk load wrote after the
    last run stayed outside the FTS index and every search scanned them (SciFact's 121 leftover
    abstracts made the BM25 leg 18 ms instead of 4). A pause in the writes now folds them in."""
    idx = NoteIndex(tmp_path / "state", FakeEmbedder(), maintenance_threshold=1000)
    for start in range(0, 120, 40):
        idx.upsert([note(i, f"bulk abstract {i} about kinases") for i in range(start, start + 40)])
    idx.wait_for_writes()
    deadline = time.monotonic() + 20
    while idx.unindexed_rows() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert idx.unindexed_rows() == 0
    assert len(idx.search_bm25("kinases", k=200).hits) == 120
    idx.close()


def test_a_few_rows_written_then_a_pause_do_not_start_a_fold(tmp_path: Path) -> None:
    """Below the fold threshold (32 rows or a 256th of the table) a pause changes nothing: an agent
    appending now and then does not rewrite the index after every note."""
    idx = NoteIndex(tmp_path / "state", FakeEmbedder(), maintenance_threshold=1000)
    idx.upsert([note(i, f"seed {i}") for i in range(400)])
    idx.maintenance()
    idx.upsert([note(1000, "one more note")])
    idx.wait_for_writes()
    timer = idx._maintenance._quiet_timer
    assert timer is not None
    timer.join(5)
    idx.wait_for_maintenance()
    assert idx.unindexed_rows() == 1
    idx.close()


KILLED_SESSION = """
import os, signal, sys
from pathlib import Path
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.index.note_index import NoteIndex
from vaultmem.index.records import NoteRecord
index = NoteIndex(Path(sys.argv[1]), FakeEmbedder(), maintenance_threshold=8)
for n in range(int(sys.argv[2]), int(sys.argv[2]) + 3):
    text = f"teapot memo {n} kettle" if n % 2 else f"teapot memo {n}"
    index.upsert([NoteRecord(f"0190a000-0000-7000-8000-{n:012d}", f"notes/n{n}.md", f"n{n}", f"Note {n}",
        "note", "active", "alpha", (), text, f"hash-{n}-{text}", f"2025-01-01T10:{n % 60:02d}:00+00:00",
        "2025-01-01T10:00:00+00:00")])
index.wait_for_writes()
os.kill(os.getpid(), signal.SIGKILL)  # a supervisor's kill: no close, so nothing folded
"""


def test_rows_left_unindexed_by_short_lived_processes_are_folded_in(tmp_path: Path) -> None:
    """A process that writes fewer rows than the maintenance threshold never runs maintenance: a
    clean close folds its rows into the id index (so the next start has nothing to fold), and the
    rows of a process killed before it closed are folded by the next open's check. Either way the
    BM25 statistics match a fresh build's."""
    state = tmp_path / "state"
    first = NoteIndex(state, FakeEmbedder(), maintenance_threshold=8)
    first.upsert([note(i, f"kettle report {i}") for i in range(10)])
    first.maintenance()
    first.close()
    n = 100
    for _session in range(4):  # four short sessions, three writes each: 12 rows, never 8 in one
        idx = NoteIndex(state, FakeEmbedder(), maintenance_threshold=8)
        for _ in range(3):
            idx.upsert([note(n, f"teapot memo {n} kettle" if n % 2 else f"teapot memo {n}")])
            n += 1
        idx.close()
    reopened = NoteIndex(state, FakeEmbedder(), maintenance_threshold=8)
    assert reopened.unindexed_rows() == 0
    assert not reopened.maintain_if_behind()
    reopened.close()
    for start in (n, n + 3):  # two sessions killed after their writes
        done = subprocess.run(
            [sys.executable, "-c", KILLED_SESSION, str(state), str(start)], capture_output=True, timeout=120
        )
        assert done.returncode == -signal.SIGKILL, done.stderr
    n += 6
    reopened = NoteIndex(state, FakeEmbedder(), maintenance_threshold=8)
    assert reopened.unindexed_rows() == 6
    assert reopened.maintain_if_behind()
    reopened.wait_for_maintenance()
    assert reopened.unindexed_rows() == 0
    assert not reopened.maintain_if_behind()

    fresh = NoteIndex(tmp_path / "fresh", FakeEmbedder())
    fresh.upsert([note(i, f"kettle report {i}") for i in range(10)])
    fresh.upsert([note(m, f"teapot memo {m} kettle" if m % 2 else f"teapot memo {m}") for m in range(100, n)])
    fresh.maintenance()
    for query in ("kettle", "teapot", "teapot kettle"):
        got = [(h.record.id, round(h.score, 5)) for h in reopened.search_bm25(query, k=40).hits]
        want = [(h.record.id, round(h.score, 5)) for h in fresh.search_bm25(query, k=40).hits]
        assert sorted(got) == sorted(want), query


def test_context_lends_score_to_the_adjacent_turn(tmp_path: Path) -> None:
    idx = NoteIndex(tmp_path / "state", FakeEmbedder())
    turns = [
        note(1, "what got you into running", created="2025-01-01T10:00:00+00:00"),
        note(2, "it has been great for my mental health", created="2025-01-01T10:00:05+00:00"),
        note(3, "unrelated chatter about weather", created="2025-01-02T10:00:00+00:00"),
    ]
    idx.upsert(turns)
    hits = idx.searcher.search("running", SearchFilters(), 3, min_relevance=0).hits
    assert [int(h.record.id[-12:]) for h in hits][:2] == [1, 2]
    assert "context" in hits[1].match_source


def test_a_quiet_fold_that_waited_for_a_maintenance_run_starts_no_second_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quiet fold's timer may fire while a maintenance run holds the index (a loaded machine):
    once it gets the lock, that run has taken the pending writes in, so it must not start another
    run (which folded a later write in too: test_a_few_rows_written_then_a_pause_do_not_start_a_fold
    failed under load)."""
    idx = NoteIndex(tmp_path / "state", FakeEmbedder(), maintenance_threshold=1000)
    idx.upsert([note(i, f"seed {i}") for i in range(400)])
    idx.wait_for_writes()
    maintenance = idx._maintenance
    started: list[object] = []
    monkeypatch.setattr(maintenance, "_background", lambda fold: started.append(fold))
    asked = threading.Event()
    real_unindexed = idx.unindexed_rows

    def unindexed() -> int:
        asked.set()  # the quiet fold is past its own checks and about to start a run
        return real_unindexed()

    monkeypatch.setattr(idx, "unindexed_rows", unindexed)
    with idx.apply_lock:  # a maintenance run holds the index ...
        waiter = threading.Thread(target=maintenance._quiet_fold)
        waiter.start()
        assert asked.wait(30)
        maintenance.pending_writes = 0  # ... and takes every pending write in
    waiter.join(30)
    assert started == []
    idx.close()
