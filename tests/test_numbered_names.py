"""``Lecture (1).md`` is a sync client's copy only beside ``Lecture.md``; otherwise it is the
person's own name for a note.

Found by a helper attacking renames (2026-12-03): a person's ``Lecture (1).md`` and ``Lecture
(2).md``, with no ``Lecture.md`` anywhere, were reported as sync conflict copies (health `warning`
for good, with the advice to merge each into its original and delete it) and tagged
``conflict-copy`` in search. The SDK client against a real daemon over HTTP.
"""

from __future__ import annotations

from pathlib import Path

from conftest import hand_write
from graph_wire import Wire
from mcp_harness import running_daemon, structured


def copies_reported(wire: Wire) -> list[str]:
    health = wire.ok("memory_status", action="health", include_details=True)["item"]
    check = next(c for c in health["checks"] if c["name"] == "sync_conflict_copies")
    return [] if check["ok"] else sorted(str(d) for d in check.get("details") or [])


def tags_of(wire: Wire, query: str) -> dict[str, list[str]]:
    hits = structured(wire.call("memory_search", query=query, limit=10))["results"]
    return {hit["slug"]: hit["tags"] for hit in hits}


def test_numbered_names_are_copies_only_beside_their_original(vault: Path, tmp_path: Path) -> None:
    hand_write(vault, "Lectures/Lecture (1).md", "Thermodynamics, the first law.\n", commit=True)
    hand_write(vault, "Lectures/Lecture (2).md", "Thermodynamics, entropy.\n", commit=True)
    hand_write(vault, "Reports/Report.md", "Quarterly kiln report.\n", commit=True)
    hand_write(vault, "Reports/Report (1).md", "Quarterly kiln report, laptop.\n", commit=True)
    with running_daemon(vault, tmp_path / "token") as daemon:
        wire = Wire(daemon)
        reported = " ".join(copies_reported(wire))
        assert "Report (1).md" in reported and "Lecture" not in reported
        lectures = tags_of(wire, "thermodynamics")
        assert set(lectures) == {"Lecture (1)", "Lecture (2)"}
        assert all("conflict-copy" not in tags for tags in lectures.values())
        assert "conflict-copy" in tags_of(wire, "quarterly kiln report")["Report (1)"]
