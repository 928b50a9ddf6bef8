"""Reading and writing note files: every write is atomic and durable before it returns."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from vaultmem.errors import ChangedOnDisk, VaultError
from vaultmem.notes.frontmatter import NoteText
from vaultmem.notes.model import Note, note_from_doc, note_from_text
from vaultmem.vault.atomic import atomic_write, fsync_dir, write_temp
from vaultmem.vault.catalog import read_note_and_hash
from vaultmem.vault.layout import VaultLayout


class NoteStore:
    """Note files of one vault."""

    def __init__(self, layout: VaultLayout, *, durable: bool = True) -> None:
        self.layout = layout
        self.durable = durable
        self._reads = threading.local()

    def read(self, rel: str) -> Note:
        note, digest = read_note_and_hash(self.layout, rel)
        ledger: dict[str, str] | None = getattr(self._reads, "ledger", None)
        if ledger is not None:
            ledger.setdefault(rel, digest)  # the first read is the one a decision built on
        return note

    @contextlib.contextmanager
    def recording(self) -> Iterator[dict[str, str]]:
        """Collect ``{path: sha256}`` of every note this thread reads inside the block: what a
        write's decision was based on, checked again just before the write replaces the files."""
        outer = getattr(self._reads, "ledger", None)
        ledger: dict[str, str] = {}
        self._reads.ledger = ledger
        try:
            yield ledger
        finally:
            self._reads.ledger = outer

    def write(self, rel: str, text: NoteText, *, create: bool = False) -> Note:
        """Write ``text`` to ``rel`` atomically; with ``create``, refuse to replace a file."""
        path = self.layout.resolve(rel)
        if create and path.exists():
            raise VaultError(f"{rel} already exists; vaultmem never overwrites a note it did not read")
        data = text.to_bytes()
        try:
            atomic_write(path, data, durable=self.durable)
        except OSError as exc:
            raise _write_error(rel, exc) from exc
        return note_from_text(data.decode("utf-8"), rel)


def _write_error(rel: str, exc: OSError) -> VaultError:
    hint = {
        errno.ENOSPC: "the disk is full; free some space and retry",
        errno.EACCES: "permission denied; check the vault folder's permissions",
        errno.EROFS: "the vault is on a read-only file system",
        errno.EDQUOT: "the disk quota is exceeded; free some space and retry",
    }.get(exc.errno or 0, "check the disk and retry")
    return VaultError(f"could not write {rel}: {exc.strerror or exc}; {hint}")


class StagedWrite:
    """A note's new bytes, durable in a temp file beside its target, waiting to be put in place."""

    def __init__(self, store: NoteStore, rel: str, text: NoteText) -> None:
        self.store = store
        self.rel = rel
        self.path = store.layout.resolve(rel)
        self.data = text.to_bytes()
        self.tmp: Path | None = None

    def stage(self) -> None:
        """Write and fsync the temp file (slow; needs no lock)."""
        try:
            self.tmp = write_temp(self.path, self.data, durable=self.store.durable)
        except OSError as exc:
            raise _write_error(self.rel, exc) from exc

    def install(self, *, create: bool, parsed: NoteText | None = None, expected: str | None = None) -> Note:
        """Rename the temp file over the target (fast; under the write lock).

        ``parsed`` is the text these bytes were rendered from, when the caller has it: the note is
        then built from it instead of parsing the bytes again (a batch of a thousand notes saves
        a thousand YAML parses).
        """
        assert self.tmp is not None
        if create and self.path.exists():
            self.discard()
            raise VaultError(f"{self.rel} already exists; vaultmem never overwrites a note it did not read")
        # The file being replaced stays open across the rename: a save that opened it just before
        # and writes just after lands in the replaced inode, and its size or mtime shows it.
        # ``expected`` is the sha256 the caller's decision read; checked through the same
        # descriptor, so no save can slip in between the check and the stat.
        old = None if create else _open_quietly(self.path)
        try:
            before = None if old is None else os.fstat(old)
            if old is not None and expected is not None and _digest(old) != expected:
                self.discard()
                raise changed_on_disk(self.rel)
            try:
                self.tmp.replace(self.path)
            except OSError as exc:
                self.discard()
                raise _write_error(self.rel, exc) from exc
            self.tmp = None
            if old is not None and before is not None:
                after = os.fstat(old)
                if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
                    self._put_back(old)
        finally:
            if old is not None:
                os.close(old)
        if parsed is not None:
            return note_from_doc(parsed, self.rel)
        return note_from_text(self.data.decode("utf-8"), self.rel)

    def _put_back(self, old: int) -> None:
        """A save landed in the replaced file while it was being replaced: put that version (the
        person's, read through the still-open descriptor) back and refuse the write."""
        try:
            atomic_write(self.path, _read_all(old), durable=self.store.durable)
        except OSError as exc:
            raise _write_error(self.rel, exc) from exc
        raise ChangedOnDisk(
            f"{self.rel} was saved by someone else while vaultmem replaced it; their version was put "
            "back and nothing was written: run the same call again"
        )

    def sync_directory(self) -> None:
        if self.store.durable:
            fsync_dir(self.path.parent)

    def discard(self) -> None:
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                self.tmp.unlink()
            self.tmp = None


def _open_quietly(path: Path) -> int | None:
    """A read-only descriptor of ``path``, or None when it cannot be opened (gone, say)."""
    try:
        return os.open(path, os.O_RDONLY)
    except OSError:
        return None


def _read_all(fd: int) -> bytes:
    chunks = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _digest(fd: int) -> str:
    return hashlib.sha256(_read_all(fd)).hexdigest()


def changed_on_disk(rel: str, more: int = 0) -> ChangedOnDisk:
    """The retryable refusal of a write whose file (and ``more`` others) changed since it was read."""
    others = f"; {more} more file(s) too" if more else ""
    return ChangedOnDisk(
        f"{rel} changed on disk while vaultmem was writing it (edited by hand or by a sync client"
        f"{others}); nothing was written: run the same call again"
    )
