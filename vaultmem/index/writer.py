"""The index's single writer: changes are queued, applied in order on one thread, and awaited by reads.

A write to the vault must not wait for the index (embedding a note and a LanceDB commit cost
10-20 ms on two cores), yet the next search must see it (read your writes). So a change is
queued and the call returns; one thread applies queued changes in order, taking whatever has
accumulated as one batch (one embedding call, one LanceDB commit); and every read first waits
until the changes queued before it have been applied. A read that follows a write by more than
a few milliseconds finds the queue empty and does not wait at all.

The queue is bounded, so a bulk producer (a reindex) is held back instead of piling up work a
search would then have to wait for.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from vaultmem.index.records import NoteRecord

__all__ = ["DeleteNotes", "UpsertNotes", "WriteOp", "WriteQueue"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class UpsertNotes:
    records: Sequence[NoteRecord]


@dataclass(frozen=True)
class DeleteNotes:
    ids: Sequence[str]


WriteOp = UpsertNotes | DeleteNotes


def _weight(op: WriteOp) -> int:
    return len(op.records) if isinstance(op, UpsertNotes) else 1


class WriteQueue:
    """Ordered, batched application of index writes on one daemon thread.

    ``apply`` receives every op queued since the last batch, in order; it must not raise (the
    index logs and keeps going: the vault is the source of truth, and a reconcile repairs what a
    failed write left out). ``max_pending`` bounds the queued notes (a batch being applied is no
    longer queued: at most ``2 * max_pending`` notes are held at once).
    """

    def __init__(self, apply: Callable[[list[WriteOp]], None], *, max_pending: int = 256) -> None:
        self._apply = apply
        self._max_pending = max_pending
        self._cond = threading.Condition()
        self._ops: deque[WriteOp] = deque()
        self._pending = 0
        self._submitted = 0
        self._applied = 0
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="vaultmem-index-writer", daemon=True)
        self._thread.start()

    def submit(self, op: WriteOp) -> None:
        """Queue ``op`` (waits while the queue is full)."""
        weight = _weight(op)
        with self._cond:
            if self._closed:
                raise RuntimeError("the index writer is closed")
            while self._pending and self._pending + weight > self._max_pending:
                self._cond.wait()
            self._ops.append(op)
            self._pending += weight
            self._submitted += 1
            self._cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every op queued before this call is applied; False on timeout."""
        if threading.current_thread() is self._thread:
            return True  # the writer's own reads see its own state
        with self._cond:
            target = self._submitted
            return self._cond.wait_for(lambda: self._applied >= target, timeout)

    def on_writer_thread(self) -> bool:
        """True when called from the writer thread itself (inside ``apply``)."""
        return threading.current_thread() is self._thread

    @property
    def idle(self) -> bool:
        """True when nothing is queued or being applied."""
        with self._cond:
            return self._applied >= self._submitted

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._ops) or self._closed)
                if not self._ops:
                    return  # closed and drained
                batch = list(self._ops)
                self._ops.clear()
                # Taken ops leave the queue now, not when applied: submitters fill it again while
                # this batch is embedded, so the next batch is a full one (a bulk reindex whose
                # batches shrank to one submission each embedded ~25% slower: more padding).
                self._pending -= sum(_weight(op) for op in batch)
                self._cond.notify_all()
            try:
                self._apply(batch)
            except Exception:  # pragma: no cover - apply() is meant to catch its own errors
                log.exception("the index writer failed to apply %d change(s)", len(batch))
            with self._cond:
                self._applied += len(batch)
                self._cond.notify_all()

    def close(self, timeout: float | None = None) -> None:
        """Apply what is queued, then stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
