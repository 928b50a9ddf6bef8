"""Atomic, durable file writes: temp file in the same directory, fsync, replace, fsync the directory.

A reader (Obsidian, a sync client, another vaultmem process) sees the old file or the new one, never
half of either. A failure at any step leaves the original file byte-identical and no temp file behind.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

#: Temp files carry this prefix so the watcher and reconcile ignore them and a restart can sweep them.
TEMP_PREFIX = ".vaultmem-tmp-"


def fsync_dir(directory: Path) -> None:
    """Make a rename or create in ``directory`` durable (a no-op where directories can't be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse fsync on directories
        pass
    finally:
        os.close(fd)


def write_temp(path: Path, data: bytes, *, durable: bool = True) -> Path:
    """Write ``data`` to a new temp file beside ``path`` (fsynced when ``durable``); return it.

    On failure nothing is left behind and the error propagates.
    """
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f"{TEMP_PREFIX}{path.name}.{os.getpid()}.{os.urandom(4).hex()}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        if path.exists():
            with contextlib.suppress(OSError):
                tmp.chmod(path.stat().st_mode & 0o777)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return tmp


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically (and durably unless ``durable`` is false)."""
    tmp = write_temp(path, data, durable=durable)
    try:
        tmp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if durable:
        fsync_dir(path.parent)


def remove_files(root: Path, paths: list[str]) -> None:
    """Remove ``paths`` (relative to ``root``): the temp files a crash left behind, which the
    catalog's walk at a start lists (``VaultLayout.iter_note_paths``). One already gone is fine."""
    for rel in paths:
        with contextlib.suppress(OSError):
            (root / rel).unlink()
