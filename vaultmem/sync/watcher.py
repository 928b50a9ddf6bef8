"""The file watcher: hand edits become searchable within a second and are committed to git.

Events from watchdog are keyed on the path they leave behind (a move's destination, since editors
save atomically by renaming a temp file over the note), debounced per path, then each path is
re-read and hashed: the daemon's own writes are recognised by hash and skipped. After a short
quiet period the changed paths are committed as hand edits. A periodic rescan, and a rescan when
the kernel's event queue overflows, catch anything the events missed.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from vaultmem.config import Settings
from vaultmem.errors import VaultmemError
from vaultmem.vault.layout import IGNORED_DIRS, is_ignored_rel, is_side_file, is_vault_file

log = logging.getLogger(__name__)
T = TypeVar("T")
#: Events a mere reader causes. Left in, every read of a note would push its debounce back, and a
#: note read more often than the debounce (a poller, a sync client's scan) would never be indexed.
_READ_ONLY_EVENTS = frozenset({"opened", "closed_no_write"})
_WATCHDOG_LOGGERS = ("watchdog.observers.inotify", "watchdog.observers.inotify_c")
#: What ``sync_path`` did that is the person's change to record in git: a note indexed or removed,
#: a side file or another file of the vault (an image, a canvas) changed, and also a note left out
#: of the index (malformed frontmatter, a name that is not UTF-8): git is the audit trail of what
#: the person did too. A pipe or socket (``skipped``) is nothing git could record.
_COMMITTED = frozenset({"indexed", "removed", "changed", "malformed", "unreadable"})
#: Paths due at once from which they go to ``sync_paths`` in one batch: one index write for all,
#: not one each, every one waiting for the one before (1,000 notes a merge brought in).
BATCH = 16


class _OverflowSpy(logging.Handler):
    """watchdog logs a queue overflow but tells no callback: turn that log line into a rescan."""

    def __init__(self, on_overflow: Callable[[], None]) -> None:
        super().__init__(logging.WARNING)
        self.on_overflow = on_overflow

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self.on_overflow()


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: VaultWatcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in _READ_ONLY_EVENTS:
            return  # a reader (Obsidian, a backup, vaultmem itself) changed nothing
        if event.is_directory:
            if event.event_type in ("moved", "deleted"):
                self.watcher.request_rescan()  # a folder rename or delete moves many notes at once
            if event.event_type in ("created", "moved"):
                raw = getattr(event, "dest_path", "") or event.src_path
                self.watcher.folder_appeared(raw if isinstance(raw, str) else raw.decode())
            return
        raws = [r for r in (event.src_path, getattr(event, "dest_path", "")) if r]
        self.watcher.touch(*(r if isinstance(r, str) else r.decode() for r in raws))


class VaultWatcher:
    """Watches the vault and hands debounced paths to ``sync_path``.

    ``sync_path(rel)`` updates the catalog and index for one path and returns what happened;
    ``rescan()`` reconciles the whole vault and returns the paths it changed; ``commit(paths)``
    records hand edits in git. ``sync_paths(rels)``, when given, does what ``sync_path`` does for
    each of many paths due at once (a merge another process made), in one index batch.

    The watches can go up before the handlers exist (:meth:`watch`, then :meth:`attach` and
    :meth:`run`): a daemon watches before it scans the vault, so that a save landing while it
    starts is an event, not a change no one looks at until the next periodic rescan.
    """

    def __init__(
        self,
        root: Path,
        state_dir: Path,
        *,
        sync_path: Callable[[str], str] | None = None,
        rescan: Callable[[], list[str]] | None = None,
        commit: Callable[[list[str]], None] | None = None,
        debounce: float = 0.15,
        quiet_period: float = 2.0,
        rescan_interval: float = 300.0,
        home: str = "",
        sync_paths: Callable[[list[str]], dict[str, str]] | None = None,
    ) -> None:
        self.root = root.resolve()
        self._sync_paths = sync_paths
        self.state_dir = state_dir.resolve()
        self.home = home  # vaultmem's folder in the vault (its side files live under it)
        self._sync_path = sync_path
        self._rescan = rescan
        self._commit = commit
        self.debounce = debounce
        self.quiet_period = quiet_period
        self.rescan_interval = rescan_interval
        self._due: dict[str, float] = {}
        self._first_touch: dict[str, float] = {}
        self.max_delay = max(debounce, 0.75)
        self._dirty: set[str] = set()
        self._last_change = 0.0
        self._rescan_requested = False
        self._rescan_at = float("inf")  # a rescan asked for later (a retry), monotonic time
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._observer: Observer | None = None  # type: ignore[valid-type]
        self._thread: threading.Thread | None = None
        self._spy = _OverflowSpy(self.request_rescan)
        self._handler = _Handler(self)
        self._watched: set[Path] = set()
        self._new_folders: set[Path] = set()
        #: Rescans finished (periodic, requested or after an overflow), for tests and status.
        self.rescans = 0

    # -- events -------------------------------------------------------------------------------
    def relative(self, raw: str) -> str | None:
        """The vault-relative path of an event's path, or None when it is not a note to watch (nor a
        side file or another file of the vault's to commit: an image, a canvas)."""
        path = Path(raw)
        try:
            rel = path.relative_to(self.root).as_posix()
        except ValueError:
            return None
        if path == self.state_dir or self.state_dir in path.parents:
            return None
        if rel.split("/", 1)[0] in IGNORED_DIRS or (
            is_ignored_rel(rel, self.home) and not is_side_file(rel, self.home) and not is_vault_file(rel)
        ):
            return None
        return rel

    def touch(self, *raws: str) -> None:
        """Paths changed; the two of one rename are due together, so they are read in one batch:
        apart, the old name's removal could hand its id to a copy before the new name was seen."""
        rels = [rel for rel in map(self.relative, raws) if rel is not None]
        if not rels:
            return
        with self._cond:
            now = time.monotonic()
            # Debounced, but never postponed past max_delay: a file saved every few milliseconds
            # for a long time is still indexed within about a second of its first change.
            due = max(
                min(now + self.debounce, self._first_touch.setdefault(rel, now) + self.max_delay)
                for rel in rels
            )
            for rel in rels:
                self._due[rel] = due
            self._cond.notify()

    def folder_appeared(self, raw: str) -> None:
        """A folder was created or moved in: a new top-level folder needs a watch of its own."""
        path = Path(raw)
        if path.parent == self.root and self._watchable(path):
            with self._cond:
                self._new_folders.add(path)
                self._rescan_requested = True  # notes written before the watch began
                self._cond.notify()

    def _watchable(self, path: Path) -> bool:
        """Top-level folders worth watching: not git's, not the state directory, not hidden ones."""
        return (
            path.name not in IGNORED_DIRS
            and not path.name.startswith(".")
            and path != self.state_dir
            and path.is_dir()
            and not path.is_symlink()
        )

    def _watch(self, folder: Path) -> None:
        if self._observer is not None and folder not in self._watched:
            self._watched.add(folder)
            try:
                self._observer.schedule(self._handler, str(folder), recursive=True)
            except RecursionError:
                # watchdog walks the folder with os.walk, which recurses once per level on
                # Python 3.11: a tree ~1,000 folders deep (a runaway copy) cannot be watched. The
                # rest of the vault is; the periodic rescan finds what changes in this folder.
                log.warning(
                    "%s holds folders nested too deep to watch; changes in it are found by the "
                    "rescan every %.0f s (flatten the folders to have them seen at once)",
                    folder,
                    self.rescan_interval,
                )

    def _touch_files_in(self, folder: Path) -> None:
        """The files in a folder that just appeared that are not notes (an image saved there before
        its watch was up) are looked at as if changed: the rescan that follows reads only notes."""
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = [d for d in dirnames if d not in IGNORED_DIRS and not d.startswith(".")]
            self.touch(*(f"{dirpath}{os.sep}{name}" for name in filenames if not name.endswith(".md")))

    def request_rescan(self) -> None:
        with self._cond:
            self._rescan_requested = True
            self._cond.notify()

    def rescan_soon(self, delay: float) -> None:
        """Rescan in ``delay`` seconds (or sooner, if another rescan is due first)."""
        with self._cond:
            self._rescan_at = min(self._rescan_at, time.monotonic() + delay)
            self._cond.notify()

    # -- lifecycle ----------------------------------------------------------------------------
    def attach(
        self,
        *,
        sync_path: Callable[[str], str],
        rescan: Callable[[], list[str]],
        commit: Callable[[list[str]], None],
        sync_paths: Callable[[list[str]], dict[str, str]] | None = None,
    ) -> None:
        """Who handles the events (before :meth:`run`)."""
        self._sync_path, self._rescan, self._commit = sync_path, rescan, commit
        self._sync_paths = sync_paths

    def start(self) -> None:
        """:meth:`watch`, then :meth:`run`."""
        self.watch()
        self.run()

    def watch(self) -> None:
        """Put the watches up: events are recorded from now on, and handled once :meth:`run` runs."""
        if self._observer is not None:
            return
        for name in _WATCHDOG_LOGGERS:
            logging.getLogger(name).addHandler(self._spy)
        # The vault root is watched on its own and each note folder recursively, so that git's
        # objects and the index's files (thousands of short-lived folders and events) are never
        # watched: they would fill the kernel's event queue and leak watches in a long-running daemon.
        observer = Observer()
        observer.schedule(self._handler, str(self.root), recursive=False)
        observer.daemon = True
        observer.start()
        self._observer = observer
        for child in sorted(self.root.iterdir()):
            if self._watchable(child):
                self._watch(child)

    def _handlers(
        self,
    ) -> tuple[Callable[[str], str], Callable[[], list[str]], Callable[[list[str]], None]]:
        if self._sync_path is None or self._rescan is None or self._commit is None:
            raise RuntimeError("attach the watcher's handlers before running it")
        return self._sync_path, self._rescan, self._commit

    def run(self) -> None:
        """Handle what the watches recorded, since :meth:`watch` and from now on."""
        self._handlers()
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="vaultmem-watcher", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop watching; process what is due and commit what is dirty before returning."""
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=10)
            self._observer = None
        self._stop.set()
        with self._cond:
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        for name in _WATCHDOG_LOGGERS:
            logging.getLogger(name).removeHandler(self._spy)

    # -- the worker ---------------------------------------------------------------------------
    def _loop(self) -> None:
        next_rescan = time.monotonic() + self.rescan_interval
        while True:
            with self._cond:
                now = time.monotonic()
                waits = [next_rescan - now, self._rescan_at - now]
                if self._due:
                    waits.append(min(self._due.values()) - now)
                if self._dirty:
                    waits.append(self._last_change + self.quiet_period - now)
                timeout = max(0.0, min(waits))
                if not self._stop.is_set() and not self._rescan_requested:
                    self._cond.wait(timeout)
                now = time.monotonic()
                stopping = self._stop.is_set()
                ready = sorted(p for p, t in self._due.items() if t <= now or stopping)
                # the files that are there before those that went: a note renamed, or a copy's
                # original deleted in the same moment, is read at its new name first, keeping its id
                ready.sort(key=lambda p: not os.path.lexists(self.root / p))
                for p in ready:
                    del self._due[p]
                    self._first_touch.pop(p, None)
                rescan = self._rescan_requested or now >= min(next_rescan, self._rescan_at)
                self._rescan_requested = False
                if rescan:
                    self._rescan_at = float("inf")
                new_folders, self._new_folders = self._new_folders, set()
            sync_path, rescan_vault, commit = self._handlers()
            for folder in sorted(new_folders):
                _safe(partial(self._watch, folder), None)
                _safe(partial(self._touch_files_in, folder), None)
            changed: list[str] = []
            if rescan:
                next_rescan = now + self.rescan_interval
                changed.extend(_safe(rescan_vault, []))
                self.rescans += 1
            batch: dict[str, str] = {}
            if self._sync_paths is not None and len(ready) >= BATCH:
                batch = _safe(partial(self._sync_paths, ready), {})
            for rel in ready:
                outcome = batch.get(rel) or _safe(partial(sync_path, rel), "error")
                if outcome in _COMMITTED:
                    changed.append(rel)
            if changed:
                with self._cond:
                    self._dirty.update(changed)
                    self._last_change = time.monotonic()
            with self._cond:
                quiet = time.monotonic() - self._last_change >= self.quiet_period
                to_commit = sorted(self._dirty) if self._dirty and (quiet or stopping) else []
                if to_commit:
                    self._dirty.clear()
            if to_commit:
                _safe(partial(commit, to_commit), None)
            if stopping and not self._due:
                return


def watch_vault(settings: Settings, home: str = "") -> VaultWatcher:
    """A watcher of the vault whose watches are up: the events from now on are kept until its
    handlers are attached and it runs (``IndexKeeper.start_watching``). A daemon calls it before
    the vault is scanned, so that a save landing while it starts is not missed until the periodic
    rescan."""
    watcher = VaultWatcher(
        settings.vault,
        settings.state_dir,
        quiet_period=settings.commit_quiet_period,
        rescan_interval=settings.rescan_interval,
        home=home,
    )
    watcher.watch()
    return watcher


def _safe(fn: Callable[[], T], fallback: T) -> T:
    try:
        return fn()
    except VaultmemError as exc:
        log.warning("watcher: %s", exc)
    except Exception:  # the watcher must never die silently: log and keep serving
        log.exception("watcher: unexpected error")
    return fallback
