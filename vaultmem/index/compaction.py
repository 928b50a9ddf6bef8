"""Maintenance of one LanceDB table: fold new rows into its indices, merge small fragments,
prune old versions.

LanceDB's ``Table.optimize()`` compacts towards a million rows per fragment, so each run rewrote
the whole notes table and every index. Here the compaction target grows with the table (a
sixteenth of its rows, at least :data:`MIN_FRAGMENT_ROWS`), so full fragments are left alone and
only the recent tail is merged, and new rows are folded into the indices only once enough of them
lag (:func:`should_fold`): folding rewrites every index, merging the new rows' fragments among
themselves rewrites only them. A table so settles at ~16 full fragments plus its tail. The figures:
docs/architecture.md ("The index in memory") and docs/reliability.md (the soak).

This needs the ``lance`` package (pylance) at the same Lance version LanceDB embeds; it is
imported on the first run, not at start.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lance import LanceDataset

__all__ = [
    "FOLD_MIN_ROWS",
    "FRAGMENTS_PER_TABLE",
    "MIN_FRAGMENT_ROWS",
    "compact_table",
    "fold_indices",
    "optimize_table",
    "prune_versions",
    "should_fold",
    "target_rows_per_fragment",
    "unindexed_rows",
]

log = logging.getLogger(__name__)

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
    proportion to them. Rows outside the index are still
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


def optimize_table(path: Path, *, fold: bool | None = None) -> None:
    """:func:`fold_indices` then :func:`compact_table` (for callers that hold writes back for both)."""
    fold_indices(path, fold=fold)
    compact_table(path)


def fold_indices(path: Path, *, fold: bool | None = None) -> bool:
    """Fold unindexed rows into the table's indices: always with ``fold=True``, never with
    ``False``, and when :func:`should_fold` says so by default; True if it did.

    Safe beside concurrent writes: an index update commits against whatever rows it saw.
    """
    import lance  # the first maintenance pays for the import, not the start

    started = time.perf_counter()
    dataset = lance.dataset(str(path))
    if fold is None:
        fold = should_fold(unindexed_rows(dataset), dataset.count_rows())
    if fold:
        dataset.optimize.optimize_indices()
        log.debug("folded %s: %.0f ms", path.name, 1000 * (time.perf_counter() - started))
    return fold


def compact_table(path: Path) -> None:
    """Merge the table's small fragments towards :func:`target_rows_per_fragment`.

    Run it with the process's own writes held back. Lance refuses to commit a compaction whose
    rewritten fragments a concurrent update or delete changed, and the files the loser wrote stay
    on disk: no manifest names them, so pruning keeps them for seven days as possibly a write in
    progress (docs/reliability.md, the soak). Merging the tail takes tens of milliseconds.
    """
    import lance

    started = time.perf_counter()
    dataset = lance.dataset(str(path))
    rows = dataset.count_rows()
    # After a fold Lance merges the new rows' fragments with the indexed tail (remapping their
    # rows in the index); otherwise it merges unindexed fragments among themselves only (it never
    # mixes fragments an index covers with ones it does not), which rewrites no index.
    dataset.optimize.compact_files(target_rows_per_fragment=target_rows_per_fragment(rows))
    log.debug("compacted %s (%d rows): %.0f ms", path.name, rows, 1000 * (time.perf_counter() - started))


def prune_versions(path: Path, *, older_than: timedelta) -> None:
    """Delete the files only versions older than ``older_than`` use (a concurrent reader keeps
    its version that long). It reads every kept manifest, commits nothing and so races no writer."""
    import lance

    lance.dataset(str(path)).cleanup_old_versions(older_than=older_than)
