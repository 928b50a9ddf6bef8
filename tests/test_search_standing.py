"""Standing (superseded / contradicted) from typed links, and optional recency weighting
(graph document, memory_recall action=search: `standing`, `superseded_by`, `contradicted_by`,
`recency_weight`, `recency_half_life_days`)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from vaultmem.config import Settings
from vaultmem.errors import InvalidInput
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.index.records import NoteRecord, SearchHit
from vaultmem.runtime import Runtime
from vaultmem.search import recency_score, with_recency

OLD = "01a20000-0000-7000-8000-0000000000a1"
NEW = "01a20000-0000-7000-8000-0000000000a2"
RIVAL = "01a20000-0000-7000-8000-0000000000a3"


def note(note_id: str, title: str, extra: str = "", status: str = "active") -> str:
    return f"---\nid: {note_id}\ntitle: {title}\nstatus: {status}\n{extra}---\n{title} body.\n"


@pytest.fixture
def runtime(vault: Path) -> Runtime:
    folder = vault / "memory" / "semantic"
    (folder / "old-ttl.md").write_text(note(OLD, "Old TTL"), encoding="utf-8")
    (folder / "new-ttl.md").write_text(note(NEW, "New TTL", 'replaces: ["[[old-ttl]]"]\n'), encoding="utf-8")
    (folder / "rival-ttl.md").write_text(
        note(RIVAL, "Rival TTL", 'contradicts: ["[[new-ttl]]"]\n'), encoding="utf-8"
    )
    rt = Runtime(Settings.resolve(vault, durable=False), embedder=FakeEmbedder())
    rt.reconcile()
    yield rt
    rt.close()


def live(rt: Runtime):  # type: ignore[no-untyped-def]
    def is_live(note_id: str) -> bool:
        entry = rt.service.catalog.by_id(note_id)
        return entry is not None and entry.status in ("active", "unfiled")

    return is_live


def test_a_note_a_live_note_replaces_is_superseded(runtime: Runtime) -> None:
    standing = runtime.edges.standing(OLD, "active", live(runtime))
    assert standing.standing == "superseded"
    assert standing.superseded_by == (NEW,)


def test_contradicts_is_symmetric(runtime: Runtime) -> None:
    assert runtime.edges.standing(NEW, "active", live(runtime)).contradicted_by == (RIVAL,)
    assert runtime.edges.standing(RIVAL, "active", live(runtime)).contradicted_by == (NEW,)


def test_a_deleted_replacement_no_longer_supersedes(runtime: Runtime) -> None:
    runtime.service.forget(NEW)
    assert runtime.edges.standing(OLD, "active", live(runtime)).standing == "current"


def test_status_superseded_alone_is_superseded(runtime: Runtime) -> None:
    assert runtime.edges.standing(RIVAL, "superseded", live(runtime)).standing == "superseded"


def record(note_id: str, updated: str) -> NoteRecord:
    return NoteRecord(
        note_id, f"{note_id}.md", note_id, note_id, "fix", "active", None, (), "x", "h", updated, updated
    )


def test_recency_halves_each_half_life() -> None:
    now = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)
    assert recency_score("2026-11-30T00:00:00Z", now, 30) == pytest.approx(1.0)
    assert recency_score("2026-10-31T00:00:00Z", now, 30) == pytest.approx(0.5)
    assert recency_score("not a date", now, 30) == 0.0


def test_recency_weight_reorders_and_zero_keeps_the_order() -> None:
    now = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)
    old = SearchHit(record("a", "2025-01-01T00:00:00Z"), 1.0, ("bm25",))
    fresh = SearchHit(record("b", "2026-11-29T00:00:00Z"), 0.8, ("bm25",))
    assert [h.record.id for h, _ in with_recency([old, fresh], 0.0, 30, now)] == ["a", "b"]
    assert [h.record.id for h, _ in with_recency([old, fresh], 0.5, 30, now)] == ["b", "a"]
    with pytest.raises(InvalidInput):
        with_recency([old], 1.5, 30, now)
