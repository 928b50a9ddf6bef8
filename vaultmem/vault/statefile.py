"""Derived state kept as one JSON file in the state directory (hit counters, the review queue).

Such a file is ephemeral by design (deleting the state directory loses nothing a person cares
about): an unreadable or foreign-version file is ignored with a warning, and a failed save is logged
rather than failing the call that changed the state.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from vaultmem.vault.atomic import atomic_write

log = logging.getLogger(__name__)


def read_state(path: Path, version: int, lost: str) -> dict[str, Any] | None:
    """The file's JSON object when it exists and carries ``version``; None otherwise.

    ``lost`` says what starting afresh costs ("primers are earned again"), for the warning.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
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
