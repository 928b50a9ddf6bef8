"""git as a person's audit trail (issue 13, items 4 and 9): every commit subject names its note, a
hand deletion says it is one, and a git lock a killed commit left behind does not stop a restart,
while a lock a running process holds is never touched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from _support import ServeProcess
from conftest import git, hand_write
from graph_wire import Wire
from layers import parts
from mcp_harness import mcp_client, running_daemon, stdio_env, structured, wait_for

from vaultmem.server.daemon import Daemon
from vaultmem.vault.commits import CommitWriter
from vaultmem.vault.history import Author, GitRepo

VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))
NOTE = "---\ntitle: Espresso ratio\nkind: preference\n---\nOne to two, eighteen grams in.\n"


@pytest.fixture
def daemon(vault: Path, tmp_path: Path) -> Iterator[Daemon]:
    with running_daemon(vault, tmp_path / "token", commit_quiet_period=0.2) as running:
        yield running


def subjects(vault: Path, since: str) -> list[str]:
    """Commit subjects after ``since``, oldest first (what `git log --oneline` shows)."""
    return git(vault, "log", "--format=%s", f"{since}..HEAD").splitlines()[::-1]


# -- item 4: commit subjects ---------------------------------------------------------------------------


def test_every_memory_store_commit_subject_names_its_note(daemon: Daemon) -> None:
    """Issue 13.4: the subjects of memory_store create/update/link named no note."""
    wire, vault = Wire(daemon), daemon.settings.vault
    assert daemon.memory is not None
    commits = parts(daemon.memory).writer.commits

    def store(**arguments: Any) -> dict[str, Any]:
        answer = wire.store(**arguments)
        commits.flush()  # one commit per call (the writer groups writes that queue up under load)
        return answer

    start = git(vault, "rev-parse", "HEAD").strip()
    a = store(action="create", content="Kiln fires at cone six.", title="Kiln temperature")["item"]["id"]
    store(action="update", thought_id=a, content="Kiln fires at cone six, slowly.")
    b = store(action="create", content="Glazes need cone six.", title="Glaze range")["item"]["id"]
    edge = store(action="link", source_id=b, target_id=a, edge_type="depends_on")["item"]
    rows = store(action="bulk_create", thoughts=[{"content": "Wax resist"}, {"content": "Shino glaze"}])
    wax, shino = (row["thought"]["id"] for row in rows["items"])
    linked = store(action="link_batch", links=[{"source": wax, "target": shino, "type": "related"}])
    assert linked["meta"]["counts"]["linked"] == 1
    preview = store(action="retype", edge_id=edge["id"], new_type="supports")["item"]
    retyped = store(
        action="retype", edge_id=edge["id"], new_type="supports", confirm=True,
        preview_token=preview["preview_token"],
    )["item"]  # fmt: skip
    token = store(action="unlink", edge_id=retyped["edge_id"])["item"]["preview_token"]
    store(action="unlink", edge_id=retyped["edge_id"], confirm=True, preview_token=token)
    assert subjects(vault, start) == [
        "memory_store: create kiln-temperature",
        "memory_store: update kiln-temperature",
        "memory_store: create glaze-range",
        "memory_store: link glaze-range -depends_on-> kiln-temperature",
        "memory_store: bulk_create 2 thoughts: wax-resist, shino-glaze",
        "memory_store: link_batch 1 links wax-resist",
        "memory_store: retype depends_on -> supports glaze-range",
        "memory_store: unlink 1 edge(s) glaze-range",
    ]


def test_a_hand_deletion_is_committed_as_a_deletion(daemon: Daemon) -> None:
    """Issue 13.4: a note a person deleted was committed as `hand edit: <path>`."""
    vault = daemon.settings.vault
    rel = "memory/semantic/espresso-ratio.md"
    hand_write(vault, rel, NOTE)
    wait_for(lambda: git(vault, "log", "-1", "--format=%s").strip() == f"hand edit: {rel}")
    (vault / rel).unlink()
    wait_for(lambda: git(vault, "log", "-1", "--format=%s").strip() == f"hand deletion: {rel}")
    assert f"- deleted {rel}" in git(vault, "log", "-1", "--format=%b")
    assert git(vault, "status", "--porcelain", "--untracked-files=all") == ""


def test_hand_edits_of_several_files_say_which_were_deleted(vault: Path, tmp_path: Path) -> None:
    hand_write(vault, "memory/semantic/gone.md", NOTE, commit=True)
    # A quiet period long enough that the two changes below share a commit even on a loaded machine.
    with running_daemon(vault, tmp_path / "token", commit_quiet_period=1.5) as daemon:
        runtime = daemon.memory
        assert runtime is not None and parts(runtime).catalog.by_path("memory/semantic/gone.md")
        hand_write(vault, "memory/semantic/kept.md", NOTE.replace("Espresso", "Kept"))
        (vault / "memory/semantic/gone.md").unlink()
        wait_for(lambda: git(vault, "status", "--porcelain", "--untracked-files=all") == "")
    subject = git(vault, "log", "-1", "--format=%s").strip()
    assert subject == "hand edits: 2 files (1 added, 1 deleted): gone, kept"
    body = git(vault, "log", "-1", "--format=%b")
    assert "- deleted memory/semantic/gone.md" in body and "- added memory/semantic/kept.md" in body


def test_notes_the_person_moves_are_committed_as_renames_not_deletions(vault: Path, tmp_path: Path) -> None:
    """Obsidian's move of a folder (or a rename) was committed as `hand edits: 4 files (2 deleted)`,
    each note listed as deleted at its old path and edited at its new one: a person auditing `git
    log` read that their notes were deleted. A real deletion beside the moves still says so."""
    for name in ("scales", "chords", "trash"):
        hand_write(vault, f"Piano/{name}.md", NOTE.replace("Espresso", name.title()), commit=True)
    hand_write(vault, "Piano/tempo.md", NOTE.replace("Espresso", "Tempo"), commit=True)
    with running_daemon(vault, tmp_path / "token", commit_quiet_period=1.5) as daemon:
        runtime = daemon.memory
        assert runtime is not None and parts(runtime).catalog.by_path("Piano/tempo.md")
        (vault / "Music").mkdir()
        for name in ("scales", "chords"):
            (vault / "Piano" / f"{name}.md").rename(vault / "Music" / f"{name}.md")
        (vault / "Piano" / "trash.md").unlink()
        wait_for(lambda: git(vault, "status", "--porcelain", "--untracked-files=all") == "")
        since = git(vault, "rev-parse", "HEAD").strip()
        (vault / "Piano" / "tempo.md").rename(vault / "Piano" / "Tempo and metre.md")
        wait_for(lambda: git(vault, "rev-parse", "HEAD").strip() != since)
        wait_for(lambda: git(vault, "status", "--porcelain", "--untracked-files=all") == "")
    single = git(vault, "log", "-1", "--format=%B")
    folder = git(vault, "log", "-1", "--skip=1", "--format=%B")
    assert folder.splitlines()[0] == "hand edits: 3 files (2 renamed, 1 deleted): chords, scales, trash"
    assert "- renamed Piano/scales.md -> Music/scales.md" in folder
    assert "- renamed Piano/chords.md -> Music/chords.md" in folder
    assert "- deleted Piano/trash.md" in folder and "- deleted Piano/scales.md" not in folder
    assert single.strip().splitlines()[0] == "hand rename: Piano/tempo.md -> Piano/Tempo and metre.md"


def test_a_grouped_commit_names_the_writes_it_carries(vault: Path, held_lock: HeldLock) -> None:
    """A commit that groups writes queued while git was busy names them in its subject too."""
    notes = [vault / "memory" / "semantic" / f"n{i}.md" for i in range(4)]
    writer = CommitWriter(GitRepo(vault, lock_timeout=0.2), retry_delay=0.05)
    writer.start()
    try:
        held_lock.take(vault)
        for i, note in enumerate(notes):
            note.write_text(f"note {i}\n", encoding="utf-8")
            writer.submit([f"memory/semantic/n{i}.md"], f"memory_append: add n{i}\n\nid: {i}\n")
        wait_for(lambda: len(writer._retry) == 4, interval=0.01)  # every write waits for the lock
        held_lock.release()
        writer.flush()
    finally:
        writer.close()
    assert git(vault, "log", "-1", "--format=%s").strip() == (
        "vaultmem: 4 writes: memory_append: add n0; memory_append: add n1; memory_append: add n2 and 1 more"
    )


def test_a_grouped_commit_holds_the_writes_of_one_author_only(vault: Path, held_lock: HeldLock) -> None:
    """Issue 18: writes of two agents queued while git was busy are not one commit under one name:
    each run of one author's writes is its own commit, in the order they were made."""
    writer = CommitWriter(GitRepo(vault, lock_timeout=0.2), retry_delay=0.05)
    writer.start()
    authors = [Author("alice", "alice@vaultmem.local"), Author("bob", "bob@vaultmem.local")]
    try:
        held_lock.take(vault)
        for i in range(6):
            (vault / "memory" / "semantic" / f"n{i}.md").write_text(f"note {i}\n", encoding="utf-8")
            who = authors[i // 2 % 2]  # alice, alice, bob, bob, alice, alice
            writer.submit([f"memory/semantic/n{i}.md"], f"memory_append: add n{i}\n", author=who)
        wait_for(lambda: len(writer._retry) == 6, interval=0.01)  # every write waits for the lock
        held_lock.release()
        writer.flush()
    finally:
        writer.close()
    log = git(vault, "log", "-3", "--format=%x1e%an %s", "--name-only").split("\x1e")[1:]
    assert [[line for line in entry.splitlines() if line] for entry in log] == [
        [
            "alice vaultmem: 2 writes: memory_append: add n4; memory_append: add n5",
            "memory/semantic/n4.md",
            "memory/semantic/n5.md",
        ],
        [
            "bob vaultmem: 2 writes: memory_append: add n2; memory_append: add n3",
            "memory/semantic/n2.md",
            "memory/semantic/n3.md",
        ],
        [
            "alice vaultmem: 2 writes: memory_append: add n0; memory_append: add n1",
            "memory/semantic/n0.md",
            "memory/semantic/n1.md",
        ],
    ]


# -- item 9: git locks ----------------------------------------------------------------------------------


class HeldLock:
    """``.git/index.lock`` held open by another process, as a person's running git holds it."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.path: Path | None = None

    def take(self, vault: Path) -> Path:
        self.path = vault / ".git" / "index.lock"
        code = (
            "import os, sys\n"
            "fd = os.open(sys.argv[1], os.O_CREAT | os.O_EXCL | os.O_WRONLY)\n"
            "print('held', flush=True)\n"
            "sys.stdin.read()\n"
            "os.unlink(sys.argv[1])\n"
        )
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, str(self.path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert self.process.stdout is not None and self.process.stdout.readline() == b"held\n"
        return self.path

    def release(self) -> None:
        """The person's git finishes: its lock goes."""
        if self.process is not None and self.process.poll() is None:
            assert self.process.stdin is not None and self.process.stdout is not None
            self.process.stdin.close()
            self.process.wait(timeout=30)
            self.process.stdout.close()


@pytest.fixture
def held_lock() -> Iterator[HeldLock]:
    lock = HeldLock()
    yield lock
    lock.release()


def _stale_lock(vault: Path, age_s: float = 120.0) -> Path:
    """What a git killed mid-commit leaves: an index.lock nobody holds, as old as ``age_s``."""
    lock = vault / ".git" / "index.lock"
    lock.write_bytes(b"DIRC")  # the start of an index git never finished writing
    then = time.time() - age_s
    os.utime(lock, (then, then))
    return lock


def test_a_stale_index_lock_left_by_a_killed_commit_does_not_stop_the_restart(
    vault: Path, tmp_path: Path
) -> None:
    """Issue 13.9: the restart exited 1 with "git is locked by another process"."""
    hand_write(vault, "memory/semantic/espresso-ratio.md", NOTE)  # acknowledged, not yet committed
    lock = _stale_lock(vault)
    server = ServeProcess(vault, tmp_path / "config")
    try:
        assert not lock.exists()
        assert "removed a stale git lock" in server.output.drain()
        assert git(vault, "status", "--porcelain", "--untracked-files=all") == ""
        assert git(vault, "log", "-1", "--format=%s").startswith("vaultmem: record changes found at start")

        async def append() -> None:
            async with mcp_client(server.url, server.token) as client:
                structured(
                    await client.call_tool("memory_append", {"content": "After.", "kind": "reference"})
                )

        anyio.run(append)
    finally:
        assert server.stop() == 0
    assert "memory_append: add after" in git(vault, "log", "--format=%s")


def test_the_daemon_starts_and_serves_while_a_live_git_lock_is_held(
    vault: Path, tmp_path: Path, held_lock: HeldLock
) -> None:
    """Issue 13.9: a live lock is never deleted, however old; the daemon serves meanwhile (writes
    acknowledged, commits queued) and commits once the lock is released."""
    hand_write(vault, "vaultmem.yaml", "git_lock_timeout: 0.5\n")
    hand_write(vault, "memory/semantic/espresso-ratio.md", NOTE)
    lock = held_lock.take(vault)
    then = time.time() - 120  # far older than the lock timeout: only being held keeps it live
    os.utime(lock, (then, then))
    server = ServeProcess(vault, tmp_path / "config")
    try:
        ids: list[str] = []

        async def append(content: str) -> None:
            with anyio.fail_after(20):
                async with mcp_client(server.url, server.token) as client:
                    result = structured(
                        await client.call_tool("memory_append", {"content": content, "kind": "reference"})
                    )
                    ids.append(result["id"])

        anyio.run(append, "Written while git is locked.")
        assert lock.exists()
        assert "espresso-ratio.md" in git(vault, "status", "--porcelain", "--untracked-files=all")
        held_lock.release()
        wait_for(lambda: git(vault, "status", "--porcelain", "--untracked-files=all") == "", timeout=30)
        assert ids[0] in git(vault, "log", "--format=%B")
    finally:
        assert server.stop() == 0
    assert "removed a stale git lock" not in server.output.drain()


def test_doctor_says_a_lock_is_stale_and_leaves_it(vault: Path, tmp_path: Path) -> None:
    lock = _stale_lock(vault)
    env = stdio_env(XDG_CONFIG_HOME=str(tmp_path / "config"), VAULTMEM_EMBEDDER="fake")
    run = [VAULTMEM, "doctor", "--vault", str(vault)]
    report = subprocess.run([*run, "--json"], capture_output=True, text=True, env=env, check=False)
    assert report.returncode == 1, report.stderr
    (found,) = json.loads(report.stdout)["git_locks"]
    assert found["path"] == str(lock) and found["stale"] is True and found["held"] is False
    human = subprocess.run(run, capture_output=True, text=True, env=env, check=False).stdout
    assert "index.lock: stale" in human and "killed mid-commit" in human
    assert lock.exists()  # doctor only reads
