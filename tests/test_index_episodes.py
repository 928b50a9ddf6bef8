"""The context step's neighbours come only from orders whose consecutive notes belong together."""

from __future__ import annotations

import numpy as np

from vaultmem.index.episodes import Episodes
from vaultmem.index.mirror import NoteMirror
from vaultmem.index.records import NoteRecord
from vaultmem.index.timeline import Timeline

DIM = 16


def _record(note_id: str, session: str | None, second: int) -> NoteRecord:
    created = f"2025-01-01T10:{second // 60:02d}:{second % 60:02d}Z"
    return NoteRecord(
        id=note_id, path=f"{note_id}.md", slug=note_id, title=note_id, kind="reference",
        status="active", project="p", tags=(), text=note_id, content_hash=note_id,
        created=created, updated=created, session=session,
    )  # fmt: skip


def _index(rows: list[tuple[NoteRecord, np.ndarray]]) -> Episodes:
    mirror, timeline = NoteMirror(DIM), Timeline()
    mirror.put([r for r, _ in rows], np.stack([v for _, v in rows]).astype(np.float32))
    for r, _ in rows:
        timeline.add(r.id, r.project, r.created, r.session)
    return Episodes(timeline, mirror)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def test_a_session_whose_notes_follow_each_other_lends_and_an_import_of_unrelated_notes_does_not() -> None:
    rng = np.random.default_rng(15)
    rows: list[tuple[NoteRecord, np.ndarray]] = []
    topic = _unit(rng.normal(size=DIM))
    for n in range(12):  # a conversation: each turn close to the one before it
        topic = _unit(topic + 0.4 * rng.normal(size=DIM))
        rows.append((_record(f"chat{n}", "chat", 2 * n), topic))
    for n in range(12):  # a bulk import: one unrelated note after another
        rows.append((_record(f"doc{n}", "import", 2 * n + 1), _unit(rng.normal(size=DIM))))
    episodes = _index(rows)
    chat = episodes.neighbours("chat5", 600, radius=2, floor=0.02)
    assert sorted(chat) == [(1, "chat4"), (1, "chat6"), (2, "chat3"), (2, "chat7")]
    # The import's own order is not coherent, and neither is the project's (the two interleave).
    assert episodes.neighbours("doc5", 600, radius=2, floor=0.02) == []


def test_a_sequence_too_short_to_judge_counts_as_an_episode() -> None:
    rng = np.random.default_rng(1)
    rows = [(_record(f"n{n}", "s", n), _unit(rng.normal(size=DIM))) for n in range(3)]
    episodes = _index(rows)
    assert (1, "n0") in episodes.neighbours("n1", 600, radius=1, floor=0.02)
