"""The timeline behind the context step: each note's writer's sequence and its project's."""

from __future__ import annotations

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
