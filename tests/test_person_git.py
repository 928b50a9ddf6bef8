"""The person's own git commands in the vault while the daemon serves agents.

Found by a helper attacking the daemon with a person's tools (2026-12-03).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import git, hand_write
from graph_wire import Wire
from mcp_harness import running_daemon, structured, wait_for

from vaultmem.errors import GitBusy, GitError
from vaultmem.vault.commits import CommitWriter
from vaultmem.vault.history import Author, GitRepo

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


def person_git(vault: Path, *args: str) -> str:
    return git(vault, "-c", "user.name=Pat", "-c", "user.email=pat@example.com", *args)


def append(wire: Wire, title: str, content: str) -> str:
    answer = structured(wire.call("memory_append", title=title, content=content, kind="reference"))
    return str(answer["id"])


def slugs_found(wire: Wire, query: str) -> list[str]:
    return [h["slug"] for h in structured(wire.call("memory_search", query=query))["results"]]


def test_an_agents_write_during_a_persons_rebase_survives_its_abort(vault: Path, tmp_path: Path) -> None:
    """A ``git rebase -i`` stopped at an ``edit`` (HEAD detached): the daemon committed an agent's
    write onto the detached HEAD, and ``git rebase --abort`` (a reset to where the rebase began)
    deleted the acknowledged note from the vault and from search, with no word from git. The
    person's own edit at the stop was committed by the watcher as a hand edit, so their
    ``git commit --amend`` would have amended that commit instead."""
    hand_write(vault, "notes/one.md", NOTE.format(title="One", body="first firing notes"), commit=True)
    hand_write(vault, "notes/two.md", NOTE.format(title="Two", body="second firing notes"), commit=True)
    with running_daemon(vault, tmp_path / "token", commit_quiet_period=0.2) as daemon:
        wire = Wire(daemon)
        person_git(vault, "-c", "sequence.editor=sed -i 1s/^pick/edit/", "rebase", "-q", "-i", "HEAD~1")
        stopped_at = git(vault, "rev-parse", "HEAD").strip()
        append(wire, "Rebase write", "clay shrinks twelve percent in the kiln")
        hand_write(vault, "notes/two.md", NOTE.format(title="Two", body="second firing notes, amended"))
        wait_for(lambda: "two" in slugs_found(wire, "amended"))
        assert daemon.memory is not None
        with pytest.raises(GitBusy, match="a rebase"):  # the commits wait, and say why
            daemon.memory.flush()
        checks = wire.ok("memory_status", action="health", include_details=True)["item"]["checks"]
        busy = next(c for c in checks if c["name"] == "git_operation_in_progress")
        assert not busy["ok"] and busy["details"] == [{"operation": "a rebase"}]
        assert git(vault, "rev-parse", "HEAD").strip() == stopped_at  # nothing committed into it
        person_git(vault, "rebase", "--abort")
        wait_for(lambda: status(vault) == "", timeout=10)
        assert any(p.startswith("memory/") and p.endswith("rebase-write.md") for p in in_head(vault))
        assert git(vault, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
        assert slugs_found(wire, "clay shrinks twelve percent") == ["rebase-write"]


def test_an_agents_write_while_an_old_commit_is_checked_out_lands_on_the_branch(
    vault: Path, tmp_path: Path
) -> None:
    """``git checkout <older commit>`` to look at the vault as it was: the daemon committed an agent's
    write onto the detached HEAD, and ``git checkout main`` took the note out of the vault and out of
    search (git only said a commit was left behind)."""
    hand_write(vault, "notes/one.md", NOTE.format(title="One", body="first firing notes"), commit=True)
    hand_write(vault, "notes/two.md", NOTE.format(title="Two", body="second firing notes"), commit=True)
    with running_daemon(vault, tmp_path / "token", commit_quiet_period=0.2) as daemon:
        wire = Wire(daemon)
        person_git(vault, "checkout", "-q", "HEAD~1")
        wait_for(lambda: "two" not in slugs_found(wire, "second firing notes"))
        append(wire, "Detached write", "the oven needs twelve hundred degrees")
        assert daemon.memory is not None
        with pytest.raises(GitBusy, match="detached HEAD"):
            daemon.memory.flush()
        person_git(vault, "checkout", "-q", "main")
        wait_for(lambda: status(vault) == "", timeout=10)
        assert any(p.endswith("detached-write.md") for p in in_head(vault))
        assert git(vault, "branch", "--contains", "HEAD", "--format=%(refname:short)").split() == ["main"]
        assert slugs_found(wire, "oven twelve hundred degrees") == ["detached-write"]
        # git's checkout wrote two.md back; the watcher indexes it after its quiet period, which on a
        # loaded machine may end after the commit above
        wait_for(lambda: "two" in slugs_found(wire, "second firing notes"), timeout=10)


def test_a_hand_copy_does_not_take_the_id_once_the_state_directory_is_gone(
    vault: Path, tmp_path: Path
) -> None:
    """``git clean -fdx`` (or deleting ``.vaultmem/``, derived state, or a clone's first start on
    another machine) with Obsidian's copy of an agent's note beside it (``<name> 1.md``, the same
    ``id:``): with no catalog cache to say who held the id, the first file by path took it, and
    ``<name> 1.md`` sorts before ``<name>.md``. The copy then answered to the note's id (an
    agent's update or forget by id went to it) and the note itself was reported as the copy."""
    with running_daemon(vault, tmp_path / "token", commit_quiet_period=0.2) as daemon:
        wire = Wire(daemon)
        note_id = append(wire, "Kiln log", "bisque firing reached cone four overnight")
        rel = wire.recall(action="get", thought_id=note_id, fields=["path"])["item"]["path"]
        copy = rel.replace(".md", " 1.md")
        hand_write(vault, copy, (vault / rel).read_bytes())
        wait_for(lambda: status(vault) == "" and copy in in_head(vault), timeout=10)
    person_git(vault, "clean", "-q", "-fdx")
    assert not (vault / ".vaultmem").exists()
    with running_daemon(vault, tmp_path / "token") as restarted:
        wire = Wire(restarted)
        assert wire.recall(action="get", thought_id=note_id, fields=["path"])["item"]["path"] == rel
        checks = wire.ok("memory_status", action="health", include_details=True)["item"]["checks"]
        malformed = next(c for c in checks if c["name"] == "malformed_notes")
        assert [d["path"] for d in malformed["details"]] == [copy]


def test_an_editors_lock_and_autosave_files_are_not_reported_as_uncommitted(vault: Path) -> None:
    """Emacs keeps ``.#note.md`` (a lock, a dangling symlink) and ``#note.md#`` (an autosave) beside
    a note while its buffer is modified, and ``note.md~`` for good where the vault's .gitignore
    lacks ``*~`` (a vault adopted in place). vaultmem never commits them, yet `vaultmem doctor`
    listed them as "uncommitted changes (the daemon commits them)" and exited 1 (health warned the
    same), for as long as the person edited."""
    hand_write(vault, "notes/kiln.md", NOTE.format(title="Kiln", body="cone six"), commit=True)
    os.symlink("pat@laptop.4242:1764700000", vault / "notes/.#kiln.md")
    hand_write(vault, "notes/#kiln.md#", NOTE.format(title="Kiln", body="cone six, unsaved"))
    hand_write(vault, "notes/kiln.md.orig", "left by a merge tool\n")
    hand_write(vault, "notes/glaze.md", NOTE.format(title="Glaze", body="a real edit, not committed yet"))
    env = {**os.environ, "VAULTMEM_EMBEDDER": "fake"}
    cli = [sys.executable, "-m", "vaultmem.cli", "--vault", str(vault), "doctor", "--json"]
    report = json.loads(subprocess.run(cli, capture_output=True, text=True, env=env, check=False).stdout)
    assert report["uncommitted"] == ["notes/glaze.md"]
    git(vault, "add", "notes/glaze.md")
    person_git(vault, "commit", "-q", "-m", "glaze")
    done = subprocess.run(cli[:-1], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stdout


def test_a_note_the_person_keeps_out_of_git_does_not_stop_every_commit(vault: Path, tmp_path: Path) -> None:
    """A folder of notes in the vault's .gitignore (a private journal): the watcher indexed a hand
    edit there and asked git to commit it by name, git refused ("ignored by one of your .gitignore
    files"), and the commit was retried every second for good, with every commit queued behind
    it: no agent's write was committed again until a restart."""
    with (vault / ".gitignore").open("a", encoding="utf-8") as ignore:
        ignore.write("journal/\n")
    person_git(vault, "commit", "-q", "-am", "keep my journal out of git")
    with running_daemon(vault, tmp_path / "token", commit_quiet_period=0.2) as daemon:
        wire = Wire(daemon)
        hand_write(vault, "journal/today.md", NOTE.format(title="Today", body="the kiln shelf cracked"))
        wait_for(lambda: "today" in slugs_found(wire, "kiln shelf cracked"))
        append(wire, "Shelf crack", "a cracked kiln shelf is replaced, never glued")
        wait_for(lambda: status(vault) == "", timeout=10)
        assert not any(p.startswith("journal/") for p in in_head(vault))
        assert git(vault, "log", "-1", "--format=%s").strip() == "memory_append: add shelf-crack"


def test_a_note_whose_name_looks_like_a_git_pattern_is_committed_as_itself(
    vault: Path, tmp_path: Path
) -> None:
    """File names are handed to git as pathspecs: ``:memo.md`` (made outside Obsidian, which
    forbids ``:``) is pathspec magic for ``memo.md`` at the top of the tree, so `git add` refused
    it ("did not match any files") and the commit was retried every second for good, with every
    agent's commit queued behind it; ``[draft] *.md`` was a glob (of other notes, here)."""
    with running_daemon(vault, tmp_path / "token", commit_quiet_period=0.2) as daemon:
        wire = Wire(daemon)
        hand_write(vault, ":memo.md", "a memo named with a colon\n")
        hand_write(vault, "notes/[draft] *.md", "a draft named like a glob\n")
        append(wire, "After the memo", "the memo named with a colon is committed")
        wait_for(lambda: {":memo.md", "notes/[draft] *.md"} <= in_head(vault), timeout=10)
        wait_for(lambda: "memory_append: add after-the-memo" in git(vault, "log", "--format=%s").splitlines())
        wait_for(lambda: status(vault) == "", timeout=10)


def symlink_folder(vault: Path, rel: str, away: Path) -> None:
    """Move a folder of the vault to ``away`` (a synced folder, say) and link it back."""
    (vault / rel).rename(away)
    (vault / rel).symlink_to(away, target_is_directory=True)


def test_a_folder_replaced_by_a_symlink_does_not_stop_the_commits_or_the_start(
    vault: Path, tmp_path: Path
) -> None:
    """A folder of notes moved into a synced folder and linked back by a symlink: vaultmem named
    the notes that were under it to git, which refuses a path "beyond a symbolic link". Live, the
    commit was retried every second for good with every agent's commit queued behind it; done
    while nothing ran, `vaultmem serve` (and every CLI command) exited 1 at its start commit."""
    hand_write(vault, "trips/kyoto.md", NOTE.format(title="Kyoto", body="kilns of kyoto"), commit=True)
    hand_write(vault, "trips/seto.md", NOTE.format(title="Seto", body="kilns of seto"), commit=True)
    with running_daemon(vault, tmp_path / "token", commit_quiet_period=0.2) as daemon:
        wire = Wire(daemon)
        symlink_folder(vault, "trips", tmp_path / "synced-trips")
        wait_for(lambda: "trips" in in_head(vault), timeout=10)
        append(wire, "Glaze test", "the glaze test after the symlink")
        wait_for(lambda: status(vault) == "", timeout=10)
        assert not {"trips/kyoto.md", "trips/seto.md"} & in_head(vault)
    hand_write(vault, "later/a.md", NOTE.format(title="A", body="a later folder"), commit=True)
    symlink_folder(vault, "later", tmp_path / "synced-later")
    with running_daemon(vault, tmp_path / "token") as restarted:
        append(Wire(restarted), "After the restart", "written after a start that met the symlink")
        assert restarted.memory is not None
        restarted.memory.flush()
    assert status(vault) == "" and "later" in in_head(vault)


def test_a_note_in_a_submodule_does_not_stop_every_commit(vault: Path, tmp_path: Path) -> None:
    """A repository of the person's inside the vault (a team's notes as a git submodule): a hand
    edit of a note in it was named to the vault's git, which refuses it ("is in submodule"), and
    the commit was retried every second for good with every agent's commit queued behind it.
    The note is searched; its commit is the submodule's."""
    team = tmp_path / "team-notes"
    hand_write(team, "glazes.md", NOTE.format(title="Team glazes", body="the team's celadon recipe"))
    git(team.parent, "init", "-q", str(team))
    git(team, "add", "glazes.md")
    person_git(team, "commit", "-q", "-m", "team notes")
    person_git(vault, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(team), "team")
    person_git(vault, "commit", "-q", "-m", "the team's notes as a submodule")
    with running_daemon(vault, tmp_path / "token", commit_quiet_period=0.2) as daemon:
        wire = Wire(daemon)
        with (vault / "team/glazes.md").open("a", encoding="utf-8") as note:
            note.write("Fire it to cone ten, in reduction.\n")
        wait_for(lambda: "glazes" in slugs_found(wire, "celadon reduction cone ten"))
        append(wire, "Celadon", "celadon wants a reduction atmosphere")
        wait_for(lambda: any(p.endswith("/celadon.md") for p in in_head(vault)), timeout=10)
        assert status(vault) == " M team\n"  # the person's to commit, in the submodule first


class RefusingRepo(GitRepo):
    """The vault's repository, refusing for good every commit that names ``refused`` (as git
    refused a path in an ignored folder, beyond a symlink or in a submodule, rows 37-40)."""

    refused = "notes/refused.md"

    def commit_paths(self, paths: Sequence[str], message: str, *args: Any, **kwargs: Any) -> bool:
        if self.refused in paths:
            raise GitError(f"fatal: pathspec '{self.refused}' is refused")
        return super().commit_paths(paths, message, *args, **kwargs)


def test_a_commit_git_refuses_for_good_holds_back_no_other_authors_commit(vault: Path) -> None:
    """Every commit refused for good above (rows 37-40) also held back every commit queued behind
    it, for as long as the daemon ran: the queue retried the whole line in order. A refusal of
    one commit's own now holds back only that commit; a held lock still holds back the line."""
    writer = CommitWriter(RefusingRepo(vault, lock_timeout=0.2), retry_delay=0.05)
    writer.start()
    person, agent = Author("Pat", "pat@example.com"), Author("cursor", "cursor@vaultmem.local")
    try:
        hand_write(vault, RefusingRepo.refused, "the person's note git will not take\n")
        hand_write(vault, "notes/agent.md", "an agent's note\n")
        refused = writer.submit([RefusingRepo.refused], "hand edit: notes/refused.md", author=person)
        landed = writer.submit(["notes/agent.md"], "memory_append: add agent", author=agent)
        landed.result(timeout=10)
        with pytest.raises(GitError, match="refused"):
            refused.result(timeout=10)
    finally:
        writer.close()
    assert git(vault, "log", "-1", "--format=%s %an").strip() == "memory_append: add agent cursor"
    assert status(vault) == "?? notes/refused.md\n"


def test_a_conflict_the_person_is_resolving_is_left_to_them(vault: Path, tmp_path: Path) -> None:
    """A ``git stash pop`` that conflicted (no merge in progress, both sides in git's index): the
    daemon's start committed the file as it was, conflict markers and all, which also marked the
    conflict resolved (the sync round's commit of pending work did the same while it ran)."""
    hand_write(vault, "board.canvas", '{"nodes": [1]}\n', commit=True)
    hand_write(vault, "board.canvas", '{"nodes": [1, 2]}\n')
    person_git(vault, "stash", "-q")
    hand_write(vault, "board.canvas", '{"nodes": [1, 3]}\n')
    person_git(vault, "commit", "-q", "-am", "another side")
    subprocess.run(["git", "stash", "pop"], cwd=vault, capture_output=True, check=False)
    assert status(vault) == "UU board.canvas\n"
    with running_daemon(vault, tmp_path / "token") as daemon:
        append(Wire(daemon), "During the conflict", "written while the canvas conflict is open")
        assert daemon.memory is not None
        daemon.memory.flush()
    assert "<<<<<<<" not in git(vault, "show", "HEAD:board.canvas")
    assert status(vault) == "UU board.canvas\n"


def test_the_cli_answers_while_the_persons_git_is_on_an_old_commit_and_its_write_lands_after(
    vault: Path,
) -> None:
    """A CLI write (or any command) while the person's git held vaultmem's commits back (an old
    commit checked out, a stopped rebase, another process's lock) exited 1 with the commit's error
    and no answer, though the note was written: a script retried a write that was done, and
    `vaultmem log` or `search` answered nothing. Now the command answers, says on stderr that its
    commit waits, and the next command once the branch is back commits the note."""
    env = {**os.environ, "VAULTMEM_EMBEDDER": "fake"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "vaultmem.cli", "--vault", str(vault), *args]
        return subprocess.run(command, capture_output=True, text=True, env=env, check=False, timeout=120)

    first = cli("append", "--kind", "reference", "--json", "The kiln fires at cone six.")
    assert first.returncode == 0, first.stderr
    person_git(vault, "checkout", "-q", "--detach")
    done = cli("append", "--kind", "reference", "--json", "The glaze needs two coats.")
    assert done.returncode == 0, done.stderr
    assert "not committed yet" in done.stderr and "detached HEAD" in done.stderr
    written = json.loads(done.stdout)
    assert (vault / f"memory/semantic/{written['slug']}.md").is_file()
    history = cli("log", json.loads(first.stdout)["id"])
    assert history.returncode == 0 and "kiln" in history.stdout, history.stderr
    person_git(vault, "checkout", "-q", "main")
    assert cli("log", written["id"]).returncode == 0
    assert f"memory/semantic/{written['slug']}.md" in in_head(vault)
    assert status(vault) == ""
