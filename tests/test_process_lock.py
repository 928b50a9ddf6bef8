"""``vault/locks.ProcessLock``: the write lock on a git directory that cannot take it."""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

import pytest

from tests.conftest import git
from tests.sync_harness import Cluster
from vaultmem.vault.locks import ProcessLock


def test_a_git_directory_without_flock_takes_the_fallback_and_leaks_no_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vault's git directory on a filesystem without flock (some network and FUSE mounts answer
    ENOLCK or EOPNOTSUPP): the lock is taken in the state directory, and every write left one
    more descriptor open on the git directory's lock file, until the daemon ran out of them."""
    primary, fallback = tmp_path / "git" / "vaultmem-write.lock", tmp_path / "state" / "write.lock"
    real = fcntl.flock

    def no_flock_on_the_git_dir(fd: int, operation: int) -> None:
        if os.path.samefile(f"/proc/self/fd/{fd}", primary):
            raise OSError(errno.ENOLCK, "No locks available")
        real(fd, operation)

    monkeypatch.setattr(fcntl, "flock", no_flock_on_the_git_dir)
    lock = ProcessLock(primary, timeout=1.0, fallback=fallback)
    with lock:
        pass
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        with lock:
            assert fallback.exists()
    assert len(os.listdir("/proc/self/fd")) == before


def test_a_git_directory_without_flock_still_commits_and_syncs_through_the_fallback_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit gate on a git directory that refuses flock: every commit and every sync round
    failed with the filesystem's ENOLCK (the write lock fell back, the gate did not). Now the gate is
    taken in the state directory: the write is committed under its tool's name and the round sends it."""
    cluster = Cluster(tmp_path)
    laptop = cluster.first("laptop")
    git_dir = laptop.repo.git_dir.resolve()
    real = fcntl.flock

    def no_flock_in_the_git_dir(fd: int, operation: int) -> None:
        if Path(os.readlink(f"/proc/self/fd/{fd}")).is_relative_to(git_dir):
            raise OSError(errno.ENOLCK, "No locks available")
        real(fd, operation)

    monkeypatch.setattr(fcntl, "flock", no_flock_in_the_git_dir)
    try:
        memory = laptop.service()
        memory.append("The kettle wants descaling every month with citric acid.", "reference")
        report = memory.sync()
        assert report.ok, report.errors
        laptop.close()
    finally:
        cluster.close()
    subjects = git(laptop.root, "log", "--format=%s")
    assert "memory_append" in subjects, subjects
    assert git(laptop.root, "status", "--porcelain") == ""
    assert git(cluster.remote, "rev-parse", "main") == git(laptop.root, "rev-parse", "HEAD")
