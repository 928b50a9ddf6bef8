"""Reading and writing note files: every write is atomic and durable before it returns."""

from __future__ import annotations

import errno

from vaultmem.errors import VaultError
from vaultmem.notes.frontmatter import NoteText
from vaultmem.notes.model import Note, note_from_text
from vaultmem.vault.atomic import atomic_write
from vaultmem.vault.catalog import read_note
from vaultmem.vault.layout import VaultLayout


class NoteStore:
    """Note files of one vault."""

    def __init__(self, layout: VaultLayout, *, durable: bool = True) -> None:
        self.layout = layout
        self.durable = durable

    def read(self, rel: str) -> Note:
        return read_note(self.layout, rel)

    def write(self, rel: str, text: NoteText, *, create: bool = False) -> Note:
        """Write ``text`` to ``rel`` atomically; with ``create``, refuse to replace a file."""
        path = self.layout.resolve(rel)
        if create and path.exists():
            raise VaultError(f"{rel} already exists; vaultmem never overwrites a note it did not read")
        data = text.to_bytes()
        try:
            atomic_write(path, data, durable=self.durable)
        except OSError as exc:
            hint = {
                errno.ENOSPC: "the disk is full; free some space and retry",
                errno.EACCES: "permission denied; check the vault folder's permissions",
                errno.EROFS: "the vault is on a read-only file system",
                errno.EDQUOT: "the disk quota is exceeded; free some space and retry",
            }.get(exc.errno or 0, "check the disk and retry")
            raise VaultError(f"could not write {rel}: {exc.strerror or exc}; {hint}") from exc
        return note_from_text(data.decode("utf-8"), rel)
