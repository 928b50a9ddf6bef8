"""``vault/locks.ProcessLock``: the write lock on a git directory that cannot take it."""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

import pytest

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
