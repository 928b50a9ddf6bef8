"""The in-memory mirror of the notes table and the index's writer thread."""

from __future__ import annotations

import gc
import random
from pathlib import Path

import numpy as np
import pytest

from vaultmem.config import Settings
from vaultmem.errors import InvalidInput, VaultError
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.index.lance_loop import run_async
from vaultmem.index.mirror import NoteMirror
from vaultmem.index.note_index import NoteIndex
from vaultmem.index.records import NoteRecord, SearchFilters
from vaultmem.memory import Memory

STATUSES = ["active", "unfiled", "archived", "deleted"]
PROJECTS = [None, "alpha", "beta", "O'Brien's"]
KINDS = ["note", "reference", "decision"]
TAGS = ["x", "y", "z"]


def record(n: int, rng: random.Random) -> NoteRecord:
    return NoteRecord(
        id=f"0190a000-0000-7000-8000-{n:012d}",
        path=f"notes/n{n}.md",
        slug=f"n{n}",
        title=f"Note {n}",
        kind=rng.choice(KINDS),
        status=rng.choice(STATUSES),
        project=rng.choice(PROJECTS),
        tags=tuple(t for t in TAGS if rng.random() < 0.4),
        text=" ".join(rng.choice(["cat", "dog", "tea", "rain", "code", "music"]) for _ in range(6)),
        content_hash=f"h{n}",
        created=f"2025-01-01T10:{n % 60:02d}:00+00:00",
        updated="2025-01-01T10:00:00+00:00",
    )


FILTERS = [
    SearchFilters(),
    SearchFilters(statuses=None),
    SearchFilters(statuses=None, include_deleted=True),
    SearchFilters(include_deleted=True),
    SearchFilters(statuses=frozenset({"archived"})),
    SearchFilters(project="alpha"),
    SearchFilters(project="O'Brien's", kind="note"),
    SearchFilters(project="nobody"),
    SearchFilters(kind="decision", tags=frozenset({"x"})),
    SearchFilters(statuses=None, tags=frozenset({"x", "y"})),
]


@pytest.fixture
def populated(tmp_path: Path) -> tuple[NoteIndex, list[NoteRecord]]:
    rng = random.Random(7)
    records = [record(n, rng) for n in range(120)]
    index = NoteIndex(tmp_path / "state", FakeEmbedder())
    index.upsert(records)
    index.delete_ids([r.id for r in records[::7]])  # holes filled by moved rows
    index.wait_for_writes()
    kept = [r for i, r in enumerate(records) if i % 7]
    return index, kept


@pytest.mark.parametrize("filters", FILTERS)
def test_memory_filters_match_the_sql_prefilter(
    populated: tuple[NoteIndex, list[NoteRecord]], filters: SearchFilters
) -> None:
    index, kept = populated
    where = filters.to_sql()
    query = index.async_notes_table.query().select(["id"])
    if where:
        query = query.where(where)
    expected = set(run_async(query.to_arrow())["id"].to_pylist())
    assert index.mirror.in_scope([r.id for r in kept], filters) == expected


def test_nearest_is_the_exact_scan_after_deletes(populated: tuple[NoteIndex, list[NoteRecord]]) -> None:
    index, kept = populated
    embedder = FakeEmbedder()
    query = embedder.embed(["cat tea code"])[0]
    for filters in FILTERS:
        inside = index.mirror.in_scope([r.id for r in kept], filters)
        vectors = {r.id: embedder.embed([f"{r.title}\n{r.text}"])[0] for r in kept if r.id in inside}
        brute = sorted(((i, float(v @ query)) for i, v in vectors.items()), key=lambda p: (-p[1], p[0]))
        got = index.mirror.nearest(query, filters, 10)
        # the same scores in the same order (ids may swap only within exact ties)
        assert np.allclose([s for _, s in got], [s for _, s in brute[:10]], atol=1e-6)
        assert all(abs(float(vectors[i] @ query) - s) < 1e-6 for i, s in got)


def test_an_empty_status_list_is_refused() -> None:
    mirror = NoteMirror(4)
    with pytest.raises(InvalidInput):
        mirror.in_scope([], SearchFilters(statuses=frozenset()))


def test_reads_see_writes_queued_before_them(tmp_path: Path) -> None:
    index = NoteIndex(tmp_path / "state", FakeEmbedder())
    rng = random.Random(1)
    for n in range(30):  # no explicit wait: every read waits for the writer
        index.upsert([record(n, rng)])
    assert index.count() == 30
    index.delete_ids([record(0, rng).id])
    assert index.get(record(0, rng).id) is None
    assert index.path_hashes_for(["notes/n1.md"]) == {"notes/n1.md": "h1"}
    index.close()


def test_a_reopened_index_answers_as_before(
    populated: tuple[NoteIndex, list[NoteRecord]], tmp_path: Path
) -> None:
    index, kept = populated
    before = {q: index.search(q, SearchFilters(statuses=None), k=8) for q in ("cat", "rain code", "music")}
    index.close()
    again = NoteIndex(tmp_path / "state", FakeEmbedder())
    assert again.count() == len(kept)
    assert sorted(again.iter_records(), key=lambda r: r.id) == sorted(kept, key=lambda r: r.id)
    for q, result in before.items():
        after = again.search(q, SearchFilters(statuses=None), k=8)
        assert [(h.record.id, round(h.score, 6)) for h in after.hits] == [
            (h.record.id, round(h.score, 6)) for h in result.hits
        ]
    again.close()


def test_a_note_another_process_added_is_updated_not_duplicated(tmp_path: Path) -> None:
    rng = random.Random(3)
    note = record(1, rng)
    mine = NoteIndex(tmp_path / "state", FakeEmbedder())
    other = NoteIndex(tmp_path / "state", FakeEmbedder())  # as a second process would
    other.upsert([note])
    other.close()
    mine.upsert([note])  # this process has not seen it: the writer must not add a second row
    mine.wait_for_writes()
    rows = run_async(mine.async_notes_table.query().select(["id"]).to_arrow())["id"].to_pylist()
    assert rows == [note.id]
    mine.close()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors through /proc")
def test_maintenance_does_not_leak_file_descriptors(tmp_path: Path) -> None:
    rng = random.Random(5)
    records = [record(n, rng) for n in range(200)]
    index = NoteIndex(tmp_path / "state", FakeEmbedder(), maintenance_threshold=10**6)
    index.upsert(records)
    index.maintenance()
    before = len(list(Path("/proc/self/fd").iterdir()))
    for cycle in range(12):  # each maintenance rebuilds the FTS index
        changed = records[cycle]
        index.upsert([changed._replace(text=f"{changed.text} w{cycle}")])
        index.maintenance()
    assert len(list(Path("/proc/self/fd").iterdir())) <= before + 3
    index.close()


def test_a_reload_takes_the_vectors_it_is_given_without_copying_them() -> None:
    """At 100k notes a copy is 150 MB more while the index opens (issue 16, item 4)."""
    rng = random.Random(7)
    records = [record(n, rng) for n in range(50)]
    vectors = np.eye(50, 8, dtype=np.float32)
    mirror = NoteMirror(8)
    mirror.replace(records, vectors)
    assert mirror.capacity == 50
    vectors[0] = vectors[1]  # the mirror owns the matrix now: it is the same memory
    assert np.array_equal(mirror.vector(records[0].id), vectors[1])
    everything = SearchFilters(statuses=None, include_deleted=True)
    assert [h for h, _ in mirror.nearest(vectors[2], everything, 1)] == [records[2].id]


def test_a_note_added_to_a_full_mirror_grows_it_by_an_eighth_not_twice() -> None:
    rng = random.Random(8)
    records = [record(n, rng) for n in range(2000)]
    mirror = NoteMirror(8)
    mirror.replace(records, np.ones((2000, 8), dtype=np.float32))
    mirror.put([record(5000, rng)], np.ones((1, 8), dtype=np.float32))
    assert len(mirror) == 2001
    assert 2001 <= mirror.capacity <= 2000 + 2000 // 8 + 256


def test_opening_a_vault_with_its_index_leaves_the_collector_running_and_the_open_frozen(
    vault: Path,
) -> None:
    """The facade pauses Python's collector while it opens the index (docs/benchmarks.md, "Start at
    100k"); afterwards it runs again, with what the open built frozen out of its passes."""
    assert gc.isenabled()
    with Memory(Settings.resolve(vault, durable=False), embedder=FakeEmbedder()) as memory:
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0
        memory.reconcile()
    assert gc.isenabled()


def test_a_failed_open_leaves_the_collector_running(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(VaultError, match="not the top of a git repository"):
        Memory(Settings.resolve(tmp_path / "plain"), embedder=FakeEmbedder())
    assert gc.isenabled()
