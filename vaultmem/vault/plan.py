"""What a write decides, before anything is written: a :class:`Plan` of files, built in a :class:`Draft`.

The operations (append, link, merge, reflect, ...) are planners: they read the vault and return a
plan; :class:`~vaultmem.vault.writer.VaultWriter` writes it. A :class:`WriteKey` names what two
writes in flight may share (an idempotency key, a content fingerprint, a title, a target path):
a write whose key is in flight waits for the one holding it, then decides against its result.

A plan may also write *side files*, vault files that are not notes (a project's ``project.yaml``,
the slot files ``project_context.md`` / ``active_goals.md``): staged and committed the same way,
but kept out of the catalog and the index (``FileWrite.note`` is false).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from vaultmem.notes.frontmatter import NoteText
from vaultmem.vault.store import NoteStore

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)
KeyKind = Literal["idempotency", "fingerprint", "title", "ideas", "path"]


@dataclass(frozen=True)
class WriteKey:
    """What a write in flight is known by; two writes sharing one are decided one after the other."""

    kind: KeyKind
    value: str = ""

    @staticmethod
    def path(rel: str) -> WriteKey:
        """The key of a write to the file ``rel``."""
        return WriteKey("path", rel)

    def names_file(self, name: str) -> bool:
        """A write to a file called ``name`` (compared case-insensitively), in any folder."""
        return self.kind == "path" and self.value.rsplit("/", 1)[-1].lower() == name.lower()


@dataclass
class FileWrite:
    """One file of a plan: its new text, whether it is new, and what happened to it."""

    rel: str
    text: NoteText
    create: bool
    action: str
    #: False for a side file (not a note): committed with the plan, never catalogued or indexed.
    note: bool = True


@dataclass(frozen=True)
class Plan(Generic[R_co]):
    """A decided write: the files to write and the answer to give once they are written."""

    writes: list[FileWrite]
    result: R_co


class Draft:
    """The files a plan writes, as they will be once it is written (edits to one file compose)."""

    def __init__(self, store: NoteStore) -> None:
        self.store = store
        self._texts: dict[str, FileWrite] = {}
        self._new_names: set[str] = set()  # lower-cased file names of the notes this plan creates

    def text_of(self, rel: str) -> NoteText:
        """The note's text as this plan has it so far (read from the vault the first time)."""
        pending = self._texts.get(rel)
        if pending is not None:
            return pending.text
        note = self.store.read(rel)
        assert note.text is not None
        return note.text

    def edited(self, rel: str) -> NoteText | None:
        """The text this plan gives ``rel``, or None when it does not touch it."""
        pending = self._texts.get(rel)
        return pending.text if pending is not None else None

    def put(self, rel: str, text: NoteText, action: str, *, create: bool = False, note: bool = True) -> None:
        pending = self._texts.get(rel)
        if pending is not None:
            pending.text = text
            return
        self._texts[rel] = FileWrite(rel, text, create, action, note)
        if create:
            self._new_names.add(rel.rsplit("/", 1)[-1].lower())

    def reserved(self, rel: str) -> bool:
        return rel in self._texts

    def reserved_name(self, slug: str) -> bool:
        """A note this plan creates already has the file name ``slug`` (in any folder)."""
        return f"{slug}.md".lower() in self._new_names

    def plan(self, result: R) -> Plan[R]:
        """The plan: every file put so far, and the answer to give once they are written."""
        return Plan(list(self._texts.values()), result)
