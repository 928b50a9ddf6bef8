"""Every agent write reaches `git log` with its own message, even when two writes to one note follow
each other so closely that the first commit takes the file as the second left it (design.md,
invariant 3: "Agent writes commit with a message naming the tool, the note and its id")."""

from __future__ import annotations

import subprocess
from pathlib import Path

from vaultmem.vault.commits import CommitWriter
from vaultmem.vault.history import GitRepo


def git(vault: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=vault, capture_output=True, text=True, check=True).stdout


def test_a_write_whose_content_an_earlier_commit_took_still_gets_its_audit_line(vault: Path) -> None:
    note = vault / "memory" / "semantic" / "n.md"
    writer = CommitWriter(GitRepo(vault))  # inline: each submit commits at once
    note.write_text("first\n", encoding="utf-8")
    note.write_text("second\n", encoding="utf-8")  # the second write lands before the first commits
    writer.submit(["memory/semantic/n.md"], "memory_append: add n\n\nid: 1\n").result(timeout=30)
    writer.submit(["memory/semantic/n.md"], "memory_capture: reinforce n\n\nid: 1\n").result(timeout=30)
    subjects = git(vault, "log", "--format=%s").splitlines()
    assert subjects[:2] == ["memory_capture: reinforce n", "memory_append: add n"]
    assert git(vault, "show", "HEAD:memory/semantic/n.md") == "second\n"
    assert git(vault, "show", "--name-only", "--format=", "HEAD").strip() == ""  # no file changes


def test_the_audit_line_leaves_what_a_person_staged_alone(vault: Path) -> None:
    mine = vault / "memory" / "semantic" / "mine.md"
    mine.write_text("a person's draft\n", encoding="utf-8")
    git(vault, "add", "memory/semantic/mine.md")
    note = vault / "memory" / "semantic" / "n.md"
    note.write_text("x\n", encoding="utf-8")
    writer = CommitWriter(GitRepo(vault))
    writer.submit(["memory/semantic/n.md"], "memory_append: add n").result(timeout=30)
    writer.submit(["memory/semantic/n.md"], "memory_forget: delete n").result(timeout=30)
    assert "memory/semantic/mine.md" not in git(vault, "show", "--name-only", "--format=", "HEAD")
    assert "A  memory/semantic/mine.md" in git(vault, "status", "--porcelain")


def test_a_hand_edit_commit_with_nothing_new_makes_no_commit(vault: Path) -> None:
    before = git(vault, "rev-parse", "HEAD")
    writer = CommitWriter(GitRepo(vault))
    writer.submit(["README.md"], "hand edit: README.md", record=False).result(timeout=30)
    assert git(vault, "rev-parse", "HEAD") == before
