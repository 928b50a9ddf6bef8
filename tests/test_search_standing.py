"""Standing (superseded / contradicted) from typed links, and optional recency weighting
(graph document, memory_recall action=search: `standing`, `superseded_by`, `contradicted_by`,
`recency_weight`, `recency_half_life_days`)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from conftest import FakeClock
from layers import parts

from vaultmem.config import Settings
from vaultmem.errors import InvalidInput
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.memory import Memory, SearchSpec
from vaultmem.operations.search import recency_score

OLD = "01a20000-0000-7000-8000-0000000000a1"
NEW = "01a20000-0000-7000-8000-0000000000a2"
RIVAL = "01a20000-0000-7000-8000-0000000000a3"


def note(note_id: str, title: str, extra: str = "", status: str = "active") -> str:
    return f"---\nid: {note_id}\ntitle: {title}\nstatus: {status}\n{extra}---\n{title} body.\n"


@pytest.fixture
def runtime(vault: Path) -> Memory:
    folder = vault / "memory" / "semantic"
    (folder / "old-ttl.md").write_text(note(OLD, "Old TTL"), encoding="utf-8")
    (folder / "new-ttl.md").write_text(note(NEW, "New TTL", 'replaces: ["[[old-ttl]]"]\n'), encoding="utf-8")
    (folder / "rival-ttl.md").write_text(
        note(RIVAL, "Rival TTL", 'contradicts: ["[[new-ttl]]"]\n'), encoding="utf-8"
    )
    rt = Memory(Settings.resolve(vault, durable=False), embedder=FakeEmbedder())
    rt.reconcile()
    yield rt
    rt.close()


def live(rt: Memory):  # type: ignore[no-untyped-def]
    def is_live(note_id: str) -> bool:
        entry = parts(rt).catalog.by_id(note_id)
        return entry is not None and entry.status in ("active", "unfiled")

    return is_live


def test_a_note_a_live_note_replaces_is_superseded(runtime: Memory) -> None:
    standing = parts(runtime).graph.standing(OLD, "active", live(runtime))
    assert standing.standing == "superseded"
    assert standing.superseded_by == (NEW,)


def test_contradicts_is_symmetric(runtime: Memory) -> None:
    assert parts(runtime).graph.standing(NEW, "active", live(runtime)).contradicted_by == (RIVAL,)
    assert parts(runtime).graph.standing(RIVAL, "active", live(runtime)).contradicted_by == (NEW,)


def test_a_deleted_replacement_no_longer_supersedes(runtime: Memory) -> None:
    runtime.forget(NEW)
    assert parts(runtime).graph.standing(OLD, "active", live(runtime)).standing == "current"


def test_status_superseded_alone_is_superseded(runtime: Memory) -> None:
    assert parts(runtime).graph.standing(RIVAL, "superseded", live(runtime)).standing == "superseded"


def test_recency_halves_each_half_life() -> None:
    now = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)
    assert recency_score("2026-11-30T00:00:00Z", now, 30) == pytest.approx(1.0)
    assert recency_score("2026-10-31T00:00:00Z", now, 30) == pytest.approx(0.5)
    assert recency_score("not a date", now, 30) == 0.0


def test_recency_weight_reorders_and_zero_keeps_the_order(vault: Path, clock: FakeClock) -> None:
    clock.set(dt.datetime(2026, 11, 30, tzinfo=dt.UTC))
    folder = vault / "memory" / "semantic"
    dates = {OLD: "2025-01-01T00:00:00Z", NEW: "2026-11-29T00:00:00Z"}
    texts = {OLD: "recency probe", NEW: "recency probe with a few more words beside it"}
    for note_id, name in ((OLD, "old-probe"), (NEW, "new-probe")):
        (folder / f"{name}.md").write_text(
            f"---\nid: {note_id}\ntitle: {name}\nstatus: active\nupdated: '{dates[note_id]}'\n---\n"
            f"{texts[note_id]}\n",
            encoding="utf-8",
        )
    with Memory(Settings.resolve(vault, durable=False), embedder=FakeEmbedder(), clock=clock) as memory:
        memory.reconcile()

        def order(weight: float) -> list[str]:
            spec = SearchSpec(
                "recency probe", frozenset({"active"}), recency_weight=weight, min_relevance=0.0
            )
            return [row["thought"].id for row in memory.recall_search(spec).items]  # type: ignore[index, union-attr]

        assert order(0.0) == [OLD, NEW]
        assert order(0.7) == [NEW, OLD]  # the fresher note rises above the better match
        with pytest.raises(InvalidInput):
            order(1.5)
