"""Side files: vault files vaultmem writes that are not memory notes.

A project's ``project.yaml`` and the slot files (``project_context.md``, ``active_goals.md``) live
under ``desk/`` (:func:`vaultmem.vault.layout.is_side_file`). They go through the same batch
pipeline as notes (staged, renamed into place, committed in the action's one commit) but are never
catalogued or indexed; the watcher commits a person's edits to them like any hand edit.
"""

from __future__ import annotations

from typing import Any

from vaultmem.errors import InvalidInput
from vaultmem.notes import frontmatter as fm
from vaultmem.notes.frontmatter import NoteText
from vaultmem.vault.layout import VaultLayout
from vaultmem.vault.reading import read_regular_text


def side_text(text: str) -> NoteText:
    """``text`` as the pipeline's file content, written byte for byte (no frontmatter handling)."""
    return NoteText(False, "\n", False, "", [], "", text)


def read_side(layout: VaultLayout, rel: str) -> str | None:
    """A side file's text, or None when it does not exist (or cannot be read as UTF-8)."""
    path = layout.resolve(rel)
    try:
        return read_regular_text(path)  # never blocks: a pipe is refused, not opened
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{rel} cannot be read ({exc}); fix or move the file by hand") from exc


def edit_yaml(text: str, changes: dict[str, Any], *, source: str) -> str:
    """A YAML mapping file with ``changes`` applied entry by entry (``fm.DELETE`` removes a key).

    Comments, unknown keys and their formatting are kept: the frontmatter editor does the work, on
    the file's text between two fences.
    """
    body = text if text.endswith("\n") or not text else text + "\n"
    doc = fm.parse(f"---\n{body}---\n", source=source)
    edited = fm.set_fields(doc, changes).render()
    return edited.removeprefix("---\n").removesuffix("---\n")
