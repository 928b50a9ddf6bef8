"""The index's write queue: order, read-your-writes, and full batches under a bulk load."""

from __future__ import annotations

import threading

from vaultmem.index.records import NoteRecord
from vaultmem.index.writer import DeleteNotes, UpsertNotes, WriteOp, WriteQueue


def _records(start: int, count: int) -> list[NoteRecord]:
    return [
        NoteRecord(
            id=f"id-{i}",
            path=f"n{i}.md",
            slug=f"n{i}",
            title="t",
            kind="note",
            status="active",
            project=None,
            tags=(),
            text="x",
            content_hash=str(i),
            created=None,
            updated=None,
        )
        for i in range(start, start + count)
    ]


def test_ops_queued_while_a_batch_is_applied_form_the_next_batch() -> None:
    """The queue bound counts queued notes, not the batch being applied: a bulk reindex keeps
    submitting while the writer embeds, so every batch after the first is a full one."""
    batches: list[list[WriteOp]] = []
    first_taken, release = threading.Event(), threading.Event()

    def apply(batch: list[WriteOp]) -> None:
        batches.append(batch)
        if len(batches) == 1:
            first_taken.set()
            assert release.wait(10)

    queue = WriteQueue(apply, max_pending=128)
    queue.submit(UpsertNotes(_records(0, 64)))
    assert first_taken.wait(10)
    queue.submit(UpsertNotes(_records(64, 64)))  # neither waits for the first batch to finish
    queue.submit(UpsertNotes(_records(128, 64)))
    release.set()
    assert queue.wait(10)
    queue.close(10)
    assert [len(b) for b in batches] == [1, 2]


def test_a_full_queue_makes_submitters_wait_and_order_is_kept() -> None:
    applied: list[WriteOp] = []
    gate = threading.Event()

    def apply(batch: list[WriteOp]) -> None:
        assert gate.wait(10)
        applied.extend(batch)

    queue = WriteQueue(apply, max_pending=2)
    ops: list[WriteOp] = [DeleteNotes([f"id-{i}"]) for i in range(6)]
    submitter = threading.Thread(target=lambda: [queue.submit(op) for op in ops])
    submitter.start()
    submitter.join(0.3)
    assert submitter.is_alive()  # 1 taken + 2 queued: the rest wait for room
    gate.set()
    submitter.join(10)
    assert queue.wait(10)
    queue.close(10)
    assert applied == ops
