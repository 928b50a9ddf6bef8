"""The ids of renamed person's notes (``vault/gone.py``) across vaultmem processes on one vault: a
pairing a CLI ``vaultmem sync`` made beside a running daemon reaches the daemon and outlives its
close (each process saved its own records, the last one to close winning), and a rename a person's
own ``git pull`` brought while nothing ran keeps the old id answering."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mcp import Client
from mcp_harness import wait_for
from sync_daemons import MANUAL, Machine, bare_remote

from tests.conftest import git
from vaultmem.notes.ids import derived_id

KETTLE = "# Kettle\n\nkettlemarker: descale it monthly with citric acid, then rinse twice.\n"
TEAPOT = "# Teapot\n\nteapotmarker: warm the pot first, and never use soap on the glaze.\n"


def got(machine: Machine, note_id: str) -> dict[str, Any] | None:
    """``memory_recall get`` of ``note_id`` over MCP: the thought, or None for an error (not found)."""

    async def one(client: Client) -> dict[str, Any] | None:
        result = await client.call_tool("memory_recall", {"action": "get", "thought_id": note_id})
        if result.is_error:
            return None
        item = dict(result.structured_content or {})["result"].get("item")
        return dict(item) if item else None

    return machine.session(one)


def test_a_rename_paired_by_a_cli_sync_beside_the_daemon_answers_there_and_after_its_restart(
    tmp_path: Path,
) -> None:
    remote = bare_remote(tmp_path / "remote.git")
    laptop = Machine(remote, tmp_path / "laptop")
    (laptop.root / "vaultmem.yaml").write_text(MANUAL, encoding="utf-8")
    (laptop.root / "notes").mkdir(exist_ok=True)
    (laptop.root / "notes/Kettle.md").write_text(KETTLE, encoding="utf-8")
    (laptop.root / "notes/Teapot.md").write_text(TEAPOT, encoding="utf-8")
    laptop.sync()
    desktop = Machine(remote, tmp_path / "desktop")
    old = derived_id("notes/Kettle.md")
    desktop.serve(fake_embedder=True)
    try:
        assert (got(desktop, old) or {}).get("id") == old
        (laptop.root / "notes/Appliances").mkdir()
        os.rename(laptop.root / "notes/Kettle.md", laptop.root / "notes/Appliances/Kettle.md")
        laptop.sync()
        report = desktop.sync()  # a CLI process beside the daemon: its merge moves the file
        assert "notes/Appliances/Kettle.md" in {c["path"] for c in report["incoming"]}
        new = derived_id("notes/Appliances/Kettle.md")
        # the daemon reads the pairing the CLI saved (its own watcher saw only a deletion)
        assert wait_for(lambda: (got(desktop, old) or {}).get("id") == new, timeout=30)
        teapot = derived_id("notes/Teapot.md")
        (desktop.root / "notes/Teapot.md").unlink()  # the daemon has a record of its own to save
        assert wait_for(lambda: got(desktop, teapot) is None, timeout=30)
        desktop.stop()  # its save merges with the file, not over it
        desktop.serve(fake_embedder=True)
        thought = got(desktop, old)
        assert thought is not None and thought["id"] == new
        assert "descale it monthly" in thought["content"]
    finally:
        desktop.kill()


def test_a_rename_a_persons_own_git_pull_brought_while_vaultmem_was_stopped_keeps_the_old_id(
    tmp_path: Path,
) -> None:
    """The pull writes the file anew at its new name, so at the next start nothing said the file
    that went and the one that came were one note: the old id was a 404. git's rename detection
    between the commit the catalog last knew and HEAD pairs them."""
    remote = bare_remote(tmp_path / "remote.git")
    laptop = Machine(remote, tmp_path / "laptop")
    (laptop.root / "vaultmem.yaml").write_text(MANUAL, encoding="utf-8")
    (laptop.root / "notes").mkdir(exist_ok=True)
    (laptop.root / "notes/Kettle.md").write_text(KETTLE, encoding="utf-8")
    laptop.sync()
    desktop = Machine(remote, tmp_path / "desktop")
    desktop.sync()  # vaultmem has read the vault on this machine
    (laptop.root / "notes/Appliances").mkdir()
    os.rename(laptop.root / "notes/Kettle.md", laptop.root / "notes/Appliances/Kettle.md")
    laptop.sync()
    git(desktop.root, "pull", "-q", "--ff-only")  # the person's own, vaultmem not running
    assert (desktop.root / "notes/Appliances/Kettle.md").is_file()
    desktop.serve(fake_embedder=True)
    try:
        thought = got(desktop, derived_id("notes/Kettle.md"))
        assert thought is not None and thought["id"] == derived_id("notes/Appliances/Kettle.md")
        assert "descale it monthly" in thought["content"]
    finally:
        desktop.kill()
