"""A key -> paths map that stores the usual single path as a plain string.

The catalog and the index's mirror keep several such lookups (fingerprint, file stem, path -> ids),
one entry per note; nearly every key has exactly one value, and a one-element ``set`` costs ~200
bytes where a reference to the string the note already holds costs nothing (~20 MB at 100k notes
per lookup, docs/benchmarks.md "Memory and start at scale").
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["Multimap"]


class Multimap:
    """``key -> values``: a ``str`` while a key has one value, a ``set`` once it has more."""

    __slots__ = ("_map",)

    def __init__(self) -> None:
        self._map: dict[str, str | set[str]] = {}

    def add(self, key: str, value: str) -> None:
        found = self._map.get(key)
        if found is None:
            self._map[key] = value
        elif isinstance(found, str):
            if found != value:
                self._map[key] = {found, value}
        else:
            found.add(value)

    def discard(self, key: str, value: str) -> None:
        found = self._map.get(key)
        if found is None:
            return
        if isinstance(found, str):
            if found == value:
                del self._map[key]
            return
        found.discard(value)
        if len(found) == 1:
            self._map[key] = next(iter(found))
        elif not found:
            del self._map[key]

    def get(self, key: str) -> tuple[str, ...]:
        """The values of ``key`` (empty when it has none), in no particular order."""
        found = self._map.get(key)
        if found is None:
            return ()
        return (found,) if isinstance(found, str) else tuple(found)

    def __contains__(self, key: object) -> bool:
        return key in self._map

    def __iter__(self) -> Iterator[str]:
        return iter(self._map)

    def __len__(self) -> int:
        return len(self._map)

    def clear(self) -> None:
        self._map.clear()
