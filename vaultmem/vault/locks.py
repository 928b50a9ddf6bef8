"""Cross-process locks: the write lock, so two vaultmem processes on one vault never interleave a
write, and the commit gate, so no commit lands while a sync round merges."""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

from vaultmem.errors import VaultBusy


class ProcessLock:
    """Exclusive across processes (flock), shared by every thread of this process that holds it.

    A write holds it from its decision until its file is in place, so another vaultmem process on
    the same vault never decides against a stale view; threads of this process overlap their slow
    fsyncs meanwhile and serialise their decisions on a separate thread lock.
    """

    def __init__(self, path: Path, timeout: float = 30.0, *, fallback: Path | None = None) -> None:
        self.path = path
        self.timeout = timeout
        #: Where the lock is taken when ``path`` cannot be created (its folder read-only: a vault on
        #: a read-only mount whose state directory is elsewhere), so a write still fails with what
        #: the vault says, not with the lock file's error.
        self.fallback = fallback
        self._mutex = threading.Lock()
        self._count = 0
        self._fd: int | None = None

    def acquire(self, stop: threading.Event | None = None) -> None:
        """Take it, waiting up to ``timeout`` s; :class:`VaultBusy` sooner once ``stop`` is set (a
        server's start asked to stop while another process holds the lock)."""
        with self._mutex:
            if self._count == 0:
                try:
                    self._fd = _flock(self.path, self.timeout, stop=stop)
                except OSError:
                    if self.fallback is None:
                        raise
                    self._fd = _flock(self.fallback, self.timeout, stop=stop)
            self._count += 1

    def release(self) -> None:
        with self._mutex:
            self._count -= 1
            if self._count == 0 and self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
                self._fd = None

    @contextlib.contextmanager
    def held(self, stop: threading.Event | None = None) -> Iterator[None]:
        """Hold it for the block (:meth:`acquire`'s ``stop``)."""
        self.acquire(stop)
        try:
            yield
        finally:
            self.release()

    def __enter__(self) -> ProcessLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


@contextlib.contextmanager
def flocked(
    path: Path, timeout: float, *, shared: bool = False, busy: str = "", fallback: Path | None = None
) -> Iterator[None]:
    """Hold an ``flock`` on ``path`` for the block: exclusive, or ``shared`` with other shared
    holders. Each call opens the file anew, so two holders in one process exclude each other as two
    processes do. ``busy`` is the error's message when the lock is not had within ``timeout`` s.
    When ``path``'s filesystem refuses ``flock`` (or the file cannot be made), the lock is taken on
    ``fallback`` instead, if given."""
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    try:
        fd = _flock(path, timeout, mode, busy)
    except OSError:
        if fallback is None:
            raise
        fd = _flock(fallback, timeout, mode, busy)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


class CommitGate:
    """Every commit of every vaultmem process on a vault passes it *shared*; a sync round holds it
    *exclusive* while it commits pending work and merges, so no commit (an agent's write, a hand
    edit the watcher saw) lands in the middle of a merge, where git's ``add`` could resolve a note
    the round left unmerged for itself. The file lives in the git directory: one per repository,
    wherever each process keeps its state directory.

    A git directory that refuses ``flock`` (some network and FUSE mounts answer ENOLCK or
    EOPNOTSUPP) has the gate taken at ``fallback`` instead, as the write lock does (its processes
    then share a gate when they share a state directory, the usual case)."""

    def __init__(self, path: Path, timeout: float = 30.0, *, fallback: Path | None = None) -> None:
        self.path = path
        self.timeout = timeout
        self.fallback = fallback

    def shared(self) -> contextlib.AbstractContextManager[None]:
        busy = f"a sync round held the vault's git ({self.path}) for {self.timeout:.0f}s; the commit waits"
        return flocked(self.path, self.timeout, shared=True, busy=busy, fallback=self.fallback)

    def exclusive(self) -> contextlib.AbstractContextManager[None]:
        busy = f"vaultmem commits kept {self.path} busy for {self.timeout:.0f}s; sync again"
        return flocked(self.path, self.timeout, busy=busy, fallback=self.fallback)


def _flock(
    path: Path,
    timeout: float,
    mode: int = fcntl.LOCK_EX,
    busy: str = "",
    *,
    stop: threading.Event | None = None,
) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if stop is not None and stop.is_set():
                os.close(fd)
                raise VaultBusy(f"stopped while another vaultmem process held {path}") from None
            if time.monotonic() >= deadline:
                os.close(fd)
                raise VaultBusy(
                    busy
                    or f"another vaultmem process has held {path} for {timeout:.0f}s; "
                    "retry, or stop the other process"
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        except OSError:  # no flock on this filesystem (ENOLCK, EOPNOTSUPP): the caller's fallback
            os.close(fd)
            raise
