"""What a health check needs from each note's file, kept by its content: secrets and property links.

``doctor`` and ``memory_status`` health read and parsed every note at every call, for two facts that
depend only on the file's bytes: the secrets it holds and the wikilinks in its frontmatter
properties (9 s at 10k notes, ~70 s at 100k, each call). They are now kept per (path, content
hash): in memory by a daemon's status, and in ``<state>/health.cache`` across restarts and between
the CLI and the daemon, so a check reads only the notes that changed since the last one. The file
is derived state: written atomically and not fsynced, checksummed (``vault/statefile.py``), and
ignored when it was written by another version of the rules that find those facts (the sources of
the secret rules and of link parsing are its key), or is damaged.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from vaultmem import __version__, safe_yaml
from vaultmem.filing import _secret_rules, secrets
from vaultmem.filing.secrets import Finding, scan_note_text
from vaultmem.notes import frontmatter, links
from vaultmem.notes.links import link_key, recorded_targets, wikilink_targets
from vaultmem.vault.atomic import atomic_write
from vaultmem.vault.entry import Entry
from vaultmem.vault.layout import VaultLayout
from vaultmem.vault.note_files import read_note_and_hash
from vaultmem.vault.reading import read_regular
from vaultmem.vault.statefile import marshal_state, unmarshal_state

__all__ = ["FILE", "FactCache", "NoteFacts", "facts_of"]

log = logging.getLogger(__name__)

#: The cache's name in the state directory.
FILE = "health.cache"
_FORMAT = 2

Version = tuple[str, str]  # (vault path, content hash)


@dataclass(frozen=True)
class NoteFacts:
    """One version of a note, as a health check sees it."""

    secrets: tuple[Finding, ...]
    #: ``(property, target, id the link was made for or None)`` of each wikilink in a property.
    property_links: tuple[tuple[str, str, str | None], ...]
    #: Why a person's properties could not be read (the note is then searched as plain text).
    unreadable_properties: str | None = None


def facts_of(layout: VaultLayout, entry: Entry) -> tuple[NoteFacts, str]:
    """Read the note of ``entry`` and find its facts; with the sha256 of the bytes read."""
    note, content_hash = read_note_and_hash(layout, entry.path)
    if note.text is None:
        return NoteFacts((), (), note.unreadable_properties), content_hash
    found = tuple(scan_note_text(note.text.render(), entry.path))
    meta = note.text.meta
    recorded = recorded_targets(meta)
    targets = tuple(
        (str(key), target, recorded.get(link_key(key, target)))
        for key, value in meta.items()
        for target in wikilink_targets(value)
    )
    return NoteFacts(found, targets, note.unreadable_properties), content_hash


@functools.cache
def _rules_key() -> str:
    """The version and the sources of what finds the facts: a cache written by another version or
    other rules (the secret rules, link and frontmatter parsing, this module) is not trusted."""
    digest = hashlib.sha256(__version__.encode())
    for module in (_secret_rules, secrets, links, frontmatter, safe_yaml, sys.modules[__name__]):
        source = module.__file__
        digest.update(Path(source).read_bytes() if source else module.__name__.encode())
    return digest.hexdigest()


class FactCache:
    """Facts by note version: in memory, loaded from and saved to ``state_dir`` (if given)."""

    def __init__(self, state_dir: Path | None = None) -> None:
        self._file = None if state_dir is None else state_dir / FILE
        self._facts: dict[Version, NoteFacts] = {}
        self._loaded = self._file is None
        self._changed = False

    def get(self, version: Version) -> NoteFacts | None:
        if not self._loaded:
            self._loaded = True
            self._facts.update(self._read())
        return self._facts.get(version)

    def keep(self, facts: dict[Version, NoteFacts]) -> None:
        """Hold exactly these versions (what the vault holds now; nothing older)."""
        if facts.keys() != self._facts.keys():
            self._changed = True
        self._facts = dict(facts)

    def save(self) -> None:
        """Write the cache if it changed since it was read (a failure is logged: it is derived)."""
        if self._file is None or not self._changed:
            return
        rows = tuple(
            (
                path,
                content_hash,
                tuple(_finding_row(f) for f in facts.secrets),
                facts.property_links,
                facts.unreadable_properties,
            )
            for (path, content_hash), facts in self._facts.items()
        )
        try:
            atomic_write(self._file, marshal_state((_FORMAT, _rules_key(), rows)), durable=False)
            self._changed = False
        except (OSError, ValueError) as exc:
            log.warning("the health cache %s was not saved: %s", self._file, exc)

    def _read(self) -> Iterable[tuple[Version, NoteFacts]]:
        assert self._file is not None
        try:
            data = unmarshal_state(read_regular(self._file))
        except FileNotFoundError:
            return []
        except (OSError, ValueError, EOFError, TypeError) as exc:
            log.info("ignoring the health cache %s (%s)", self._file, exc)
            return []
        if not (isinstance(data, tuple) and len(data) == 3 and data[:2] == (_FORMAT, _rules_key())):
            return []
        rows = data[2]
        if not (isinstance(rows, tuple) and all(map(_is_row, rows))):
            log.info("ignoring the health cache %s (rows of another shape)", self._file)
            return []
        return [
            ((path, content_hash), NoteFacts(tuple(Finding(*f) for f in found), targets, unreadable))
            for path, content_hash, found, targets, unreadable in rows
        ]


def _is_row(row: object) -> bool:
    """Whether a cache row has the shape :meth:`FactCache.save` writes (the file's checksum says it
    was written whole, not by whom: a row of the wrong shape must not reach the report)."""
    if not (isinstance(row, tuple) and len(row) == 5):
        return False
    path, content_hash, found, targets, unreadable = row
    return (
        isinstance(path, str)
        and (unreadable is None or isinstance(unreadable, str))
        and isinstance(content_hash, str)
        and isinstance(found, tuple)
        and all(
            isinstance(f, tuple) and len(f) == 6 and all(map(isinstance, f, _FINDING_TYPES))
            for f in found
        )
        and isinstance(targets, tuple)
        and all(
            isinstance(t, tuple) and len(t) == 3 and isinstance(t[0], str) and isinstance(t[1], str)
            and (t[2] is None or isinstance(t[2], str))
            for t in targets
        )
    )  # fmt: skip


_FINDING_TYPES = (str, str, int, int, int, int)


def _finding_row(f: Finding) -> tuple[str, str, int, int, int, int]:
    return (f.kind, f.field, f.line, f.end_line, f.start, f.end)
