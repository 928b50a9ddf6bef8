"""A cross-process write lock, so two vaultmem processes on one vault never interleave a write."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path
from types import TracebackType

from vaultmem.errors import VaultError


class ProcessLock:
    """Exclusive across processes (flock), shared by every thread of this process that holds it.

    A write holds it from its decision until its file is in place, so another vaultmem process on
    the same vault never decides against a stale view; threads of this process overlap their slow
    fsyncs meanwhile and serialise their decisions on a separate thread lock.
    """

    def __init__(self, path: Path, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout
        self._mutex = threading.Lock()
        self._count = 0
        self._fd: int | None = None

    def acquire(self) -> None:
        with self._mutex:
            if self._count == 0:
                self._fd = _flock(self.path, self.timeout)
            self._count += 1

    def release(self) -> None:
        with self._mutex:
            self._count -= 1
            if self._count == 0 and self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> ProcessLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def _flock(path: Path, timeout: float) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise VaultError(
                    f"another vaultmem process has held {path} for {timeout:.0f}s; "
                    "retry, or stop the other process"
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
