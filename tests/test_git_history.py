"""Git history: every write is committed by one writer, a held index.lock never loses a write, and a
restart commits whatever a crash left uncommitted."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import OpenService, commit_count, git, git_status, hand_write, head
from layers import parts

from vaultmem.config import Settings
from vaultmem.errors import GitError, VaultError
from vaultmem.memory import Memory
from vaultmem.vault.atomic import TEMP_PREFIX
from vaultmem.vault.init import init_vault


def test_a_new_vault_is_a_repository_with_one_commit(vault: Path) -> None:
    assert (vault / ".git").is_dir()
    assert commit_count(vault) == 1
    assert git_status(vault) == ""
    tracked = git(vault, "ls-files").split()
    assert "filing.yaml" in tracked and ".gitignore" in tracked and "README.md" in tracked
    for folder in ("memory/semantic", "memory/procedural", "memory/episodic", "personal/ideas"):
        assert (vault / folder).is_dir()


def test_init_keeps_an_existing_folder_of_notes(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    hand_write(root, "mine.md", "my own note\n")
    hand_write(root, "filing.yaml", "version: 2\n")  # a vault's own contract is never overwritten
    init_vault(root)
    assert (root / "mine.md").read_text() == "my own note\n"
    assert (root / "filing.yaml").read_text() == "version: 2\n"
    assert "mine.md" in git(root, "ls-files").split()
    _, created_again = init_vault(root)
    assert created_again is False


def test_the_commit_message_names_tool_id_slug_kind_and_project(service: Memory, vault: Path) -> None:
    """design.md: "Agent writes commit with a message naming the tool, the note and its id"."""
    result = service.append("Acme deploys with Helm.", "workflow", project="Acme", title="Deploy")
    message = git(vault, "log", "-1", "--format=%B")
    assert message.splitlines()[0] == "memory_append: add deploy"
    for line in (
        "tool: memory_append",
        f"id: {result['id']}",
        "slug: deploy",
        "kind: workflow",
        "project: Acme",
        "path: desk/projects/acme/deploy.md",
    ):
        assert line in message.splitlines()
    assert git(vault, "log", "-1", "--format=%an <%ae>").strip() == "vaultmem <vaultmem@localhost>"


def test_history_follows_one_memory_newest_first(service: Memory) -> None:
    result = service.capture("v1", title="Card", source_id="ns:1")
    service.capture("v2", title="Card", source_id="ns:1")
    service.forget(result["id"])
    messages = [row["summary"] for row in service.history(result["id"]).items]
    assert messages == [
        "memory_forget: delete card",
        "memory_capture: update in place card",
        "memory_capture: add card",
    ]


def test_with_background_commits_wait_commit_returns_after_the_commit(
    open_service: OpenService, vault: Path
) -> None:
    service = open_service(background_commits=True)
    result = service.append("waited for", "decision", wait_commit=True)
    assert result["slug"] in git(vault, "log", "-1", "--format=%s")
    assert git_status(vault) == ""


def test_close_commits_everything_acknowledged(open_service: OpenService, vault: Path) -> None:
    service = open_service(background_commits=True)
    slugs = [service.append(f"memory {i}", "fix")["slug"] for i in range(20)]
    service.close()
    log = git(vault, "log", "--format=%B")
    assert all(slug in log for slug in slugs)
    assert git_status(vault) == ""


def test_init_with_a_separate_git_dir_keeps_the_repository_outside(tmp_path: Path, clock) -> None:
    """issue: "--git-dir DIR keeps the repository outside the vault, for Dropbox/Drive users"."""
    root, git_dir = tmp_path / "Dropbox" / "vault", tmp_path / "local" / "vault.git"
    init_vault(root, git_dir)
    assert (root / ".git").is_file()  # only git's one-line pointer lives in the synced folder
    assert (git_dir / "HEAD").is_file() and (git_dir / "objects").is_dir()
    service = Memory(
        Settings.resolve(root, durable=False), clock=clock, index=False, background_commits=False
    )
    result = service.append("separate git dir", "reference")
    service.close()
    assert result["slug"] in git(root, f"--git-dir={git_dir}", "log", "-1", "--format=%s")
    assert git_status(root) == ""


def test_a_git_dir_inside_the_vault_is_refused(tmp_path: Path) -> None:
    with pytest.raises(VaultError, match="must be outside the vault"):
        init_vault(tmp_path / "v", tmp_path / "v" / "repo.git")


def test_a_folder_that_is_not_a_repository_is_not_opened(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(VaultError, match="vaultmem init"):
        Memory(Settings.resolve(tmp_path / "plain", durable=False), index=False)
    with pytest.raises(VaultError, match="vaultmem init"):
        Memory(Settings.resolve(tmp_path / "missing", durable=False), index=False)


class HeldLock:
    """``.git/index.lock`` as a person's running git holds it: created, and kept open."""

    def __init__(self, vault: Path) -> None:
        self.path = vault / ".git" / "index.lock"
        self._handle = self.path.open("x", encoding="utf-8")
        self._handle.write("held by a person's git\n")
        self._handle.flush()

    def exists(self) -> bool:
        return self.path.exists()

    def release(self) -> None:
        """The person's git finishes: its lock goes."""
        if not self._handle.closed:
            self.path.unlink()
            self._handle.close()


@pytest.fixture
def hold_index_lock() -> Iterator[Callable[[Path], HeldLock]]:
    held: list[HeldLock] = []

    def hold(vault: Path) -> HeldLock:
        held.append(HeldLock(vault))
        return held[-1]

    yield hold
    for lock in held:
        lock.release()


def test_a_held_index_lock_gets_bounded_retries_then_a_clear_error(
    open_service: OpenService, vault: Path, hold_index_lock: Callable[[Path], HeldLock]
) -> None:
    service = open_service(git_lock_timeout=0.3)
    lock = hold_index_lock(vault)
    with pytest.raises(GitError, match=r"index\.lock.*leaves a lock a running process holds alone"):
        service.append("written while git is locked", "fix", title="Locked", wait_commit=True)
    assert lock.exists()  # never deleted
    path = vault / "memory/episodic/locked.md"
    assert "written while git is locked" in path.read_text("utf-8")  # the write is safe on disk
    lock.release()  # the person's git finishes
    service.append("the next write", "fix", title="Next", wait_commit=True)
    log = git(vault, "log", "--name-only", "--format=")
    assert "memory/episodic/locked.md" in log and "memory/episodic/next.md" in log
    assert git_status(vault) == ""


def test_without_waiting_a_locked_commit_is_retried_by_the_background_writer(
    open_service: OpenService, vault: Path, hold_index_lock: Callable[[Path], HeldLock]
) -> None:
    service = open_service(background_commits=True, git_lock_timeout=0.2)
    parts(service).writer.commits.retry_delay = 0.05
    lock = hold_index_lock(vault)
    result = service.append("acknowledged before the commit", "fix")
    assert result["deduplicated"] is False
    with pytest.raises(GitError):
        service.flush()
    lock.release()
    service.flush()  # the retry (or this flush) commits it
    service.append("a later write", "fix", wait_commit=True)
    assert git_status(vault) == ""
    assert result["slug"] in git(vault, "log", "--format=%B")


def test_a_lock_at_close_is_committed_on_the_next_start(
    open_service: OpenService, vault: Path, hold_index_lock: Callable[[Path], HeldLock]
) -> None:
    service = open_service(git_lock_timeout=0.2)
    lock = hold_index_lock(vault)
    result = service.append("committed at the next start", "fix")
    with pytest.raises(GitError):
        service.close()
    lock.release()
    reopened = open_service()
    assert git_status(vault) == ""
    assert reopened.history(result["id"]).items


def test_a_write_a_crash_left_uncommitted_is_committed_at_the_next_start(
    service: Memory, open_service: OpenService, vault: Path
) -> None:
    """issue: "After a kill -9 at any point, a restart commits whatever was written but not
    committed: no acknowledged write is ever missing from history."."""
    # The crash: a note file is in place (as after the rename), but the commit never ran.
    result = service.append("committed normally", "reference")
    orphan = hand_write(
        vault,
        "memory/semantic/orphan.md",
        "---\nid: 0190a5f0-0000-7000-8000-0000000000e1\ntitle: Orphan\nstatus: active\n---\norphan\n",
    )
    before = head(vault)
    reopened = open_service()
    assert head(vault) != before
    assert git_status(vault) == ""
    message = git(vault, "log", "-1", "--format=%B")
    assert message.startswith("vaultmem: record changes found at start")
    assert "memory/semantic/orphan.md" in git(vault, "log", "-1", "--name-only", "--format=")
    assert orphan.is_file()
    assert reopened.note("0190a5f0-0000-7000-8000-0000000000e1").title == "Orphan"
    assert reopened.note(result["id"]).body == "committed normally\n"


def test_a_killed_background_writer_loses_nothing(open_service: OpenService, vault: Path) -> None:
    service = open_service(background_commits=True)
    parts(service).writer.commits.close()  # the commit thread dies, as in a kill -9 between write and commit
    parts(service).writer.commits._thread = object()  # type: ignore[assignment]  # submissions now go nowhere
    results = [service.append(f"never committed {i}", "fix") for i in range(3)]
    parts(service).writer.commits._thread = None
    assert git_status(vault) != ""
    reopened = open_service()
    assert git_status(vault) == ""
    for result in results:
        assert reopened.history(result["id"]).items


def test_temp_files_a_crash_left_are_swept_at_start(vault: Path, open_service: OpenService) -> None:
    stale = hand_write(vault, f"memory/semantic/{TEMP_PREFIX}note.md.123.abcd", "half a note")
    keep = hand_write(vault, ".obsidian/" + TEMP_PREFIX + "untouched", "not ours to sweep")
    open_service()
    assert not stale.exists()
    assert keep.exists()


def test_vaultmem_never_writes_into_obsidian_or_commits_its_state(service: Memory, vault: Path) -> None:
    service.append("a note", "reference")
    service.close()
    assert not (vault / ".obsidian").exists()
    assert (vault / ".vaultmem").is_dir()
    assert not any(p.startswith(".vaultmem/") for p in git(vault, "ls-files").split())


def test_a_persons_staged_changes_stay_staged(service: Memory, vault: Path) -> None:
    """Only the named paths are committed, so whatever a person has staged stays staged."""
    hand_write(vault, "memory/semantic/draft.md", "a person's draft\n")
    git(vault, "add", "memory/semantic/draft.md")
    service.append("an agent write", "fix")
    assert "memory/semantic/draft.md" not in git(vault, "log", "-1", "--name-only", "--format=")
    assert git(vault, "diff", "--cached", "--name-only").split() == ["memory/semantic/draft.md"]


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_a_rewritten_note_keeps_its_file_mode(service: Memory, vault: Path) -> None:
    result = service.append("mode test", "fix", title="Mode")
    path = vault / "memory/episodic/mode.md"
    path.chmod(0o600)
    service.forget(result["id"])
    assert path.stat().st_mode & 0o777 == 0o600


def test_commits_leave_no_pathspec_file_and_a_killed_commits_is_swept_at_start(
    vault: Path, open_service: OpenService
) -> None:
    """The list of paths a commit passes to git lives in the git directory for the length of the
    commit; one a kill -9 left behind is removed at the next start (only when old: another process
    on the same vault may be committing)."""
    import tempfile
    import time

    from vaultmem.vault.history import PATHSPEC_PREFIX

    git_dir = vault / ".git"
    system_tmp = set(Path(tempfile.gettempdir()).glob(f"{PATHSPEC_PREFIX}*"))
    service = open_service()
    service.append("a note to commit", "reference")
    assert list(git_dir.glob(f"{PATHSPEC_PREFIX}*")) == []
    assert set(Path(tempfile.gettempdir()).glob(f"{PATHSPEC_PREFIX}*")) <= system_tmp
    service.close()

    stale, fresh = git_dir / f"{PATHSPEC_PREFIX}stale", git_dir / f"{PATHSPEC_PREFIX}live"
    stale.write_bytes(b"notes/x.md")
    fresh.write_bytes(b"notes/y.md")
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    open_service()
    assert not stale.exists()
    assert fresh.exists()
