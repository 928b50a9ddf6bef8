"""The timeline behind the context step: each note's writer's sequence and its project's."""

from __future__ import annotations

import random

from vaultmem.index.timeline import Timeline, parse_timestamp


def _ids(pairs: list[tuple[int, str]]) -> list[str]:
    return sorted(i for _, i in pairs)


def test_neighbours_are_consecutive_same_project_and_within_the_window() -> None:
    t = Timeline()
    t.add("a", "p", "2025-01-01T10:00:00Z")
    t.add("b", "p", "2025-01-01T10:00:30Z")
    t.add("c", "p", "2025-01-01T12:00:00Z")
    t.add("x", "q", "2025-01-01T10:00:10Z")
    assert t.neighbours("a", 60) == [(1, "b")]
    assert t.neighbours("b", 60) == [(1, "a")]
    assert t.neighbours("c", 60) == []
    assert _ids(t.neighbours("b", 10_000)) == ["a", "c"]


def test_a_radius_walks_steps_no_longer_than_the_window() -> None:
    t = Timeline()
    for n, at in enumerate(["10:00:00", "10:05:00", "10:09:00", "11:00:00"]):
        t.add(f"n{n}", "p", f"2025-01-01T{at}Z")
    assert sorted(t.neighbours("n0", 600, radius=2)) == [(1, "n1"), (2, "n2")]
    assert sorted(t.neighbours("n2", 600, radius=3)) == [(1, "n1"), (2, "n0")]


def test_two_sessions_writing_into_one_project_keep_their_own_sequences() -> None:
    t = Timeline()
    for n in range(6):  # two writers interleaved, a second apart: A B A B A B
        t.add(f"{'AB'[n % 2]}{n}", "p", f"2025-01-01T10:00:0{n}Z", session="AB"[n % 2])
    assert t.neighbours("A2", 600, order="session") == [(1, "A0"), (1, "A4")]
    assert _ids(t.neighbours("A2", 600, order="project")) == ["B1", "B3"]
    assert t.in_session("A2", 600, -1) == "A0" and t.in_session("A2", 600, 1) == "A4"


def test_notes_without_a_session_form_one_sequence_per_project_and_have_no_session_neighbour() -> None:
    t = Timeline()
    t.add("hand1", "p", "2025-01-01T10:00:00Z")
    t.add("agent", "p", "2025-01-01T10:00:01Z", session="s")
    t.add("hand2", "p", "2025-01-01T10:00:02Z")
    assert t.neighbours("hand1", 600, order="session") == [(1, "hand2")]
    assert t.in_session("hand2", 600, -1) is None


def test_moving_and_removing_notes() -> None:
    t = Timeline()
    t.add("a", None, "2025-01-01")
    t.add("b", None, "2025-01-01T00:00:01")
    t.add("a", None, "2030-01-01")
    assert t.neighbours("b", 60) == []
    before = t.generation(("project", "", None))
    t.remove("a")
    assert len(t) == 1 and t.neighbours("a", 60) == []
    assert t.generation(("project", "", None)) != before


def test_unparsable_dates_have_no_neighbours() -> None:
    assert parse_timestamp("yesterday") is None
    t = Timeline()
    t.add("a", "p", "yesterday")
    assert t.neighbours("a", 60) == []


def test_a_reload_holds_what_the_same_notes_added_one_by_one_hold() -> None:
    """``replace`` (the index's open: one pass over every note, its two sequences filled at once)
    and ``add`` (each write) give the same sequences and neighbours, for notes of many projects and
    sessions, ties in time, notes without a session or project, and dates that do not parse."""
    rng = random.Random(7)
    items = [
        (
            f"0190a000-0000-7000-8000-{n:012d}",
            rng.choice([None, "alpha", "beta", "gamma"]),
            rng.choice(["2025-01-01T10:00:00Z", "not a date", ""])
            if n % 11 == 0
            else f"2025-01-0{1 + n % 3}T10:{rng.randrange(60):02d}:00+00:00",
            rng.choice([None, "s1", "s2", "s3"]),
        )
        for n in range(400)
    ]
    reloaded, added = Timeline(), Timeline()
    reloaded.replace(items)
    for note_id, project, created, session in reversed(items):
        added.add(note_id, project, created, session)
    for note_id, *_ in items:
        assert reloaded.keys_of(note_id) == added.keys_of(note_id)
        for order in ("project", "session"):
            assert reloaded.neighbours(note_id, 3600, 3, order) == added.neighbours(note_id, 3600, 3, order)
