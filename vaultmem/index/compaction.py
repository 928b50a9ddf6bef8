"""Maintenance of one LanceDB table: fold new rows into its indices, merge small fragments,
prune old versions.

LanceDB's own ``Table.optimize()`` compacts with Lance's default target of a million rows per
fragment, so every fragment of a vault-sized table is "small" and each run rewrote the whole
notes table: ~16 MB per run at 10,000 notes, every 32 writes, kept on disk for the two minutes
of versions (719 MB of state after a 15-minute soak). Here the target grows with the table
(a sixteenth of its rows, at least :data:`MIN_FRAGMENT_ROWS`), so full fragments are left alone
and a run rewrites only the recent tail: ~2.4 MB at 10,000 notes (docs/reliability.md).

Lance's planner (``compact_files``) takes fragments below the target and merges runs of
neighbours; a fragment with more than a tenth of its rows deleted is rewritten on its own. As
the table grows the target grows, and yesterday's full fragments become small again and are
merged once more: each row is rewritten a logarithmic number of times over the table's life.
Lance merges neighbours only, so a remainder can stay alone between two full fragments; with at
most 16 full fragments that is at most 16 more, and a table stays within ~33 fragments plus the
writes since the last run (~15 at 11,000 notes in the soak).

This needs the ``lance`` package (pylance) at the same Lance version LanceDB embeds; it is
imported on the first run, not at start (~35 MB of resident code, 26 ms).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lance import LanceDataset

__all__ = [
    "FOLD_MIN_ROWS",
    "FRAGMENTS_PER_TABLE",
    "MIN_FRAGMENT_ROWS",
    "optimize_table",
    "should_fold",
    "target_rows_per_fragment",
    "unindexed_rows",
]

#: Rows below which a fragment is always worth merging (Lance's default row-group size).
MIN_FRAGMENT_ROWS = 1024
#: Full fragments a table settles at (plus a growing tail) once it outgrows the minimum.
FRAGMENTS_PER_TABLE = 16
#: Unindexed rows a run folds into the indices at the least; see :func:`should_fold`.
FOLD_MIN_ROWS = 32


def target_rows_per_fragment(rows: int) -> int:
    """The compaction target for a table of ``rows`` rows."""
    return max(MIN_FRAGMENT_ROWS, rows // FRAGMENTS_PER_TABLE)


def should_fold(unindexed: int, rows: int) -> bool:
    """Whether ``unindexed`` rows of a ``rows``-row table are worth folding into its indices now.

    Folding rewrites every index of the table (Lance merges the new rows into one segment), so it
    costs in proportion to the table, while merging the new rows' small fragments costs in
    proportion to them. At 20,000 notes under the soak's ~12 writes/s, folding every 32 writes
    kept ~400 MB of index versions within the two-minute window. Rows outside the index are still
    searched (scanned), and BM25 takes its statistics from the indexed rows, so the lag stays small:
    32 rows or 1/256 of the table, whichever is more, or any lag above a tenth of a small table.
    """
    if unindexed <= 0:
        return False
    return unindexed >= max(FOLD_MIN_ROWS, rows // 256) or unindexed * 10 >= rows


def unindexed_rows(dataset: LanceDataset) -> int:
    """Rows in fragments some index of ``dataset`` does not cover yet (0 for a table without one)."""
    fragments = {f.fragment_id: f for f in dataset.get_fragments()}
    worst = 0
    for index in dataset.describe_indices():
        covered = {i for segment in index.segments for i in segment.fragment_ids}
        worst = max(worst, sum(f.count_rows() for i, f in fragments.items() if i not in covered))
    return worst


def optimize_table(path: Path, *, keep_versions_for: timedelta | None, fold: bool | None = None) -> None:
    """Merge the table's small fragments, fold unindexed rows into its indices (always with
    ``fold=True``, never with ``False``, when :func:`should_fold` says so by default), then delete
    the files of versions older than ``keep_versions_for`` (a concurrent reader keeps its version
    that long; ``None`` skips this: it reads every manifest kept, 0.28 s for the ~1,800 of the
    soak's two minutes). Raises whatever Lance raises: a commit lost to a concurrent writer is
    retried by the caller, and nothing is lost by giving up (the table stays correct, only less
    compact).
    """
    import lance  # the first maintenance pays for the import, not the start

    dataset = lance.dataset(str(path))
    rows = dataset.count_rows()
    if fold is None:
        fold = should_fold(unindexed_rows(dataset), rows)
    if fold:
        # Indices first: compaction then merges the new rows' fragments with the indexed tail
        # (Lance remaps their rows in the index as it goes), leaving one tail fragment.
        dataset.optimize.optimize_indices()
    # Without a fold, Lance merges the unindexed fragments among themselves only (it never mixes
    # fragments an index covers with ones it does not), which needs no index rewrite.
    dataset.optimize.compact_files(target_rows_per_fragment=target_rows_per_fragment(rows))
    if keep_versions_for is not None:
        dataset.cleanup_old_versions(older_than=keep_versions_for)
