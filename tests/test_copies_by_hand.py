"""A copy of a note made by hand carries its original's id; while both exist the original keeps the
id and the copy is searchable under one of its own. When the original goes, the copy is the note
the id names, as a start would find it: the SDK client against a real daemon over HTTP, the
watcher on the real files, then a restart."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
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


def test_when_the_original_is_deleted_its_copy_takes_the_id_and_the_links(
    vault: Path, tmp_path: Path
) -> None:
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


def _original_and_copy(wire: Wire, vault: Path) -> tuple[str, str, str]:
    """X (linked from Y) and a copy of its file made by hand, seen by the watcher: (x, y, copy's id)."""
    x = wire.create("The kiln fires at noon on Fridays.", title="Kiln schedule")
    y = wire.create("Who books the studio, and when", title="Booking rules")
    wire.store(action="link", source_id=y, target_id=x, edge_type="depends_on")
    (vault / COPY).write_bytes((vault / ORIGINAL).read_bytes())
    both = wait_for(lambda: [h for h in [hits(wire)] if len(h) == 2])[0]
    assert both["kiln-schedule"] == x
    return x, y, both["kiln-schedule-copy"]


def _holds(wire: Wire, x: str, y: str, copy_id: str) -> None:
    """The original holds X and Y's link; the copy answers under its own id."""
    assert hits(wire) == {"kiln-schedule": x, "kiln-schedule-copy": copy_id}
    assert path_of(wire, x) == ORIGINAL
    assert upstream(wire, y) == [("depends_on", x)]


def test_the_original_keeps_its_id_when_touched_or_edited_beside_its_copy(
    vault: Path, tmp_path: Path
) -> None:
    """Touched while the daemon runs (same bytes, new mtime: a backup restored, a checkout), then
    edited while it is stopped: at the next starts the original, which held the id, keeps it (the
    copy, unchanged, used to take it), and search and get agree."""
    with running_daemon(vault, tmp_path / "token") as running:
        wire = Wire(running)
        x, y, copy_id = _original_and_copy(wire, vault)
        os.utime(vault / ORIGINAL)
        time.sleep(1.0)  # past the watcher's debounce
    for _ in range(2):
        with running_daemon(vault, tmp_path / "token") as restarted:
            _holds(Wire(restarted), x, y, copy_id)
    original = vault / ORIGINAL
    original.write_text(original.read_text(encoding="utf-8").replace("Fridays", "Fridays and Mondays"))
    for _ in range(2):
        with running_daemon(vault, tmp_path / "token") as restarted:
            _holds(Wire(restarted), x, y, copy_id)


def test_the_original_keeps_its_id_when_both_files_are_edited_at_once(vault: Path, tmp_path: Path) -> None:
    """A search-and-replace over the folder edits the original and its copy within the watcher's
    debounce; the copy sorts first. The original still carries the id: it keeps it."""
    with running_daemon(vault, tmp_path / "token") as running:
        wire = Wire(running)
        x, y, _ = _original_and_copy(wire, vault)
        for rel in (COPY, ORIGINAL):
            path = vault / rel
            path.write_text(path.read_text(encoding="utf-8").replace("noon", "one pm"), encoding="utf-8")
        wait_for(lambda: "one pm" in str(structured(wire.call("memory_search", query="one pm"))))
        time.sleep(1.0)
        assert hits(wire)["kiln-schedule"] == x
        assert path_of(wire, x) == ORIGINAL
        assert upstream(wire, y) == [("depends_on", x)]


@pytest.mark.parametrize("new_name", ["aaa-kiln-schedule.md", "zzz-kiln-schedule.md"])
def test_a_renamed_original_keeps_its_id_against_its_copy(vault: Path, tmp_path: Path, new_name: str) -> None:
    """Renamed by hand (a file manager, Obsidian closed) while a copy exists, the new name sorting
    before or after the old one: the renamed note keeps its id and its links, now and after a start."""
    renamed = f"memory/semantic/{new_name}"
    with running_daemon(vault, tmp_path / "token") as running:
        wire = Wire(running)
        x, y, copy_id = _original_and_copy(wire, vault)
        (vault / ORIGINAL).rename(vault / renamed)
        wait_for(lambda: path_of(wire, x) == renamed)
        wait_for(lambda: hits(wire).get("kiln-schedule-copy") == copy_id)
        assert upstream(wire, y) == [("depends_on", x)]
    with running_daemon(vault, tmp_path / "token") as restarted:
        wire = Wire(restarted)
        assert path_of(wire, x) == renamed
        assert hits(wire)["kiln-schedule-copy"] == copy_id


def test_a_conflict_copy_that_yields_its_id_to_a_plain_file_stays_searchable(
    vault: Path, tmp_path: Path
) -> None:
    """The original is deleted, so its sync client's conflict copy holds the id; then a plain copy
    of that file is made. The plain file takes the id back (a conflict copy only holds an id no
    plain file carries), and the conflict copy is answered under an id of its own, not dropped."""
    conflicted = "memory/semantic/kiln-schedule (conflicted copy 2026-12-02).md"
    restored = "memory/semantic/kiln-schedule-restored.md"
    with running_daemon(vault, tmp_path / "token") as running:
        wire = Wire(running)
        x = wire.create("The kiln fires at noon on Fridays.", title="Kiln schedule")
        (vault / conflicted).write_bytes((vault / ORIGINAL).read_bytes())
        wait_for(lambda: len(hits(wire)) == 2)
        (vault / ORIGINAL).unlink()
        wait_for(lambda: path_of(wire, x) == conflicted)
        (vault / restored).write_bytes((vault / conflicted).read_bytes())
        wait_for(lambda: path_of(wire, x) == restored)
        found = wait_for(lambda: [h for h in [hits(wire)] if len(h) == 2])[0]
        assert found["kiln-schedule-restored"] == x
        own = found["kiln-schedule (conflicted copy 2026-12-02)"]
        assert own != x
    with running_daemon(vault, tmp_path / "token") as restarted:
        assert hits(Wire(restarted)) == found
