"""Reading and writing note files: every write is atomic and durable before it returns."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

from vaultmem.errors import ChangedOnDisk, MalformedNote, VaultError
from vaultmem.notes.frontmatter import NoteText
from vaultmem.notes.model import Note, note_from_doc, note_from_text
from vaultmem.vault.atomic import atomic_write, fsync_dir, temp_name, write_temp
from vaultmem.vault.layout import VaultLayout
from vaultmem.vault.note_files import read_note_and_hash


class NoteStore:
    """Note files of one vault."""

    def __init__(self, layout: VaultLayout, *, durable: bool = True) -> None:
        self.layout = layout
        self.durable = durable
        self._reads = threading.local()

    def read(self, rel: str) -> Note:
        try:
            note, digest = read_note_and_hash(self.layout, rel)
        except MalformedNote as exc:
            if isinstance(exc.__cause__, FileNotFoundError):  # the catalog has not caught up yet
                raise ChangedOnDisk(
                    f"{rel} was moved or deleted a moment ago, and vaultmem has not caught up with "
                    "it yet; run the same call again in a second"
                ) from exc
            raise
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
        keep: Path | None = None
        try:
            before = None if old is None else os.fstat(old)
            if old is not None and expected is not None and _digest(old) != expected:
                self.discard()
                raise changed_on_disk(self.rel)
            # A second name for the replaced file, so that it can be put back whole: a save that
            # opened it before the rename may write to it at any later time (a person's editor
            # between its open and its flush, descheduled on a loaded machine).
            keep = None if old is None else _second_name(self.path)
            try:
                self.tmp.replace(self.path)
            except OSError as exc:
                self.discard()
                raise _write_error(self.rel, exc) from exc
            self.tmp = None
            if old is not None and before is not None:
                # Renamed over, the file can no longer be opened by its path: whoever has it open
                # for writing now opened it before the rename, and their save may be still to come.
                # Asked first, then the size and mtime: once no one holds it, it changes no more.
                held = open_for_writing_elsewhere(old)
                after = os.fstat(old)
                if held or (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
                    kept, keep = keep, None
                    self._put_back(old, kept)
        finally:
            if keep is not None:
                with contextlib.suppress(OSError):
                    keep.unlink()
            if old is not None:
                os.close(old)
        if parsed is not None:
            return note_from_doc(parsed, self.rel)
        return note_from_text(self.data.decode("utf-8"), self.rel)

    def _put_back(self, old: int, keep: Path | None) -> None:
        """A save landed (or is landing) in the replaced file while it was being replaced: put that
        file back (the person's inode itself, under its second name, so that a write still to come
        through their descriptor lands in the note) and refuse the write."""
        try:
            try:
                if keep is None:
                    raise FileNotFoundError("no second name")  # a file system without hard links
                os.replace(keep, self.path)  # noqa: PTH105 (not Path.replace: tests hook that one)
                if self.store.durable:
                    fsync_dir(self.path.parent)
            except OSError:  # its bytes as they are now, then
                atomic_write(self.path, _read_all(old), durable=self.store.durable)
                if keep is not None:
                    with contextlib.suppress(OSError):
                        keep.unlink()
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


def _second_name(path: Path) -> Path | None:
    """A hard link to ``path`` beside it, named as a temp file (ignored by git, the watcher and
    reconcile; swept at start if a crash leaves it), or None where links cannot be made."""
    link = path.parent / temp_name(path.name, ".kept")
    try:
        os.link(path, link)
    except OSError:
        return None
    return link


def open_for_writing_elsewhere(fd: int) -> bool:
    """Whether a descriptor other than ``fd`` has ``fd``'s file open for writing.

    A write lease (Linux) is granted only when no other descriptor has the file open at all, so
    the usual answer costs two ``fcntl`` calls. When it is refused (someone has the file open,
    reading perhaps) or unavailable, the descriptors of the processes this user can see under
    ``/proc`` are compared with the file and their open flags read. Where neither can tell (no
    ``/proc``), the answer is no: the size and mtime check is all there is.
    """
    setlease, setsig = getattr(fcntl, "F_SETLEASE", None), getattr(fcntl, "F_SETSIG", None)
    if setlease is not None and setsig is not None:
        try:
            # Should someone open the file while the lease is held (by its second name), the
            # kernel signals the holder: SIGIO by default, which terminates the daemon.
            fcntl.fcntl(fd, setsig, signal.SIGWINCH)  # ignored unless handled
            fcntl.fcntl(fd, setlease, fcntl.F_WRLCK)
        except OSError:
            pass  # held by someone (EAGAIN), not ours (EACCES), or no leases here: look
        else:
            fcntl.fcntl(fd, setlease, fcntl.F_UNLCK)
            return False
    return _writer_in_proc(fd)


def _writer_in_proc(fd: int) -> bool:
    mine = os.fstat(fd)
    target = (mine.st_dev, mine.st_ino)
    own = Path(f"/proc/{os.getpid()}/fd/{fd}")
    try:
        processes = [p for p in Path("/proc").iterdir() if p.name.isdigit()]
    except OSError:
        return False
    for process in processes:
        try:
            links = list((process / "fd").iterdir())
        except OSError:
            continue  # gone, or another user's
        for link in links:
            if link == own:
                continue
            try:
                st = link.stat()
                if (st.st_dev, st.st_ino) != target:
                    continue
                info = (process / "fdinfo" / link.name).read_text(encoding="ascii")
            except OSError:
                continue
            flags = next((line.split()[1] for line in info.splitlines() if line.startswith("flags:")), "0")
            if int(flags, 8) & os.O_ACCMODE != os.O_RDONLY:
                return True
    return False


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
