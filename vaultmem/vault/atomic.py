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
#: The longest file name, in bytes, that Linux's and macOS's file systems take.
NAME_MAX = 255


def temp_name(name: str, suffix: str = "") -> str:
    """The name of a temp file beside the file ``name``: ``.vaultmem-tmp-<name>.<pid>.<random>``
    and ``suffix``, with ``name`` cut (at a character) so that it fits :data:`NAME_MAX` bytes. A
    note may have any legal name (a title of 76 Japanese characters is 231 bytes), and the temp
    name used to be ~30 bytes longer than the note's: every write to such a note failed."""
    tail = f".{os.getpid()}.{os.urandom(4).hex()}{suffix}"
    room = NAME_MAX - len(TEMP_PREFIX) - len(tail)
    raw = os.fsencode(name)
    if len(raw) > room:
        name = raw[:room].decode("utf-8", "ignore")
    return f"{TEMP_PREFIX}{name}{tail}"


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
    tmp = directory / temp_name(path.name)
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
