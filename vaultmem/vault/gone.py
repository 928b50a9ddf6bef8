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
forgets the old ids, nothing else. The newest :data:`KEPT` are kept.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from vaultmem.notes.ids import derived_id
from vaultmem.vault.atomic import atomic_write
from vaultmem.vault.entry import Entry
from vaultmem.vault.reading import read_regular
from vaultmem.vault.statefile import marshal_state, unmarshal_state

FORMAT = 2
#: How many gone notes are remembered (the oldest are dropped first): ~200 bytes each.
KEPT = 20_000
#: A file this small (an empty note, a bare heading) is too alike its neighbours to be recognised.
MIN_SIZE = 32


class GoneNotes:
    """Notes without an ``id`` key whose file went: ``derived id -> (fingerprint, content hash,
    modification time in ns)``."""

    def __init__(self, file: Path) -> None:
        self._file = file
        self._gone: dict[str, tuple[str, str, int]] = {}
        self._by_file: dict[tuple[str, int], set[str]] = {}  # (content hash, mtime) -> keys
        self._unsaved = False
        try:
            saved: Any = unmarshal_state(read_regular(file))
            if saved[0] == FORMAT:
                for k, fp, h, t in saved[1]:
                    self._put(str(k), (str(fp), str(h), int(t)))
        except (OSError, ValueError, TypeError, EOFError, IndexError):
            self._gone, self._by_file = {}, {}  # none yet, or damaged: derived state, begun afresh

    def _put(self, key: str, was: tuple[str, str, int]) -> None:
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
        while len(self._gone) > KEPT:
            self._drop(next(iter(self._gone)))
        self._unsaved = True

    def successor(self, note_id: str, with_fingerprint: Callable[[str], list[Entry]]) -> Entry | None:
        """The note that the gone note answered as ``note_id`` became, when exactly one note without
        an ``id`` key holds its bytes, with its modification time, under another name now."""
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
        if not self._unsaved:
            return
        rows = tuple((k, fp, h, t) for k, (fp, h, t) in self._gone.items())
        try:
            atomic_write(self._file, marshal_state((FORMAT, rows)), durable=False)
        except OSError:
            return  # derived: the old ids are lost, nothing else
        self._unsaved = False
