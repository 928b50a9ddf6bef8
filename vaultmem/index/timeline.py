"""Per-project timeline of notes, kept in memory, for the context step of the hybrid ranking.

Two notes are *adjacent* when they belong to the same project, are consecutive in ``created``
order (ties broken by id) and were created at most ``window_s`` seconds apart. The timeline is
derived from the notes table when the index opens and updated by every write of this process.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable
from datetime import UTC, datetime

__all__ = ["Timeline", "parse_timestamp"]


def parse_timestamp(value: str) -> float | None:
    """Seconds since the epoch for an ISO date or date-time (naive means UTC); None if unparsable."""
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


class Timeline:
    """Sorted ``(created, id)`` lists per project with adjacency lookups."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_project: dict[str, list[tuple[float, str]]] = {}
        self._where: dict[str, tuple[str, float]] = {}

    def add(self, note_id: str, project: str | None, created: str) -> None:
        """Insert or move a note."""
        stamp = parse_timestamp(created)
        with self._lock:
            self._remove_locked(note_id)
            if stamp is None:
                return
            key = project or ""
            bisect.insort(self._by_project.setdefault(key, []), (stamp, note_id))
            self._where[note_id] = (key, stamp)

    def replace(self, items: Iterable[tuple[str, str | None, str]]) -> None:
        """Hold exactly these notes (a reload of the index), swapped in at once."""
        by_project: dict[str, list[tuple[float, str]]] = {}
        where: dict[str, tuple[str, float]] = {}
        for note_id, project, created in items:
            stamp = parse_timestamp(created)
            if stamp is not None:
                by_project.setdefault(project or "", []).append((stamp, note_id))
                where[note_id] = (project or "", stamp)
        for entries in by_project.values():
            entries.sort()
        with self._lock:
            self._by_project, self._where = by_project, where

    def remove(self, note_id: str) -> None:
        """Forget a note."""
        with self._lock:
            self._remove_locked(note_id)

    def _remove_locked(self, note_id: str) -> None:
        found = self._where.pop(note_id, None)
        if found is None:
            return
        key, stamp = found
        entries = self._by_project[key]
        at = bisect.bisect_left(entries, (stamp, note_id))
        if at < len(entries) and entries[at] == (stamp, note_id):
            del entries[at]

    def neighbours(self, note_id: str, window_s: float) -> list[str]:
        """The previous and next note of the same project, if created within ``window_s``."""
        with self._lock:
            found = self._where.get(note_id)
            if found is None:
                return []
            key, stamp = found
            entries = self._by_project[key]
            at = bisect.bisect_left(entries, (stamp, note_id))
            out = []
            for other in (at - 1, at + 1):
                if 0 <= other < len(entries) and abs(entries[other][0] - stamp) <= window_s:
                    out.append(entries[other][1])
            return out

    def __len__(self) -> int:
        return len(self._where)
