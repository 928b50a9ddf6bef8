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

This needs the ``lance`` package (pylance) at the same Lance version LanceDB embeds; it is
imported on the first run, not at start (~35 MB of resident code, 26 ms).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

__all__ = ["FRAGMENTS_PER_TABLE", "MIN_FRAGMENT_ROWS", "optimize_table", "target_rows_per_fragment"]

#: Rows below which a fragment is always worth merging (Lance's default row-group size).
MIN_FRAGMENT_ROWS = 1024
#: Full fragments a table settles at (plus a growing tail) once it outgrows the minimum.
FRAGMENTS_PER_TABLE = 16


def target_rows_per_fragment(rows: int) -> int:
    """The compaction target for a table of ``rows`` rows."""
    return max(MIN_FRAGMENT_ROWS, rows // FRAGMENTS_PER_TABLE)


def optimize_table(path: Path, *, keep_versions_for: timedelta) -> None:
    """Fold unindexed rows into the table's indices, merge its small fragments, then delete the
    files of versions older than ``keep_versions_for`` (a concurrent reader keeps its version
    that long). Raises whatever Lance raises: a commit lost to a concurrent writer is retried by
    the caller, and nothing is lost by giving up (the table stays correct, only less compact).
    """
    import lance  # the first maintenance pays for the import, not the start

    dataset = lance.dataset(str(path))
    # Indices first: compaction then merges indexed fragments only (Lance remaps their rows in
    # the index as it goes), which leaves one tail fragment instead of an indexed and an
    # unindexed one side by side.
    dataset.optimize.optimize_indices()
    dataset.optimize.compact_files(target_rows_per_fragment=target_rows_per_fragment(dataset.count_rows()))
    dataset.cleanup_old_versions(older_than=keep_versions_for)
