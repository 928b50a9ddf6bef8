"""When the index's tables are maintained: every ``threshold`` writes, after writes pause, on demand.

The work itself (fold new rows into the indices, merge small fragments, prune old versions) is in
:mod:`vaultmem.index.compaction`; this module decides when it runs and on which thread, and keeps
a background run from racing the writer's commits (see ``docs/architecture.md``, "The index in
memory, and its single writer").
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Protocol

from vaultmem.errors import IndexError_
from vaultmem.index.compaction import compact_table, fold_indices, optimize_table, prune_versions, should_fold

__all__ = ["Maintained", "Maintenance"]

log = logging.getLogger(__name__)

#: Old table versions are kept this long so a concurrent reader (a CLI search beside the daemon)
#: never loses its files (docs/reliability.md has the soak figures behind two minutes).
CLEANUP_AFTER = timedelta(minutes=2)
#: Background runs delete old versions at most this often (each cleanup reads every kept manifest).
CLEANUP_EVERY = 30.0
#: Tries of a foreground run: another process's maintenance may win a commit race.
ATTEMPTS = 4
#: Seconds without index writes after which rows still outside the full-text index are folded in
#: (when enough lag: :func:`~vaultmem.index.compaction.should_fold`). Maintenance otherwise runs
#: every ``threshold`` write batches, so the tail of a bulk load stayed unindexed (docs/benchmarks.md).
QUIET_FOLD_S = 1.0
#: Seconds without index writes after which the index saves its snapshot, so that a start after a
#: crash or a kill reads no LanceDB either (``index/snapshot.py``; the close saves one anyway).
QUIET_SNAPSHOT_S = 30.0


class Maintained(Protocol):
    """What maintenance needs of the index it keeps."""

    #: Held by the index's writer while it applies a batch; compaction holds it too.
    apply_lock: threading.RLock

    def table_paths(self) -> list[Path]: ...

    def flush_cache(self) -> None: ...

    def reopen_tables(self) -> None: ...

    def unindexed_rows(self) -> int: ...

    def count(self) -> int: ...

    def writes_idle(self) -> bool: ...

    def wait_for_writes(self) -> None: ...

    def save_snapshot(self) -> None: ...


class Maintenance:
    """Runs maintenance of one index: in the background as writes accumulate, or in the foreground."""

    def __init__(
        self, index: Maintained, *, threshold: int, quiet_snapshot_s: float = QUIET_SNAPSHOT_S
    ) -> None:
        self.index = index
        self.threshold = threshold
        self.quiet_snapshot_s = quiet_snapshot_s
        self._snapshot_timer: threading.Timer | None = None
        self.pending_writes = 0  # writes applied since the last run
        self._thread: threading.Thread | None = None
        self._quiet_timer: threading.Timer | None = None
        self._last_cleanup = 0.0  # time.monotonic() of the last background run that pruned versions
        self._closed = False

    # -- triggers -------------------------------------------------------------------------------
    def after_batch(self) -> None:
        """The writer applied a batch: start a run when enough writes accumulated, else (re)arm the
        timer that folds lagging rows in once writes pause."""
        if self.pending_writes >= self.threshold:
            self.start(fold=None)
        elif self.pending_writes:
            self._arm_quiet_fold()
        self._arm_snapshot()

    def _arm_snapshot(self) -> None:
        timer = self._snapshot_timer
        if timer is not None:
            timer.cancel()
        if self._closed:
            return
        timer = threading.Timer(self.quiet_snapshot_s, self._quiet_snapshot)
        timer.name = "vaultmem-index-quiet-snapshot"
        timer.daemon = True
        self._snapshot_timer = timer
        timer.start()

    def _quiet_snapshot(self) -> None:
        if self._closed:
            return
        if not self.index.writes_idle() or self.running():
            self._arm_snapshot()  # not quiet yet: once it is
            return
        try:
            self.index.save_snapshot()
        except Exception as exc:  # derived state: the close saves one again
            log.debug("saving the index snapshot after writes paused gave up: %s", exc)

    def _arm_quiet_fold(self) -> None:
        timer = self._quiet_timer
        if timer is not None:
            timer.cancel()
        timer = threading.Timer(QUIET_FOLD_S, self._quiet_fold)
        timer.name = "vaultmem-index-quiet-fold"
        timer.daemon = True
        self._quiet_timer = timer
        timer.start()

    def _quiet_fold(self) -> None:
        if self._closed or not self.pending_writes:
            return  # closing, or a maintenance run started since the last write
        if not self.index.writes_idle():
            return  # writes resumed; the next batch re-arms the timer
        if self.running():
            self._arm_quiet_fold()  # folds what arrived during the run once it is over
            return
        try:
            self.if_behind(after_writes=True)
        except IndexError_ as exc:
            log.debug("folding lagging rows after writes paused gave up: %s", exc)

    def if_behind(self, *, any_lag: bool = False, after_writes: bool = False) -> bool:
        """Start a background run if the full-text index lags the table by enough rows to fold
        them in (:func:`~vaultmem.index.compaction.should_fold`), or with ``any_lag`` by a single
        row; True if it was started.

        The write counter lives in memory, so a process that writes a little and exits (a stdio
        MCP server per agent session, a daemon killed or restarted) would never fold its rows in.
        Unindexed rows are still found, but BM25 then weighs terms by the indexed part's
        statistics and every search scans them. ``after_writes`` (the quiet fold): only while the
        writes that armed it are still pending, not once a run has taken them in.
        """
        if self._closed:
            return False
        behind = self.index.unindexed_rows()
        if behind == 0 or (not any_lag and not should_fold(behind, self.index.count())):
            return False
        return self.start(fold=True, after_writes=after_writes)

    # -- running --------------------------------------------------------------------------------
    def running(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    def start(self, *, fold: bool | None, after_writes: bool = False) -> bool:
        """Run in the background (unless a run is under way); ``fold=None`` folds only once
        enough rows lag, as runs started by writes do. It does not block writes: a compaction
        that loses a commit race to a write gives up and is retried at the next threshold.
        With ``after_writes``, only if writes are still pending once the lock is had (a run that
        held it meanwhile took them in). True if a run started."""
        with self.index.apply_lock:
            if self.running() or (after_writes and not self.pending_writes):
                return False
            self.pending_writes = 0
            self._thread = threading.Thread(
                target=self._background, args=(fold,), name="vaultmem-index-maintenance", daemon=True
            )
            self._thread.start()
            return True

    def _background(self, fold: bool | None) -> None:
        cleanup = time.monotonic() - self._last_cleanup >= CLEANUP_EVERY
        index = self.index
        try:
            with index.apply_lock:
                index.flush_cache()
            for path in index.table_paths():
                # Fold while writes go on, then compact with writes held back (compact_table says
                # why): a write waits for one tail compaction, tens of ms.
                fold_indices(path, fold=fold)
                with index.apply_lock:
                    compact_table(path)
            if cleanup:
                for path in index.table_paths():
                    prune_versions(path, older_than=CLEANUP_AFTER)
                self._last_cleanup = time.monotonic()
        except Exception as exc:  # LanceDB raises untyped errors; the next run tries again
            log.debug("background index maintenance gave up: %s", exc)
        finally:
            # Reopened whether or not the run completed: a handle keeps every index version it has
            # opened (one descriptor each), so a run that failed must still let them go.
            try:
                with index.apply_lock:
                    index.reopen_tables()
            except Exception as exc:  # the next read reports a broken index
                log.debug("reopening the index tables after maintenance failed: %s", exc)

    def run(self, *, fold: bool | None = True) -> None:
        """Run now, on this thread, with writes held back (after a background run finished)."""
        self.index.wait_for_writes()
        self.wait()  # a background run would race this one's commits
        with self.index.apply_lock:
            self.pending_writes = 0  # this run takes in every write so far (a quiet fold waiting on
            # the lock must not start another run after it)
            for attempt in range(ATTEMPTS):
                try:
                    self.index.flush_cache()
                    for path in self.index.table_paths():
                        optimize_table(path, fold=fold)
                        prune_versions(path, older_than=CLEANUP_AFTER)
                    self.index.reopen_tables()
                    break
                except Exception as exc:  # LanceDB raises untyped errors
                    if attempt + 1 == ATTEMPTS:
                        raise IndexError_(
                            f"the search index failed to optimise its tables: {exc}; if this persists, "
                            "rebuild it with `vaultmem reindex`"
                        ) from exc
                    time.sleep(0.05 * 2**attempt)
            self.pending_writes = 0

    def wait(self, timeout: float = 30.0) -> None:
        """Block until a background run (if any) finishes."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def close(self) -> None:
        """No new runs; wait for the one under way."""
        self._closed = True
        for timer in (self._quiet_timer, self._snapshot_timer):
            if timer is not None:
                timer.cancel()
        snapshot_timer = self._snapshot_timer
        if snapshot_timer is not None and snapshot_timer is not threading.current_thread():
            snapshot_timer.join()  # a save under way finishes before the index closes
        self.wait()
