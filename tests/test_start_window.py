"""A person's save that lands while the daemon starts is an event, not a change left for the rescan.

A start scans the vault (the catalog, by mtime and size), opens the index, reconciles the two and
then serves; the watcher's inotify watches used to go up only after the reconcile. A note saved in
Obsidian between the scan and the watches was neither reconciled nor seen as an event: it stayed
unsearchable, and uncommitted, until the periodic rescan five minutes later. The watches now go up
before the scan. The save is placed in that window on purpose (the facade's reconcile, which the
daemon calls right after opening, saves the note first); the rest is real: the daemon over HTTP
with the SDK client, the watcher on the real files, git.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git, hand_write
from graph_wire import Wire
from mcp_harness import running_daemon, structured, wait_for

from vaultmem.memory import Memory, Progress, ReconcileReport

NOTE = "memory/semantic/kiln-notes.md"


def found(wire: Wire, query: str) -> list[str]:
    results = structured(wire.call("memory_search", query=query, limit=5))["results"]
    return [hit["slug"] for hit in results]


def test_a_save_between_the_starts_scan_and_its_watches_is_indexed_and_committed(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hand_write(vault, NOTE, "# Kiln notes\n\nThe kiln fires at noon on Fridays.\n", commit=True)
    with running_daemon(vault, tmp_path / "token") as first:
        assert "kiln-notes" in found(Wire(first), "kiln fires noon")

    reconcile = Memory.reconcile

    def saved_while_starting(self: Memory, progress: Progress | None = None) -> ReconcileReport:
        (vault / NOTE).write_text("# Kiln notes\n\nThe glaze cools overnight in the shed.\n", "utf-8")
        return reconcile(self, progress)

    monkeypatch.setattr(Memory, "reconcile", saved_while_starting)
    with running_daemon(vault, tmp_path / "token", rescan_interval=300.0) as started:
        wire = Wire(started)
        assert wait_for(lambda: "kiln-notes" in found(wire, "glaze cools overnight shed"), timeout=15)
        wait_for(lambda: "glaze cools" in git(vault, "show", "HEAD:" + NOTE), timeout=15)
    assert git(vault, "status", "--porcelain") == ""
