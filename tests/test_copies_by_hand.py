"""A copy of a note made by hand carries its original's id; while both exist the original keeps the
id and the copy is searchable under one of its own. When the original goes, the copy is the note
the id names, as a start would find it: the SDK client against a real daemon over HTTP, the
watcher on the real files, then a restart."""

from __future__ import annotations

from pathlib import Path

from graph_wire import Wire
from mcp_harness import running_daemon, structured, wait_for

ORIGINAL = "memory/semantic/kiln-schedule.md"
COPY = "memory/semantic/kiln-schedule-copy.md"
QUERY = "the kiln fires at noon on Fridays"


def hits(wire: Wire) -> dict[str, str]:
    """``{slug: id}`` of the kiln notes a search finds."""
    found = structured(wire.call("memory_search", query=QUERY, limit=10))["results"]
    return {hit["slug"]: hit["id"] for hit in found if hit["slug"].startswith("kiln-")}


def path_of(wire: Wire, note_id: str) -> str | None:
    got = wire.call("memory_recall", action="get", thought_id=note_id, fields=["path"])
    return None if got.is_error else (got.structured_content or {})["result"]["item"]["path"]


def upstream(wire: Wire, note_id: str) -> list[tuple[str, str]]:
    got = wire.recall(action="get", thought_id=note_id, include_edges=True)["item"]
    return [(row["edge"]["type"], row["thought"]["id"]) for row in got["upstream"]]


def test_when_the_original_is_deleted_its_copy_takes_the_id_and_the_links(vault: Path, tmp_path: Path) -> None:
    with running_daemon(vault, tmp_path / "token") as running:
        wire = Wire(running)
        x = wire.create("The kiln fires at noon on Fridays.", title="Kiln schedule")
        y = wire.create("Who books the studio, and when", title="Booking rules")
        wire.store(action="link", source_id=y, target_id=x, edge_type="depends_on")
        assert path_of(wire, x) == ORIGINAL
        (vault / COPY).write_bytes((vault / ORIGINAL).read_bytes())
        both = wait_for(lambda: [h for h in [hits(wire)] if len(h) == 2])[0]  # the watcher saw the copy
        assert both["kiln-schedule"] == x  # the original keeps its id; the copy has one of its own
        copy_id = both["kiln-schedule-copy"]
        assert copy_id != x

        (vault / ORIGINAL).unlink()
        wait_for(lambda: hits(wire) == {"kiln-schedule-copy": x})  # once the watcher saw the deletion
        assert path_of(wire, x) == COPY
        assert path_of(wire, copy_id) is None  # no row left under the copy's own id
        assert upstream(wire, y) == [("depends_on", x)]
    with running_daemon(vault, tmp_path / "token") as restarted:  # a start sees the same
        wire = Wire(restarted)
        assert path_of(wire, x) == COPY
        assert hits(wire) == {"kiln-schedule-copy": x}
        assert upstream(wire, y) == [("depends_on", x)]


def test_a_note_given_anothers_id_while_nothing_ran_is_answered_under_an_id_of_its_own(
    vault: Path, tmp_path: Path
) -> None:
    """B's ``id:`` is changed by hand to A's while the daemon is stopped. At the next start A,
    unchanged since it was read, keeps its id; B is reported (it carries an id another file holds)
    and answered under the id derived from its path. No answer carries B's old id."""
    with running_daemon(vault, tmp_path / "token") as running:
        wire = Wire(running)
        a = wire.create("The kiln fires at noon on Fridays.", title="Kiln schedule")
        b = wire.create("The kiln fires at noon on Mondays too.", title="Kiln extra day")
    extra = vault / "memory/semantic/kiln-extra-day.md"
    extra.write_text(extra.read_text(encoding="utf-8").replace(f"id: {b}", f"id: {a}"), encoding="utf-8")
    with running_daemon(vault, tmp_path / "token") as restarted:
        wire = Wire(restarted)
        found = hits(wire)
        assert found["kiln-schedule"] == a
        assert found["kiln-extra-day"] not in (a, b)
        assert path_of(wire, a) == ORIGINAL
        assert path_of(wire, b) is None
        assert path_of(wire, found["kiln-extra-day"]) == "memory/semantic/kiln-extra-day.md"
        health = wire.ok("memory_status", action="health", include_details=True)["item"]
        reported = " ".join(str(c.get("details")) for c in health["checks"])
        assert "kiln-extra-day.md: has the same id as memory/semantic/kiln-schedule.md" in reported
