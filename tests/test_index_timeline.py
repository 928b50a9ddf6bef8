"""The per-project timeline behind the context step."""

from __future__ import annotations

from vaultmem.index.timeline import Timeline, parse_timestamp


def test_neighbours_are_consecutive_same_project_and_within_the_window() -> None:
    t = Timeline()
    t.add("a", "p", "2025-01-01T10:00:00Z")
    t.add("b", "p", "2025-01-01T10:00:30Z")
    t.add("c", "p", "2025-01-01T12:00:00Z")
    t.add("x", "q", "2025-01-01T10:00:10Z")
    assert t.neighbours("a", 60) == ["b"]
    assert t.neighbours("b", 60) == ["a"]
    assert t.neighbours("c", 60) == []
    assert sorted(t.neighbours("b", 10_000)) == ["a", "c"]


def test_moving_and_removing_notes() -> None:
    t = Timeline()
    t.add("a", None, "2025-01-01")
    t.add("b", None, "2025-01-01T00:00:01")
    t.add("a", None, "2030-01-01")
    assert t.neighbours("b", 60) == []
    t.remove("a")
    assert len(t) == 1 and t.neighbours("a", 60) == []


def test_unparsable_dates_have_no_neighbours() -> None:
    assert parse_timestamp("yesterday") is None
    t = Timeline()
    t.add("a", "p", "yesterday")
    assert t.neighbours("a", 60) == []
