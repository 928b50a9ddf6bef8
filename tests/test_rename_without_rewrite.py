"""A note renamed by hand without its links rewritten (a file manager, ``mv``, a sync client's
conflict name): the body links by its old name dangle now, live as after a restart.

Found by a helper attacking renames (2026-12-03; the open "fuzzer seed 17" case of
docs/reliability.md): when the renamed note carried an ``id:`` and no ``aliases:``, the running
daemon kept ``Alpha``'s ``links_to`` edge to it (recall ``get``/``chain``) while health counted the
link dangling; a restart dropped the edge. The watcher reads the new name first, the id and its row
move there, and the old name's removal found no row, so nothing resolved ``[[Bravo]]`` again. The
SDK client against a real daemon over HTTP, the watcher on the real files.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import hand_write
from graph_wire import Wire
from mcp_harness import running_daemon, structured, wait_for

BRAVO = "0198c0de-0000-7000-8000-000000000001"


def alpha_upstream(wire: Wire) -> list[tuple[str, str]]:
    alpha = structured(wire.call("memory_search", query="alpha kiln", limit=1))["results"][0]["id"]
    got = wire.recall(action="get", thought_id=alpha, include_edges=True, compact=False)["item"]
    return [(row["edge"]["type"], row["thought"]["path"]) for row in got["upstream"]]


def path_of(wire: Wire, note_id: str) -> str | None:
    """Where ``get`` says the note is; None while it answers that its file just went (retryable)."""
    got = wire.call("memory_recall", action="get", thought_id=note_id, fields=["path"])
    if got.is_error:
        assert "run the same call again" in " ".join(getattr(b, "text", "") for b in got.content)
        return None
    return str((got.structured_content or {})["result"]["item"]["path"])


def dangling(wire: Wire) -> int:
    return int(wire.ok("memory_status", action="health")["item"]["dangling_text_links"])


@pytest.mark.parametrize(
    "new_name", ["notes/Charlie.md", "notes/Bravo.sync-conflict-20261203-101010-ABCDEFG.md"]
)
def test_links_by_the_old_name_dangle_live_and_after_a_restart(
    vault: Path, tmp_path: Path, new_name: str
) -> None:
    hand_write(vault, "notes/Bravo.md", f"---\nid: {BRAVO}\n---\nbravo body about glaze\n", commit=True)
    hand_write(vault, "notes/Alpha.md", "alpha kiln notes link to [[Bravo]]\n", commit=True)
    with running_daemon(vault, tmp_path / "token") as daemon:
        wire = Wire(daemon)
        assert alpha_upstream(wire) == [("links_to", "notes/Bravo.md")] and dangling(wire) == 0
        (vault / "notes/Bravo.md").rename(vault / new_name)
        wait_for(lambda: path_of(wire, BRAVO) == new_name)
        wait_for(lambda: alpha_upstream(wire) == [])
        assert dangling(wire) == 1
    with running_daemon(vault, tmp_path / "token") as restarted:
        wire = Wire(restarted)
        assert alpha_upstream(wire) == [] and dangling(wire) == 1
        assert path_of(wire, BRAVO) == new_name
