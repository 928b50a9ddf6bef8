"""A sync round killed with SIGKILL at any point (issue 17, Deliver 4): the next round finishes or rolls
back the merge cleanly (`git status` clean, nothing lost) and the machines converge.

The round runs in a child process. Kills at the round's own steps come from its checkpoint hook;
kills inside git's merge come from outside, to the child's whole process group (git and the merge
driver die with it, as under a supervisor's stop), at moments read from the driver's records.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sync_harness import Cluster, Machine, fsck, notes_with_markers, status, tree
from vaultmem.notes.model import note_from_text
from vaultmem.vault.atomic import remove_files
from vaultmem.vault.history import GitRepo
from vaultmem.vault.layout import VaultLayout
from vaultmem.vault.merge_driver import RECORDS_FILE, read_records
from vaultmem.vault.merge_state import MARKER, Marker, write_marker
from vaultmem.vault.remote import VaultSync

ROUND = """
import json, os, signal, sys
from pathlib import Path
from vaultmem.vault.history import GitRepo
from vaultmem.vault.remote import VaultSync

root, step = Path(sys.argv[1]), sys.argv[2]

def checkpoint(name):
    if name == step:
        os.kill(os.getpid(), signal.SIGKILL)

print(json.dumps(VaultSync(GitRepo(root), checkpoint=checkpoint).sync().as_dict()))
"""

NOTE = "---\nid: {id}\ntitle: Note {i}\nupdated: '2026-03-0{day}T00:00:00Z'\noccurrences: 1\n---\n{body}\n"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster(tmp_path)
    yield made
    made.close()


def note_id(i: int) -> str:
    return f"0190a1b2-{i:04x}-7000-8000-000000000000"


def diverge(cluster: Cluster, shared: int = 3, incoming: int = 0) -> tuple[Machine, Machine]:
    """Two machines with ``shared`` notes both edited (same body line), a new note each, and a
    pending hand edit on the laptop, ``incoming`` more new notes on the desktop; the desktop has
    pushed its side, so the laptop's next round merges every shared note."""
    laptop = cluster.first("laptop")
    desktop = cluster.clone("desktop")
    for i in range(shared):
        laptop.write(f"memory/semantic/n{i}.md", NOTE.format(id=note_id(i), i=i, day=1, body="base line"))
    laptop.sync()
    desktop.sync()
    for i in range(shared):
        laptop.write(f"memory/semantic/n{i}.md", NOTE.format(id=note_id(i), i=i, day=2, body="laptop line"))
        desktop.write(f"memory/semantic/n{i}.md", NOTE.format(id=note_id(i), i=i, day=3, body="desktop line"))
    laptop.repo.commit_paths([f"memory/semantic/n{i}.md" for i in range(shared)], "laptop edits")
    laptop.write("memory/semantic/laptop-only.md", "Written on the laptop, not yet committed.\n")
    desktop.write("memory/semantic/desktop-only.md", "Written on the desktop.\n")
    # The same new path on both machines, two different notes: the desktop's is older.
    desktop.write("memory/semantic/same.md", NOTE.format(id=note_id(9000), i=9000, day=1, body="desktop's"))
    laptop.write("memory/semantic/same.md", NOTE.format(id=note_id(9001), i=9001, day=1, body="laptop's"))
    for i in range(incoming):
        desktop.write(f"memory/semantic/d{i}.md", f"Desktop note {i}.\n")
    desktop.sync()
    return laptop, desktop


def run_round(machine: Machine, step: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ROUND, str(machine.root), step], capture_output=True, text=True, timeout=120
    )


def assert_converged(cluster: Cluster, laptop: Machine, desktop: Machine, shared: int) -> list[str]:
    """Sync both (the laptop first: it recovers), settle, check nothing was lost; the recovery's lines."""
    recovery: list[str] = []
    # A restart sweeps the temp files a kill left mid-write, as Memory does at start (they
    # are git-ignored meanwhile).
    leftovers: list[str] = []
    for _note in VaultLayout(laptop.root).iter_note_paths(temp_files=leftovers):
        pass
    remove_files(laptop.root, leftovers)
    for machine in (laptop, desktop):
        report = VaultSync(GitRepo(machine.root, lock_timeout=1.0)).sync()
        assert report.ok, report.errors
        recovery += report.recovery
    cluster.settle()
    assert status(laptop) == "" and status(desktop) == ""
    assert tree(laptop) == tree(desktop)
    assert notes_with_markers(laptop) == []
    files = tree(laptop)
    assert files["memory/semantic/laptop-only.md"] == b"Written on the laptop, not yet committed.\n"
    assert files["memory/semantic/desktop-only.md"] == b"Written on the desktop.\n"
    same = [note_from_text(d.decode(), p) for p, d in files.items() if p.startswith("memory/semantic/same")]
    assert files["memory/semantic/same.md"].count(b"desktop's") == 1  # the older note keeps the path
    assert sorted(n.id or "" for n in same) == [note_id(9000), note_id(9001)]  # each note once
    for i in range(shared):
        rel = f"memory/semantic/n{i}.md"
        kept = files[rel]
        copies = [p for p in files if p.startswith(f"memory/semantic/n{i}.conflict-")]
        assert len(copies) == 1, copies
        assert note_from_text(kept.decode(), rel).id == note_id(i)
        assert b"desktop line" in kept and b"laptop line" in files[copies[0]]  # both sides kept
    for repo in (cluster.remote, laptop.root, desktop.root):
        assert fsck(repo) == ""
    git_dir = GitRepo(laptop.root).git_dir
    assert not (git_dir / MARKER).exists() and not (git_dir / RECORDS_FILE).exists()
    return recovery


STEPS = {
    # step: what the kill leaves behind in the laptop's git directory
    "fetched": "nothing begun",
    "committed pending": "pending work committed, no merge",
    "marked": "the marker, no merge yet",
    "merged": "git's merge done, not committed (MERGE_HEAD)",
    "filed": "conflict notes and the renamed note written, not committed",
    "concluded": "the merge committed, the marker left",
    "pushing": "merged and committed, not pushed",
    "pushed": "pushed, the round not finished",
}


@pytest.mark.parametrize("step", list(STEPS))
def test_a_round_killed_at_each_step_is_finished_or_rolled_back_and_nothing_is_lost(
    cluster: Cluster, step: str
) -> None:
    laptop, desktop = diverge(cluster)
    killed = run_round(laptop, step)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    git_dir = GitRepo(laptop.root).git_dir
    assert (git_dir / "MERGE_HEAD").exists() == (step in ("merged", "filed"))
    assert (git_dir / MARKER).exists() == (step in ("marked", "merged", "filed", "concluded"))
    assert notes_with_markers(laptop) == []
    assert_converged(cluster, laptop, desktop, shared=3)


def records(machine: Machine) -> int:
    return len(read_records(GitRepo(machine.root).git_dir / RECORDS_FILE))


def in_gits_merge(machine: Machine) -> bool:
    git_dir = GitRepo(machine.root).git_dir
    return (
        (git_dir / MARKER).exists()
        and (git_dir / "index.lock").exists()
        and not (git_dir / "MERGE_HEAD").exists()
    )


SHARED = 150
MOMENTS = {
    "inside git's merge": in_gits_merge,
    "part-way through merging the notes": lambda m: records(m) >= SHARED // 3,
    "while filing the conflict notes": lambda m: any((m.root / "memory/semantic").glob("n*.conflict-*.md")),
}


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_a_round_whose_whole_process_group_is_killed_mid_merge_recovers(
    cluster: Cluster, moment: str
) -> None:
    laptop, desktop = diverge(cluster, shared=SHARED, incoming=400)
    child = subprocess.Popen(
        [sys.executable, "-c", ROUND, str(laptop.root), "never"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    reached = MOMENTS[moment]
    deadline = time.monotonic() + 60
    while child.poll() is None and time.monotonic() < deadline:
        if reached(laptop):
            # Frozen, then looked at again: on a loaded machine git could finish (its index.lock
            # renamed away) between the look and the kill, and the moment was missed.
            os.killpg(child.pid, signal.SIGSTOP)
            if reached(laptop):
                break
            os.killpg(child.pid, signal.SIGCONT)
        time.sleep(0.0005)
    os.killpg(child.pid, signal.SIGKILL)  # git and every child die with the round, as under systemd
    out, _ = child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL, out  # killed mid-round, not after it
    assert notes_with_markers(laptop) == []
    recovery = assert_converged(cluster, laptop, desktop, shared=SHARED)
    if moment == "inside git's merge":  # git died holding the index lock, before MERGE_HEAD
        assert any(line.endswith("index.lock") for line in recovery), recovery
        assert any(line.startswith("rolled back") for line in recovery), recovery
    else:
        assert any(line.startswith("finished the interrupted merge") for line in recovery), recovery


def test_a_merge_killed_while_git_wrote_the_work_tree_is_rolled_back_keeping_a_persons_edit(
    cluster: Cluster,
) -> None:
    """git killed mid-checkout leaves incoming files in the work tree and no MERGE_HEAD: recovery puts
    back what the merge wrote and keeps what a person wrote."""
    laptop, desktop = diverge(cluster)
    repo = GitRepo(laptop.root)
    laptop.repo.commit_all_pending("pending")
    repo.git("fetch", "-q", "origin")
    incoming = repo.git("rev-parse", "refs/remotes/origin/main").strip()
    head = repo.git("rev-parse", "HEAD").strip()
    write_marker(repo.git_dir, Marker(head, incoming))
    before = laptop.read("memory/semantic/n0.md")
    # What git had written when it died: one incoming version, one incoming new file.
    laptop.write(
        "memory/semantic/n1.md", repo.run("cat-file", "blob", f"{incoming}:memory/semantic/n1.md").stdout
    )
    laptop.write("memory/semantic/desktop-only.md", b"Written on the desktop.\n")
    # And a person's save in the same moment.
    laptop.write("memory/semantic/n0.md", before + b"A line the person typed.\n")
    recovery = VaultSync(repo).recover()
    assert any(line.startswith("rolled back") for line in recovery)
    assert status(laptop) == " M memory/semantic/n0.md\n"  # only the person's edit is left
    assert (
        laptop.read("memory/semantic/n1.md")
        == repo.run("cat-file", "blob", "HEAD:memory/semantic/n1.md").stdout
    )
    report = laptop.sync()
    assert "memory/semantic/n0.md" in report.committed
    cluster.settle()
    assert b"A line the person typed." in laptop.read("memory/semantic/n0.md") + b"".join(
        data for path, data in tree(laptop).items() if path.startswith("memory/semantic/n0.conflict-")
    )
    assert tree(laptop) == tree(desktop) and notes_with_markers(laptop) == []


def test_a_merge_a_person_started_is_left_alone_with_a_message(cluster: Cluster) -> None:
    laptop, _ = diverge(cluster)
    repo = GitRepo(laptop.root)
    laptop.repo.commit_all_pending("pending")
    repo.git("fetch", "-q", "origin")
    repo.run("merge", "--no-commit", "--no-ff", "origin/main", check=False)
    assert (repo.git_dir / "MERGE_HEAD").exists()
    before = tree(laptop)
    report = VaultSync(repo).sync()
    assert not report.ok and "git merge --abort" in report.errors[0]
    assert tree(laptop) == before and (repo.git_dir / "MERGE_HEAD").exists()


def test_a_ref_lock_a_killed_fetch_left_is_cleared_by_the_next_round(cluster: Cluster) -> None:
    laptop = cluster.first("laptop")
    lock = GitRepo(laptop.root).git_dir / "refs/remotes/origin/main.lock"
    lock.write_text("", encoding="utf-8")
    os.utime(lock, (time.time() - 60, time.time() - 60))  # nobody holds it, and it is old
    laptop.write("memory/semantic/after.md", "After the kill.\n")
    report = VaultSync(GitRepo(laptop.root, lock_timeout=1.0)).sync()
    assert report.ok and report.recovery == [f"removed {lock}"] and not lock.exists()
    assert report.pushed_commits == 1 and report.ahead == 0  # the tracking ref moved with the push
