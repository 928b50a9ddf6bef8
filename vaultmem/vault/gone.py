"""The ids a person's notes had before a rename.

A note without an ``id`` key (a person's, which vaultmem never adds one to) is answered under an id
derived from its path (``notes/ids.derived_id``). Renaming or moving it, in Obsidian, a file manager
or while nothing ran, gives it a new one, and every id a tool had answered for it before (kept in an
agent's context, in its own notes, in a script) would then name nothing. So the catalog records the
notes whose file went: the id each was answered under, with what its file held and its modification
time. An id that names no note now is looked up here, and answers the one note without an ``id`` key
holding the same bytes, with the same modification time, under another name: a rename keeps both (a
copy gets a time of its own, so a twin of a deleted note never takes its id). The record follows
the edits of the note it names since (a person goes on writing the note at its new name) and a
sync round's move of it (another machine's rename, which the checkout writes anew), so the id keeps
answering it. A file edited in the same breath as its rename, or merged with another machine's edit
of it, answers nothing: a guess would hand the id to the wrong note.

Derived state, saved beside the catalog cache (``<state>/gone-ids``): deleting the state directory
forgets the old ids, nothing else. The newest :data:`KEPT` are kept. Every vaultmem process on the
vault keeps its own copy and saves it merged with the file (read, merge, write, under a lock of the
file's own), so a pairing one process made (a CLI ``vaultmem sync`` beside the daemon) is never
lost to another's save: of two records of one id the newer state of the note wins (the greater
modification time; a record follows a note forward). An id a process cannot answer reads the file
again first, when it changed since.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from vaultmem.errors import VaultmemError
from vaultmem.notes.ids import derived_id
from vaultmem.vault.atomic import atomic_write
from vaultmem.vault.entry import Entry
from vaultmem.vault.locks import flocked
from vaultmem.vault.reading import read_regular
from vaultmem.vault.statefile import marshal_state, unmarshal_state

FORMAT = 2
#: How many gone notes are remembered (the oldest are dropped first): ~200 bytes each.
KEPT = 20_000
#: A file this small (an empty note, a bare heading) is too alike its neighbours to be recognised.
MIN_SIZE = 32
#: How long a save waits for another process's save of the same file (it then saves unmerged).
SAVE_LOCK_TIMEOUT = 10.0
Record = tuple[str, str, int]  # (fingerprint, content hash, modification time in ns)


class GoneNotes:
    """Notes without an ``id`` key whose file went: ``derived id -> (fingerprint, content hash,
    modification time in ns)``."""

    def __init__(self, file: Path) -> None:
        self._file = file
        self._gone: dict[str, Record] = {}
        self._by_file: dict[tuple[str, int], set[str]] = {}  # (content hash, mtime) -> keys
        self._unsaved = False
        self._seen: tuple[int, int, int] | None = None  # the file as last read or written
        for key, was in self._read_file():
            self._put(key, was)

    def _signature(self) -> tuple[int, int, int] | None:
        try:
            st = self._file.stat()
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def _read_file(self) -> list[tuple[str, Record]]:
        """The records the file holds, oldest first ([] for none, or a damaged file: derived state)."""
        self._seen = self._signature()
        try:
            saved: Any = unmarshal_state(read_regular(self._file))
            if saved[0] != FORMAT:
                return []
            return [(str(k), (str(fp), str(h), int(t))) for k, fp, h, t in saved[1]]
        except (OSError, ValueError, TypeError, EOFError, IndexError):
            return []

    def _merge(self, rows: list[tuple[str, Record]]) -> bool:
        """Take another process's records: a new id, or a newer state of a note (see the module
        docstring). True when one was taken."""
        taken = False
        for key, was in rows:
            mine = self._gone.get(key)
            if mine is None or was[2] > mine[2]:
                self._put(key, was)
                taken = True
        return taken

    def _put(self, key: str, was: Record) -> None:
        self._drop(key)
        self._gone[key] = was  # the newest last
        self._by_file.setdefault(was[1:], set()).add(key)

    def _drop(self, key: str) -> None:
        was = self._gone.pop(key, None)
        if was is not None and (keys := self._by_file.get(was[1:])) is not None:
            keys.discard(key)
            if not keys:
                del self._by_file[was[1:]]

    def went(self, entry: Entry | None) -> None:
        """``entry``'s file is gone (deleted, or renamed: which one is not known yet)."""
        if entry is None or entry.id is not None or entry.size < MIN_SIZE:
            return
        self._put(derived_id(entry.path), (entry.fingerprint, entry.content_hash, entry.mtime_ns))
        self._trim()
        self._unsaved = True

    def _trim(self) -> None:
        while len(self._gone) > KEPT:
            self._drop(next(iter(self._gone)))

    def successor(self, note_id: str, with_fingerprint: Callable[[str], list[Entry]]) -> Entry | None:
        """The note that the gone note answered as ``note_id`` became, when exactly one note without
        an ``id`` key holds its bytes, with its modification time, under another name now."""
        found = self._successor(note_id, with_fingerprint)
        if found is None and self._signature() != self._seen and self._merge(self._read_file()):
            self._trim()
            found = self._successor(note_id, with_fingerprint)  # another process paired it since
        return found

    def _successor(self, note_id: str, with_fingerprint: Callable[[str], list[Entry]]) -> Entry | None:
        was = self._gone.get(note_id)
        if was is None:
            return None
        fingerprint, content_hash, mtime_ns = was
        found = [
            e
            for e in with_fingerprint(fingerprint)
            if e.id is None
            and (e.content_hash, e.mtime_ns) == (content_hash, mtime_ns)
            and derived_id(e.path) != note_id
        ]
        return found[0] if len(found) == 1 else None

    def edited(
        self, old: Entry | None, new: Entry | None, with_fingerprint: Callable[[str], list[Entry]]
    ) -> None:
        """The note ``old`` was is ``new`` now (one path read again, or a note a merge moved): the
        ids that answered it answer ``new``, unless another note still holds ``old``'s bytes and
        time (then none can tell which of them was renamed), or ``new`` is another note's bytes and
        time (that note was moved onto this name: the note that was here is gone)."""
        if old is None or new is None or old.id is not None or new.id is not None:
            return
        was = (old.content_hash, old.mtime_ns)
        now = (new.fingerprint, new.content_hash, new.mtime_ns)
        named = [k for k in self._by_file.get(was, ()) if k != derived_id(new.path)]
        if was == now[1:] or not named or self._by_file.get(now[1:]):
            return  # unchanged, named by no gone id, or another note moved onto this name
        twins = with_fingerprint(old.fingerprint)
        if any(e.id is None and (e.content_hash, e.mtime_ns) == was for e in twins):
            return
        moved_here = with_fingerprint(new.fingerprint)
        if any(e.path != new.path and (e.content_hash, e.mtime_ns) == now[1:] for e in moved_here):
            return  # another note's bytes and time, that note not gone yet: moved onto this name
        for key in named:
            self._put(key, now)
        self._unsaved = True

    def save(self) -> None:
        """Write the records, merged with what the file holds now (another process's saves)."""
        if not self._unsaved:
            return
        lock = self._file.with_name(self._file.name + ".lock")
        try:
            with flocked(lock, SAVE_LOCK_TIMEOUT, busy=f"{lock} stayed locked"):
                self._save_merged()
        except (OSError, VaultmemError):  # no lock to be had (an odd filesystem): saved unmerged
            self._save_merged()

    def _save_merged(self) -> None:
        if self._signature() != self._seen:
            self._merge(self._read_file())
            self._trim()
        rows = tuple((k, fp, h, t) for k, (fp, h, t) in self._gone.items())
        try:
            atomic_write(self._file, marshal_state((FORMAT, rows)), durable=False)
        except OSError:
            return  # derived: the old ids are lost, nothing else
        self._seen = self._signature()
        self._unsaved = False
