"""Where the index lives in the state directory, and how a full rebuild replaces it under the feet
of processes that have it open (the daemon, a stdio server, a CLI search).

::

    <state>/index             the index (LanceDB tables, index.json) until a first full rebuild
    <state>/index-<hex>       an index a full rebuild made (``vaultmem reindex --full``)
    <state>/index.current     the name of the current one; absent means ``index``

A rebuild builds a new folder beside the current one and points ``index.current`` at it (one
atomic rename); each process notices on its next read (:class:`Follower`, two ``stat`` calls) and
switches. Nothing writes into a folder it did not open, and a folder is deleted by the last process
to let go of it (a shared ``flock`` on ``<folder>/in-use.lock`` while open). Why and the figures:
docs/architecture.md, "A full rebuild beside a running daemon".
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from vaultmem.vault.atomic import atomic_write

log = logging.getLogger(__name__)
POINTER = "index.current"
DEFAULT = "index"
IN_USE = "in-use.lock"
_NAME = re.compile(r"index(-[0-9a-f]{16})?")
#: A folder no process holds is swept only once it is this old (a rebuild takes its lock at once).
SWEEP_AFTER_S = 60.0
Stamp = tuple[tuple[int, int] | None, tuple[int, int] | None]


def current(state_dir: Path) -> Path:
    """The folder of the current index (``<state>/index`` unless a full rebuild moved it)."""
    try:
        name = (state_dir / POINTER).read_text(encoding="utf-8").strip()
    except OSError:
        return state_dir / DEFAULT
    if not _NAME.fullmatch(name):  # a damaged pointer: derived state, fall back to the default
        log.warning("%s names no index folder (%r); using %s", state_dir / POINTER, name, DEFAULT)
        return state_dir / DEFAULT
    return state_dir / name


def stamp(state_dir: Path, folder: Path) -> Stamp:
    """What changes when the index is replaced: the pointer file (rewritten by a rebuild), and
    ``folder`` itself (its inode changes when it is deleted and made again)."""
    try:
        pointer = (state_dir / POINTER).stat()
        written: tuple[int, int] | None = (pointer.st_ino, pointer.st_mtime_ns)
    except OSError:
        written = None
    try:
        st = folder.stat()
        identity: tuple[int, int] | None = (st.st_dev, st.st_ino)
    except OSError:
        identity = None
    return written, identity


def new_folder(state_dir: Path) -> tuple[Path, int]:
    """A fresh folder for a full rebuild, already held (see :func:`hold`): ``(folder, lock)``."""
    folder = state_dir / f"index-{uuid.uuid4().hex[:16]}"
    folder.mkdir(parents=True)
    return folder, hold(folder)


def point_at(state_dir: Path, folder: Path) -> None:
    """Make ``folder`` the current index (atomic: every reader sees the old name or the new one)."""
    atomic_write(state_dir / POINTER, f"{folder.name}\n".encode())


def hold(folder: Path) -> int:
    """Mark ``folder`` as in use by this process (a shared lock; release with :func:`release`)."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / IN_USE, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def release(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)  # closing drops the lock


def remove_if_unused(folder: Path) -> bool:
    """Delete ``folder`` if no process holds it; True if it was deleted."""
    try:
        fd = os.open(folder / IN_USE, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False  # another process still reads or writes it: it deletes the folder later
    try:
        shutil.rmtree(folder, ignore_errors=True)
    finally:
        os.close(fd)
    log.info("removed the replaced index %s", folder)
    return True


def sweep(state_dir: Path) -> None:
    """Delete index folders other than the current one that no process holds (a replaced index
    whose last user has gone, a rebuild that was killed)."""
    keep = current(state_dir)
    try:
        folders = [p for p in state_dir.iterdir() if p.is_dir() and _NAME.fullmatch(p.name)]
    except OSError:
        return
    now = time.time()
    for folder in folders:
        if folder == keep:
            continue
        with contextlib.suppress(OSError):
            if now - folder.stat().st_mtime >= SWEEP_AFTER_S or (folder / IN_USE).exists():
                remove_if_unused(folder)


class Follower:
    """One process's hold on its index folder, noticing when a rebuild replaces it.

    ``state_dir`` None: the folder is only held (a one-shot reader), never switched.
    """

    #: Seconds a replaced folder stays held after the switch, so a search still reading it ends.
    GRACE_S = 30.0
    #: Seconds between two looks at the pointer. The folder a process holds is never deleted under
    #: it, so reading it a little after a rebuild switched is harmless (and what it writes there
    #: meanwhile reaches the new index with the reconcile that follows the switch).
    CHECK_EVERY_S = 0.1

    def __init__(self, state_dir: Path | None, folder: Path) -> None:
        self.state_dir = state_dir
        self.folder = folder
        self._fd: int | None = hold(folder)
        self._stamp = stamp(state_dir, folder) if state_dir is not None else None
        self._retired: list[tuple[Path, int, float]] = []
        self._checked = time.monotonic()

    def changed(self, *, now: bool = False) -> bool:
        """True when the current index is no longer this process's folder (two ``stat`` calls, at
        most every :attr:`CHECK_EVERY_S` unless ``now``)."""
        if self.state_dir is None:
            return False
        now_s = time.monotonic()
        if not now and now_s - self._checked < self.CHECK_EVERY_S:
            return False
        return self._look(now_s)

    def _look(self, now: float) -> bool:
        assert self.state_dir is not None
        self._checked = now
        if self._retired and now - self._retired[0][2] >= self.GRACE_S:
            self._let_go(self._retired.pop(0))
        return stamp(self.state_dir, self.folder) != self._stamp

    def switch(self) -> Path:
        """Hold the current folder instead (the old one is let go after :attr:`GRACE_S`)."""
        assert self.state_dir is not None
        new = current(self.state_dir)
        new_fd = hold(new)
        if self._fd is not None:
            if new == self.folder:  # the same name, a new folder (deleted and made again)
                release(self._fd)
            else:
                self._retired.append((self.folder, self._fd, time.monotonic()))
        self.folder, self._fd = new, new_fd
        self._stamp = stamp(self.state_dir, new)
        return new

    def close(self) -> None:
        """Let go of every folder; a replaced one is deleted if nobody else holds it."""
        for retired in self._retired:
            self._let_go(retired)
        self._retired.clear()
        if self._fd is not None:
            release(self._fd)
            self._fd = None
            if self.state_dir is not None and current(self.state_dir) != self.folder:
                remove_if_unused(self.folder)

    @staticmethod
    def _let_go(retired: tuple[Path, int, float]) -> None:
        folder, fd, _since = retired
        release(fd)
        remove_if_unused(folder)


class Catchup:
    """What a process does once after it switched folders (its reconcile: the notes it wrote
    meanwhile, which the new folder lacks). A reader that comes while it runs waits for it, so none
    answers from the new folder without them; the run's own reads pass."""

    def __init__(self) -> None:
        self._due = False
        self._lock = threading.Lock()
        self._thread: int | None = None

    def due(self) -> None:
        """A switch happened: the next :meth:`run` calls its callback."""
        self._due = True

    def run(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` if a switch is due (once however many readers call), else return."""
        if not self._due or self._thread == threading.get_ident():
            return
        with self._lock:
            if not self._due:
                return  # another reader ran it while this one waited
            self._thread = threading.get_ident()
            try:
                callback()
            finally:
                self._thread = None
                self._due = False
