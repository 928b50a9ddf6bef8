"""The body of the commit of a person's edits says what each file went through: a note new to git
is ``added``, a changed one ``edited``, a removed one ``deleted``, a moved one ``renamed`` (through
the watcher of a running daemon, and the commit a CLI's start makes, on real files and real git)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import git
from mcp_harness import running_daemon, wait_for

from vaultmem.server.token import token_path


def _clean(vault: Path) -> bool:
    return git(vault, "status", "--porcelain", "--untracked-files=all") == ""


def _person_notes(vault: Path, *, commit: bool = True) -> None:
    """Three notes of the person's, committed as theirs before the test starts."""
    (vault / "notes").mkdir(exist_ok=True)
    for name, text in (("Kettle", "Descale monthly."), ("Bike", "Oil the chain."), ("Old", "Gone soon.")):
        (vault / "notes" / f"{name}.md").write_text(text + "\n", encoding="utf-8")
    if not commit:
        return
    git(vault, "add", "notes")
    git(vault, "-c", "user.name=Ada", "-c", "user.email=ada@example.org", "commit", "-q", "-m", "notes")


def _edit_in_one_go(vault: Path) -> None:
    (vault / "notes" / "Untitled.md").write_text("", encoding="utf-8")
    (vault / "notes" / "Tomatoes.md").write_text("Water them every morning.\n", encoding="utf-8")
    (vault / "notes" / "Kettle.md").write_text("Descale monthly with citric acid.\n", encoding="utf-8")
    (vault / "notes" / "Old.md").unlink()
    (vault / "notes" / "Bike.md").rename(vault / "notes" / "Bicycle.md")


def _body_lines(vault: Path) -> list[str]:
    return [line for line in git(vault, "log", "-1", "--format=%b").splitlines() if line.startswith("- ")]


EXPECTED = [
    "- renamed notes/Bike.md -> notes/Bicycle.md",
    "- edited notes/Kettle.md",
    "- deleted notes/Old.md",
    "- added notes/Tomatoes.md",
    "- added notes/Untitled.md",
]


def test_the_watchers_commit_says_added_for_a_note_the_person_just_made(vault: Path) -> None:
    _person_notes(vault)
    with running_daemon(vault, token_path(vault), commit_quiet_period=0.5):
        _edit_in_one_go(vault)
        wait_for(lambda: _clean(vault))
        subject = git(vault, "log", "-1", "--format=%s")
        lines = _body_lines(vault)
        assert sorted(lines) == sorted(EXPECTED), (subject, lines)
        assert subject.startswith("hand edits: 5 files (2 added, 1 renamed, 1 deleted): "), subject
        # One new note alone: its body says added too.
        (vault / "notes" / "Lamp.md").write_text("The lamp needs a new bulb.\n", encoding="utf-8")
        wait_for(lambda: _clean(vault))
        assert _body_lines(vault) == ["- added notes/Lamp.md"]
        (vault / "notes" / "Lamp.md").write_text("The lamp needs a warm bulb.\n", encoding="utf-8")
        wait_for(lambda: _clean(vault))
        assert _body_lines(vault) == ["- edited notes/Lamp.md"]


def test_the_commit_a_cli_start_makes_of_edits_made_while_stopped_says_added_too(tmp_path: Path) -> None:
    """In an adopted vault (the person's notes outside vaultmem's folder are theirs alone) a CLI
    command's start commits what the person did while nothing ran, as the watcher would have."""
    vault = tmp_path / "vault"
    vault.mkdir()
    script = str(Path(sys.executable).with_name("vaultmem"))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [script, "--vault", str(vault), *args],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    _person_notes(vault, commit=False)
    assert run("init").returncode == 0  # adopts the folder and commits the notes
    _edit_in_one_go(vault)
    done = run("search", "kettle")
    assert _clean(vault), (done.stdout, done.stderr, git(vault, "status", "--porcelain"))
    assert sorted(_body_lines(vault)) == sorted(EXPECTED), git(vault, "log", "-1", "--format=%B")
