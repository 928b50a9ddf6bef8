"""The notes in time order, kept in memory, for the context step of the hybrid ranking.

Two orders are kept for every note with a readable ``created``:

- its **writer's sequence**: the notes of its project written in the same session
  (``NoteRecord.session``, the MCP session that wrote them), in ``created`` order; the notes
  without a session (hand-written, the CLI) form one sequence per project among themselves;
- its **project's sequence**: every note of the project in ``created`` order, whoever wrote it.

Ties in ``created`` are broken by id (UUIDv7 ids grow with time). Two notes are neighbours at
distance ``d`` in an order when ``d`` steps apart in it with no step longer than ``window_s``
seconds (an episode is a run of writes without a long pause). Which order the ranking trusts is
:mod:`vaultmem.index.episodes`' business. The timeline is derived from the notes table when the
index opens and updated by every write of this process; each sequence counts its changes
(:meth:`Timeline.generation`) so what is computed from one can be cached.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable

from vaultmem.notes.model import parse_time

__all__ = ["SequenceKey", "Timeline", "parse_timestamp"]

#: ``("session", project, session)`` (session None: the notes written without one) or
#: ``("project", project, None)``; project ``""`` is the notes without a project.
SequenceKey = tuple[str, str, str | None]
Entry = tuple[float, str]
#: A (project, session) pair's two sequence keys and the lists a reload fills for them.
_Pair = tuple[tuple[SequenceKey, SequenceKey], list[Entry], list[Entry]]


def parse_timestamp(value: str) -> float | None:
    """Seconds since the epoch for an ISO date or date-time (naive means UTC); None if unparsable."""
    parsed = parse_time(value.strip())
    return parsed.timestamp() if parsed else None


class Timeline:
    """Sorted ``(created, id)`` sequences per writer and per project, with neighbour lookups."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seqs: dict[SequenceKey, list[Entry]] = {}
        self._where: dict[str, tuple[tuple[SequenceKey, SequenceKey], float]] = {}
        self._generation: dict[SequenceKey, int] = {}
        #: One shared pair of keys per (project, session): a note holds a reference, not a copy.
        self._key_pairs: dict[tuple[str | None, str | None], tuple[SequenceKey, SequenceKey]] = {}

    def _keys(self, project: str | None, session: str | None) -> tuple[SequenceKey, SequenceKey]:
        found = self._key_pairs.get((project, session))
        if found is None:
            key = project or ""
            found = (("session", key, session or None), ("project", key, None))
            self._key_pairs[(project, session)] = found
        return found

    def add(self, note_id: str, project: str | None, created: str, session: str | None = None) -> None:
        """Insert or move a note."""
        stamp = parse_timestamp(created)
        with self._lock:
            self._remove_locked(note_id)
            if stamp is None:
                return
            keys = self._keys(project, session)
            for key in keys:
                bisect.insort(self._seqs.setdefault(key, []), (stamp, note_id))
                self._generation[key] = self._generation.get(key, 0) + 1
            self._where[note_id] = (keys, stamp)

    def replace(self, items: Iterable[tuple[str, str | None, str, str | None]]) -> None:
        """Hold exactly these ``(id, project, created, session)`` notes (a reload of the index),
        swapped in at once."""
        seqs: dict[SequenceKey, list[Entry]] = {}
        where: dict[str, tuple[tuple[SequenceKey, SequenceKey], float]] = {}
        # (project, session) -> its keys and their two lists, looked up once a pair (100k notes
        # of a few hundred pairs: a quarter of the time); one entry tuple serves both lists
        pairs: dict[tuple[str | None, str | None], _Pair] = {}
        for note_id, project, created, session in items:
            stamp = parse_timestamp(created)
            if stamp is None:
                continue
            found = pairs.get((project, session))
            if found is None:
                keys = self._keys(project, session)
                found = (keys, seqs.setdefault(keys[0], []), seqs.setdefault(keys[1], []))
                pairs[(project, session)] = found
            entry = (stamp, note_id)
            found[1].append(entry)
            found[2].append(entry)
            where[note_id] = (found[0], stamp)
        for entries in seqs.values():
            entries.sort()
        with self._lock:
            generation = {k: self._generation.get(k, 0) + 1 for k in {*self._seqs, *seqs}}
            self._seqs, self._where, self._generation = seqs, where, generation

    def remove(self, note_id: str) -> None:
        """Forget a note."""
        with self._lock:
            self._remove_locked(note_id)

    def _remove_locked(self, note_id: str) -> None:
        found = self._where.pop(note_id, None)
        if found is None:
            return
        keys, stamp = found
        for key in keys:
            entries = self._seqs[key]
            at = bisect.bisect_left(entries, (stamp, note_id))
            if at < len(entries) and entries[at] == (stamp, note_id):
                del entries[at]
            self._generation[key] = self._generation.get(key, 0) + 1
            if not entries:
                del self._seqs[key]

    def keys_of(self, note_id: str) -> tuple[SequenceKey, SequenceKey] | None:
        """The note's writer sequence and project sequence, or None when it has no time."""
        with self._lock:
            found = self._where.get(note_id)
            return None if found is None else found[0]

    def neighbours(
        self, note_id: str, window_s: float, radius: int = 1, order: str = "project"
    ) -> list[tuple[int, str]]:
        """``(distance, id)`` of the notes up to ``radius`` steps before and after ``note_id`` in its
        ``order`` (``session``: its writer's sequence; ``project``: its project's), walking no step
        longer than ``window_s`` seconds."""
        with self._lock:
            found = self._where.get(note_id)
            if found is None:
                return []
            keys, stamp = found
            entries = self._seqs[keys[0] if order == "session" else keys[1]]
            at = bisect.bisect_left(entries, (stamp, note_id))
            out: list[tuple[int, str]] = []
            for step in (-1, 1):
                previous = stamp
                for d in range(1, radius + 1):
                    other = at + step * d
                    if not 0 <= other < len(entries) or abs(entries[other][0] - previous) > window_s:
                        break
                    previous = entries[other][0]
                    out.append((d, entries[other][1]))
            return out

    def in_session(self, note_id: str, window_s: float, step: int) -> str | None:
        """The note written just before (``step`` -1) or after (+1) ``note_id`` in the same
        session and project, within ``window_s``; None for a note written without a session."""
        with self._lock:
            found = self._where.get(note_id)
            if found is None or found[0][0][2] is None:
                return None
            keys, stamp = found
            entries = self._seqs[keys[0]]
            other = bisect.bisect_left(entries, (stamp, note_id)) + step
            if 0 <= other < len(entries) and abs(entries[other][0] - stamp) <= window_s:
                return entries[other][1]
            return None

    def tail(self, key: SequenceKey, n: int) -> list[str]:
        """The last ``n`` ids of a sequence, in order."""
        with self._lock:
            return [i for _, i in self._seqs.get(key, [])[-n:]]

    def spread(self, key: SequenceKey, n: int) -> list[str]:
        """Up to ``n`` ids spread evenly over a sequence (a sample of it)."""
        with self._lock:
            entries = self._seqs.get(key, [])
            if len(entries) <= n:
                return [i for _, i in entries]
            step = len(entries) / n
            return [entries[int(k * step)][1] for k in range(n)]

    def generation(self, key: SequenceKey) -> int:
        """A number that changes whenever the sequence does."""
        with self._lock:
            return self._generation.get(key, 0)

    def __len__(self) -> int:
        return len(self._where)
