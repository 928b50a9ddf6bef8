"""Reading a vault file without ever blocking, and naming files that are not notes.

A vault holds whatever a person or a program put there: a named pipe called ``notes.md`` (opening
one for reading waits for a writer, forever), a socket, a device node, a symlink to any of them, a
file whose name is not UTF-8 (made on a system with another encoding, or unpacked from an old
archive). vaultmem reads only regular files: every read opens with ``O_NONBLOCK`` (a FIFO then
opens at once instead of waiting), checks through the descriptor that it is a regular file
(``fstat``, so nothing can be swapped in between the check and the read), and reads at most a
given number of bytes. Anything else is skipped and reported, never read.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import BinaryIO

#: What a file that is not a regular file is, for the report.
_KINDS = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
)
#: How much of a file is hashed at a time.
_CHUNK = 1 << 20


class NotARegularFile(OSError):
    """The path names a pipe, socket, device or folder: vaultmem does not read it."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"it is {kind}, not a file")
        self.kind = kind


class FileTooLarge(OSError):
    """The file is larger than the reader accepts (checked before reading a byte)."""

    def __init__(self, size: int) -> None:
        super().__init__(f"it is {size} bytes")
        self.size = size


def kind_of(mode: int) -> str | None:
    """What a non-regular file is ("a named pipe", ...), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular(path: Path | str, limit: int | None = None) -> bytes:
    """The bytes of a regular file, read without blocking.

    Raises :class:`NotARegularFile` for a pipe, socket, device or folder (a symlink is followed
    to what it names), :class:`FileTooLarge` when ``limit`` is given and the file is larger, and
    ``OSError`` for anything the system refuses (gone, permission denied).
    """
    with open_regular(path) as f:
        if limit is not None:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                raise FileTooLarge(size)
        data: bytes = f.read() if limit is None else f.read(limit + 1)  # one more: a file that grew
        if limit is not None and len(data) > limit:
            raise FileTooLarge(len(data))
        return data


def open_regular(path: Path | str) -> BinaryIO:
    """``path`` opened to read (binary, buffered) without blocking; :class:`NotARegularFile` for a
    pipe, socket, device or folder, as :func:`read_regular` says."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        try:  # a socket cannot be opened at all (ENXIO): say what it is
            kind = kind_of(Path(path).stat().st_mode)
        except OSError:
            kind = None
        if kind is not None:
            raise NotARegularFile(kind) from exc
        raise
    try:
        kind = kind_of(os.fstat(fd).st_mode)
        if kind is not None:
            raise NotARegularFile(kind)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_head(path: Path | str, limit: int) -> tuple[bytes, str]:
    """The first ``limit`` bytes of a regular file and the sha256 of all of it, read without
    blocking and holding no more than ``limit`` bytes at once (a person's 1 GB pasted log).
    Raises as :func:`read_regular` does."""
    with open_regular(path) as f:
        head = f.read(limit)
        digest = hashlib.sha256(head)
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return head, digest.hexdigest()


def file_hash(path: Path) -> str | None:
    """sha256 of a file's bytes now; None when it cannot be read (gone, say, or not a file)."""
    try:
        return read_head(path, _CHUNK)[1]
    except OSError:
        return None


def read_regular_text(path: Path | str, limit: int | None = None) -> str:
    """:func:`read_regular`, decoded as UTF-8 (a leading BOM dropped); raises UnicodeDecodeError."""
    return read_regular(path, limit).decode("utf-8-sig")


def is_valid_name(name: str) -> bool:
    """False for a file name whose bytes are not UTF-8 (Python hands them over as surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(path: str) -> str:
    """``path`` as it can be printed and sent as JSON: bytes that are not UTF-8 become ``\\xNN``."""
    if is_valid_name(path):
        return path
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
