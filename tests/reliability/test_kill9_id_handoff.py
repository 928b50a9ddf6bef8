"""A kill -9 right after the watcher handed an id on (docs/reliability.md, row 25, case 4).

A person copies a note by hand, then deletes the original while ``vaultmem serve`` runs: the
watcher hands the original's id and links to the copy. A supervisor then SIGKILLs the daemon (no
close, no snapshot save, no final commit). The next start must answer as the running daemon did:
``memory_recall get`` and ``memory_search`` agree on where the id lives, no row is left under the
copy's own id, and the link follows. Before row 25's fix search and get disagreed after such a kill.
"""

from __future__ import annotations

import time
from pathlib import Path

from _support import ServeProcess, assert_git_clean_and_sound
from graph_wire import Wire
from mcp_harness import wait_for
from test_copies_by_hand import COPY, ORIGINAL, hits, path_of, upstream


class _Served:
    """What :class:`Wire` needs of a daemon, for one run as a subprocess."""

    def __init__(self, process: ServeProcess) -> None:
        self.url = process.url
        self._token = process.token

    def token(self) -> str:
        return self._token


def wire_of(process: ServeProcess) -> Wire:
    return Wire(_Served(process))  # type: ignore[arg-type]


def linked_pair(wire: Wire) -> tuple[str, str]:
    """X (the kiln schedule, at ``ORIGINAL``) and Y, which depends on X: ``(x, y)``."""
    x = wire.create("The kiln fires at noon on Fridays.", title="Kiln schedule")
    y = wire.create("Who books the studio, and when", title="Booking rules")
    wire.store(action="link", source_id=y, target_id=x, edge_type="depends_on")
    return x, y


def test_a_kill_9_after_the_watcher_handed_an_id_on_leaves_search_and_get_agreeing(
    vault: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config"
    served = ServeProcess(vault, config)
    try:
        wire = wire_of(served)
        x, y = linked_pair(wire)
        (vault / COPY).write_bytes((vault / ORIGINAL).read_bytes())
        both = wait_for(lambda: [h for h in [hits(wire)] if len(h) == 2])[0]
        copy_id = both["kiln-schedule-copy"]
        assert both["kiln-schedule"] == x and copy_id != x
        (vault / ORIGINAL).unlink()
        wait_for(lambda: hits(wire) == {"kiln-schedule-copy": x})  # the watcher handed the id on
        assert path_of(wire, x) == COPY
    finally:
        served.kill()

    for _ in range(2):  # after the kill, then after a clean stop of that start
        served = ServeProcess(vault, config)
        try:
            wire = wire_of(served)
            assert path_of(wire, x) == COPY
            assert hits(wire) == {"kiln-schedule-copy": x}
            assert path_of(wire, copy_id) is None
            assert upstream(wire, y) == [("depends_on", x)]
        finally:
            assert served.stop() == 0
    assert_git_clean_and_sound(vault)


def test_a_kill_9_after_a_hand_copy_of_an_agents_note_leaves_the_id_with_the_agents_note(
    vault: Path, tmp_path: Path
) -> None:
    """Obsidian's "Make a copy" (``<name> 1.md``, the same ``id:``) of a note an agent wrote since the
    start, the copy then edited; a kill -9 once the daemon was quiet. The next start used to give the
    id and its links to the copy (its name sorts first, and the catalog's cache knew neither file:
    it was saved only at scans and at close). Found by a helper attacking renames (2026-12-03)."""
    from vaultmem.config import Settings

    cache = Settings.resolve(vault).state_dir / "catalog.cache"
    config = tmp_path / "config"
    served = ServeProcess(vault, config)
    try:
        wire = wire_of(served)
        x, y = linked_pair(wire)
        made = vault / "memory/semantic/kiln-schedule 1.md"
        made.write_text((vault / ORIGINAL).read_text("utf-8").replace("noon", "noon sharp"), "utf-8")
        wait_for(lambda: "kiln-schedule 1" in hits(wire))  # the watcher read the copy
        seen = time.time_ns()
        wait_for(lambda: cache.exists() and cache.stat().st_mtime_ns > seen, timeout=30)  # saved once quiet
    finally:
        served.kill()
    served = ServeProcess(vault, config)
    try:
        wire = wire_of(served)
        assert path_of(wire, x) == ORIGINAL
        assert hits(wire)["kiln-schedule"] == x and hits(wire)["kiln-schedule 1"] != x
        assert upstream(wire, y) == [("depends_on", x)]
    finally:
        assert served.stop() == 0
