"""The catalog's start-up cache, ``<state>/catalog.cache``: every entry of the last scan.

One column of values per field of :data:`~vaultmem.vault.entry.ENTRY_FIELDS` (not a row per entry,
whose freed lists stayed in the heap: docs/architecture.md), in checksummed ``marshal``
(:func:`~vaultmem.vault.statefile.marshal_state`): read ~5x faster than JSON, strings back interned
and tuples as tuples. Derived state: a damaged, foreign or older file is ignored and the scan reads
the vault.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Sequence
from itertools import repeat
from pathlib import Path
from typing import Any

from vaultmem.vault.atomic import atomic_write
from vaultmem.vault.entry import ENTRY_FIELDS, Entry
from vaultmem.vault.reading import read_regular
from vaultmem.vault.statefile import marshal_state, unmarshal_state

__all__ = ["CACHE_VERSION", "load_entries", "save_entries"]

log = logging.getLogger(__name__)
CACHE_VERSION = 13  # 13: as Obsidian reads tags, math, Templater, `...` (12: Templater; 11: big notes)
#: Entry fields whose values repeat across notes (a kind, a status, a project): one string each.
_REPEATED = ("kind", "status", "project", "source_transport", "source_trust")
_REPEATED_AT = [ENTRY_FIELDS.index(n) for n in _REPEATED]
#: Values the index's in-memory records hold too: interned where both are read from disk (this
#: cache, the index's table), so the two share one string (~30 MB at 100k notes, net of the table
#: of interned strings; docs/benchmarks.md). ``index/_schema.py`` interns the same columns.
_HELD_BY_THE_INDEX_TOO = [ENTRY_FIELDS.index(n) for n in ("id", "path", "title", "content_hash", "created")]


def load_entries(path: Path) -> dict[str, Entry]:
    """The entries the cache at ``path`` holds, by path, in the order saved; {} for none."""
    try:
        data = unmarshal_state(read_regular(path))
        if not isinstance(data, tuple) or len(data) != 3 or data[:2] != (CACHE_VERSION, ENTRY_FIELDS):
            return {}
        columns = data[2]
        if (
            not isinstance(columns, tuple)
            or len(columns) != len(ENTRY_FIELDS)
            or len(set(map(len, columns))) > 1
        ):
            return {}
        # tuple.__new__ in C, not the named tuple's __new__ in Python once per entry
        entries: list[Entry] = list(map(tuple.__new__, repeat(Entry), zip(*columns, strict=True)))
        return dict(zip(columns[ENTRY_FIELDS.index("path")], entries, strict=True))
    except (OSError, ValueError, EOFError, TypeError):
        return {}


def save_entries(path: Path, entries: Sequence[Entry]) -> None:
    """Save ``entries`` in their order (the catalog puts the holders of ids first)."""
    columns: list[tuple[Any, ...]] = (
        list(zip(*entries, strict=True)) if entries else [() for _ in ENTRY_FIELDS]
    )
    for i in (*_REPEATED_AT, *_HELD_BY_THE_INDEX_TOO):  # saved interned, so read back interned
        columns[i] = tuple(None if v is None else sys.intern(v) for v in columns[i])
    try:
        atomic_write(path, marshal_state((CACHE_VERSION, ENTRY_FIELDS, tuple(columns))), durable=False)
    except (OSError, ValueError) as exc:  # derived: losing it only slows the next start
        log.warning("the catalog cache %s was not saved: %s", path, exc)
        return
    with contextlib.suppress(OSError):  # the JSON cache of earlier versions
        (path.parent / "catalog.json").unlink(missing_ok=True)
