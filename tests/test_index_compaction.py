"""Index maintenance compacts by size: full fragments stay, the small tail is merged, new rows are
folded into the FTS index, old versions are pruned (vaultmem/index/compaction.py)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import lance
import lancedb
import pyarrow as pa
import pytest
from lancedb.index import FTS

from vaultmem.index.compaction import (
    MIN_FRAGMENT_ROWS,
    optimize_table,
    prune_versions,
    should_fold,
    target_rows_per_fragment,
    unindexed_rows,
)

SCHEMA = pa.schema([("id", pa.string()), ("text", pa.string())])


def rows(start: int, count: int) -> pa.Table:
    numbers = range(start, start + count)
    ids = [f"n{i:06d}" for i in numbers]
    texts = [f"note n{i:06d} about topic{i % 7}" for i in numbers]
    return pa.table({"id": ids, "text": texts}, schema=SCHEMA)


@pytest.fixture
def table(tmp_path: Path) -> tuple[object, Path]:
    db = lancedb.connect(str(tmp_path))
    t = db.create_table("t", schema=SCHEMA)
    return t, tmp_path / "t.lance"


def fragments(path: Path) -> dict[int, int]:
    """Fragment id -> live rows of the table's latest version."""
    return {f.fragment_id: f.count_rows() for f in lance.dataset(str(path)).get_fragments()}


def segments(path: Path) -> set[str]:
    """The uuids of the table's index segments (a rewritten index gets a new one)."""
    return {str(s.uuid) for i in lance.dataset(str(path)).describe_indices() for s in i.segments}


def test_target_grows_with_the_table() -> None:
    assert target_rows_per_fragment(0) == MIN_FRAGMENT_ROWS
    assert target_rows_per_fragment(10_000) == MIN_FRAGMENT_ROWS
    assert target_rows_per_fragment(160_000) == 10_000


def test_full_fragments_are_left_alone_and_the_tail_is_merged(table: tuple[object, Path]) -> None:
    t, path = table
    for start in range(0, 4 * 1024, 1024):  # four full fragments
        t.add(rows(start, 1024))  # type: ignore[attr-defined]
    t.create_index("text", config=FTS())  # type: ignore[attr-defined]
    full = fragments(path)
    for i in range(40):  # forty single-row writes, as the daemon makes them
        t.add(rows(10_000 + i, 1))  # type: ignore[attr-defined]
    assert len(fragments(path)) == 44

    optimize_table(path)

    after = fragments(path)
    # LanceDB's own optimize() (a million-row target) would have rewritten all 4,136 rows.
    assert set(full) <= set(after), "a full fragment was rewritten"
    assert len(after) == 5 and sum(after.values()) == 4 * 1024 + 40
    t.checkout_latest()  # type: ignore[attr-defined]
    stats = t.index_stats("text_idx")  # type: ignore[attr-defined]
    assert stats.num_unindexed_rows == 0 and stats.num_indexed_rows == 4 * 1024 + 40
    hits = t.search("n010039", query_type="fts").limit(3).to_list()  # type: ignore[attr-defined]
    assert [h["id"] for h in hits][:1] == ["n010039"]


def test_folding_waits_for_enough_lag_and_merging_new_rows_needs_no_index_rewrite(
    table: tuple[object, Path],
) -> None:
    t, path = table
    for start in range(0, 4 * 1024, 1024):
        t.add(rows(start, 1024))  # type: ignore[attr-defined]
    t.create_index("text", config=FTS())  # type: ignore[attr-defined]
    index_files = segments(path)
    for i in range(20):
        t.add(rows(10_000 + i, 1))  # type: ignore[attr-defined]
    assert not should_fold(20, 4096 + 20)

    optimize_table(path)  # fold=None: too little lag

    dataset = lance.dataset(str(path))
    assert len(dataset.get_fragments()) == 5, "the new rows' fragments were not merged"
    assert segments(path) == index_files, "an index was rewritten"
    assert unindexed_rows(dataset) == 20
    hits = t.search("n010019", query_type="fts").limit(1).to_list()  # type: ignore[attr-defined]
    assert [h["id"] for h in hits] == ["n010019"], "an unindexed row is still searched"

    for i in range(20, 40):
        t.add(rows(10_000 + i, 1))  # type: ignore[attr-defined]
    assert should_fold(40, 4096 + 40)
    optimize_table(path)
    assert unindexed_rows(lance.dataset(str(path))) == 0


def test_should_fold_lags_of_a_tenth_in_small_tables_and_1_in_256_in_large_ones() -> None:
    assert not should_fold(0, 10)
    assert should_fold(1, 10) and not should_fold(1, 11)
    assert should_fold(32, 8_000) and not should_fold(31, 8_000)
    assert should_fold(400, 100_000) and not should_fold(380, 100_000)


def test_a_fragment_with_many_deletions_is_rewritten(table: tuple[object, Path]) -> None:
    t, path = table
    for start in range(0, 2 * 1024, 1024):
        t.add(rows(start, 1024))  # type: ignore[attr-defined]
    first = min(fragments(path))
    t.delete("id < 'n000200'")  # type: ignore[attr-defined]  # ~20 % of the first fragment

    optimize_table(path)

    after = fragments(path)
    assert first not in after, "deleted rows were not materialised"
    assert sum(after.values()) == 2 * 1024 - 200


def test_old_versions_are_pruned_after_the_grace_period(table: tuple[object, Path]) -> None:
    t, path = table
    for i in range(30):
        t.add(rows(i, 1))  # type: ignore[attr-defined]
    optimize_table(path)
    prune_versions(path, older_than=timedelta(minutes=2))
    kept = len(lance.dataset(str(path)).versions())
    assert kept > 30, "versions younger than the grace period were deleted"

    prune_versions(path, older_than=timedelta(0))

    assert len(lance.dataset(str(path)).versions()) == 1
    assert lance.dataset(str(path)).count_rows() == 30


def test_maintenance_folds_beside_writes_and_compacts_with_the_writer_held_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lance refuses a compaction's commit when a concurrent write changed a fragment it rewrote,
    and the loser's files stay on disk for seven days (the soak: a third of the runs lost, ~70 %
    of the state folder). The index's own writer is held back while a table is compacted."""
    from test_index_store import note

    from vaultmem.index import maintenance as store
    from vaultmem.index.embedder import FakeEmbedder
    from vaultmem.index.note_index import NoteIndex

    index = NoteIndex(tmp_path / "state", FakeEmbedder(), maintenance_threshold=10**9)
    for n in range(40):
        index.upsert([note(n, f"teapot memo {n}")])
        index.wait_for_writes()
    calls: list[tuple[str, str, bool]] = []
    real_fold, real_compact = store.fold_indices, store.compact_table

    def fold(path: Path, *, fold: bool | None = None) -> bool:
        calls.append(("fold", path.name, _free(index)))
        return real_fold(path, fold=fold)

    def compact(path: Path) -> None:
        calls.append(("compact", path.name, _free(index)))
        real_compact(path)

    monkeypatch.setattr(store, "fold_indices", fold)
    monkeypatch.setattr(store, "compact_table", compact)
    index.maintenance(background=True, fold=None)
    index.wait_for_maintenance()

    assert [c for c in calls if c[1] == "notes.lance"] == [
        ("fold", "notes.lance", True),
        ("compact", "notes.lance", False),
    ], calls
    assert len(fragments(tmp_path / "state" / "lancedb" / "notes.lance")) == 1
    assert index.unindexed_rows() == 0  # 40 of 40 rows lagged: folded
    index.close()


def _free(index: object) -> bool:
    """Whether another thread could take the index's apply lock (the writer is not held back)."""
    import threading

    result: list[bool] = []

    def probe() -> None:
        lock = index.apply_lock  # type: ignore[attr-defined]
        got = lock.acquire(blocking=False)
        if got:
            lock.release()
        result.append(got)

    thread = threading.Thread(target=probe)
    thread.start()
    thread.join()
    return result[0]
