"""A cross-process write lock, so two vaultmem processes on one vault never interleave a write."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path
from types import TracebackType

from vaultmem.errors import VaultError


class WriteLock:
    """Reentrant within a process (threads queue on an RLock), exclusive across processes (flock)."""

    def __init__(self, path: Path, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    def acquire(self) -> None:
        if not self._thread_lock.acquire(timeout=self.timeout):
            raise VaultError(f"timed out after {self.timeout:.0f}s waiting for the vault write lock")
        try:
            if self._depth == 0:
                self._fd = self._lock_file()
            self._depth += 1
        except BaseException:
            self._thread_lock.release()
            raise

    def _lock_file(self) -> int:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + self.timeout
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise VaultError(
                        f"another vaultmem process has held {self.path} for {self.timeout:.0f}s; "
                        "retry, or stop the other process"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
        self._thread_lock.release()

    def __enter__(self) -> WriteLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
