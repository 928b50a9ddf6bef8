"""The person's own git commands in the vault while the daemon serves agents.

Found by a helper attacking the daemon with a person's tools (2026-12-03).
"""

from __future__ import annotations

from pathlib import Path

from conftest import git, hand_write
from graph_wire import Wire
from mcp_harness import running_daemon, structured, wait_for

NOTE = "---\ntitle: {title}\n---\n{body}\n"


def status(vault: Path) -> str:
    return git(vault, "status", "--porcelain", "--untracked-files=all")


def in_head(vault: Path) -> set[str]:
    return set(git(vault, "ls-tree", "-r", "--name-only", "HEAD").splitlines())


def test_a_git_rm_and_a_git_mv_are_committed_whole_by_the_watcher(vault: Path, tmp_path: Path) -> None:
    """``git rm note.md`` and ``git mv a.md b.md`` stage the deletion themselves. The watcher's
    commit left such a path out (neither on disk nor in git's index: taken for a file that never
    was), so the deletion stayed staged for good, health warned of uncommitted changes, and after
    a ``git mv`` HEAD held the note twice, at its old and its new name (one id in two files)."""
    hand_write(vault, "notes/gone.md", NOTE.format(title="Gone", body="the kiln log of march"), commit=True)
    hand_write(vault, "notes/old.md", NOTE.format(title="Old", body="glaze recipes by cone"), commit=True)
    with running_daemon(vault, tmp_path / "token", commit_quiet_period=0.2) as daemon:
        wire = Wire(daemon)
        git(vault, "rm", "-q", "notes/gone.md")
        git(vault, "mv", "notes/old.md", "notes/new.md")
        wait_for(lambda: status(vault) == "", timeout=10)
        assert {"notes/gone.md", "notes/old.md"}.isdisjoint(in_head(vault))
        assert "notes/new.md" in in_head(vault)
        hits = structured(wire.call("memory_search", query="glaze recipes by cone"))["results"]
        assert [h["slug"] for h in hits] == ["new"]
        health = wire.ok("memory_status", action="health")["item"]
        assert not [c for c in health["checks"] if c["name"] == "uncommitted_changes" and not c["ok"]]
