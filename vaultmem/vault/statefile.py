"""Derived state kept as one file in the state directory: JSON (hit counters, the review queue), or
checksummed ``marshal`` for bulky state read at every start (the catalog cache).

Such a file is ephemeral by design (deleting the state directory loses nothing a person cares
about): an unreadable or foreign-version file is ignored with a warning, and a failed save is logged
rather than failing the call that changed the state.
"""

from __future__ import annotations

import hashlib
import json
import logging
import marshal
import sys
from pathlib import Path
from typing import Any

from vaultmem.vault.atomic import atomic_write
from vaultmem.vault.reading import read_regular

log = logging.getLogger(__name__)


def read_state(path: Path, version: int, lost: str) -> dict[str, Any] | None:
    """The file's JSON object when it exists and carries ``version``; None otherwise.

    ``lost`` says what starting afresh costs ("primers are earned again"), for the warning.
    """
    try:
        data = json.loads(read_regular(path).decode("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable %s (%s); %s", path, exc, lost)
        return None
    if not isinstance(data, dict) or data.get("version") != version:
        return None
    return data


def write_state(path: Path, data: dict[str, Any]) -> None:
    """Replace the file with ``data`` (atomic, not fsynced: it is derived)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(data, ensure_ascii=False).encode("utf-8"), durable=False)
    except OSError as exc:
        log.warning("could not save %s: %s", path, exc)


#: What starts a marshalled state file: the format, and the Python whose ``marshal`` wrote it.
_MAGIC = f"vaultmem-state marshal-{marshal.version} {sys.implementation.cache_tag}\n".encode()


def marshal_state(value: Any) -> bytes:
    """``value`` (tuples, strings, numbers, None) as a state file holds it: a header, the sha256
    of the body, the body. ``marshal`` reads 100k notes' catalog ~5x faster than JSON, gives back
    strings interned when they were written interned, and stores an object held twice once
    (docs/benchmarks.md, "Start at 100k: where the time goes")."""
    body = marshal.dumps(value, marshal.version)
    return _MAGIC + hashlib.sha256(body).digest() + body


def unmarshal_state(raw: bytes) -> object:
    """What :func:`marshal_state` wrote; ValueError for bytes it did not write whole, on this
    Python. ``marshal`` trusts its input, so it only ever reads a body whose checksum holds: a
    truncated, damaged or foreign file is refused before it is parsed."""
    head = len(_MAGIC)
    body = memoryview(raw)[head + 32 :]  # not a copy: the catalog's is ~40 MB at 100k notes
    if raw[:head] != _MAGIC or raw[head : head + 32] != hashlib.sha256(body).digest():
        raise ValueError("not a state file written by this vaultmem and Python, or damaged")
    return marshal.loads(body)  # noqa: S302 (our own file, its checksum checked above)
