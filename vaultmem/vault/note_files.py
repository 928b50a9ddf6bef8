"""Reading one note file: its bytes read safely (never through a symlink out of the vault, never
blocking on a pipe, never more than a cap), decoded, and parsed into a :class:`Note`.

The catalog, the store, the watcher's reconcile, the health check and the past's versions read
notes through these, so every reader refuses and forgives the same files.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

from vaultmem.errors import InvalidInput, MalformedNote
from vaultmem.notes.model import Note, note_from_text
from vaultmem.vault.layout import VaultLayout
from vaultmem.vault.reading import FileTooLarge, NotARegularFile, read_head, read_regular

#: A note file larger than this is reported and left alone, never read into memory or indexed; a
#: person's own file (a pasted log, a drawing saved uncompressed) is read up to it instead.
MAX_NOTE_BYTES = 2 * 1024 * 1024


def read_note(layout: VaultLayout, rel: str) -> Note:
    """Read and parse one note; raise MalformedNote for a file that cannot be read as a note."""
    return read_note_and_hash(layout, rel)[0]


def read_note_and_hash(layout: VaultLayout, rel: str) -> tuple[Note, str]:
    """:func:`read_note`, with the sha256 of the file's bytes."""
    try:
        path = layout.resolve(rel)
    except InvalidInput as exc:  # a symlink out of the vault: reported, never followed
        raise MalformedNote(f"{rel}: links to a file outside the vault; vaultmem does not follow it") from exc
    persons = not layout.writable(rel)
    try:
        try:
            raw = read_regular(path, MAX_NOTE_BYTES)  # never blocks: a pipe is refused, not opened
        except FileTooLarge as exc:  # checked before reading: a pasted 1 GB log costs nothing
            if not persons:
                raise MalformedNote(
                    f"{rel}: is {exc.size / 2**20:.1f} MiB; notes over {MAX_NOTE_BYTES // 2**20} MiB are "
                    "not read or indexed (a pasted log?): split it or move it out of the vault"
                ) from exc
            return _start_of(path, rel)
    except NotARegularFile as exc:
        raise MalformedNote(f"{rel}: is {exc.kind}, not a file; vaultmem never reads it") from exc
    except OSError as exc:
        raise MalformedNote(f"{rel}: cannot be read ({exc.strerror})") from exc
    return note_from_text(note_text(raw, rel, persons), rel, persons=persons), hashlib.sha256(raw).hexdigest()


def _start_of(path: Path, rel: str) -> tuple[Note, str]:
    """A person's file over the size cap, read only as far as the cap (:func:`start_note`)."""
    head, digest = read_head(path, MAX_NOTE_BYTES)
    return start_note(head, rel, digest), digest


def start_note(head: bytes, rel: str, digest: str) -> Note:
    """A person's file over the size cap as Obsidian shows it, but only as far as the cap: its
    properties and the lines of its body that fit in ``head`` (searched and linked; doctor lists
    it); ``digest`` is the whole file's sha256."""
    lines = head[: head.rfind(b"\n", 0, MAX_NOTE_BYTES) + 1] or head[:MAX_NOTE_BYTES]  # no character cut
    note = note_from_text(note_text(lines, rel, persons=True), rel, persons=True)
    return replace(note, file_sha256=digest)


def note_of_bytes(raw: bytes, rel: str, persons: bool) -> Note:
    """A note from bytes already read (a version in git); raise MalformedNote as :func:`read_note`
    does, and read a person's file over the size cap by its start as it does."""
    if len(raw) <= MAX_NOTE_BYTES:
        return note_from_text(note_text(raw, rel, persons), rel, persons=persons)
    if not persons:
        raise MalformedNote(f"{rel}: is over {MAX_NOTE_BYTES // 2**20} MiB")
    return start_note(raw, rel, hashlib.sha256(raw).hexdigest())


def note_text(raw: bytes, rel: str, persons: bool) -> str:
    """A note file's bytes as text; raise MalformedNote when they are not UTF-8.

    A byte of another encoding in the person's own file (an old Windows-1252 é) reads as U+FFFD, as
    an editor shows it: the file is theirs and never written. A NUL byte says the file is binary.
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not persons or b"\0" in raw:
            raise MalformedNote(f"{rel}: is not UTF-8 text") from exc
        return raw.decode("utf-8", errors="replace")
