"""Turn notes into index records, and reconcile the index with the vault.

The vault is the source of truth: :func:`reconcile` makes the index's (path, content hash) set equal
the vault's, re-reading only files whose hash differs. A malformed note is reported and left out of
the index, never rewritten.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from vaultmem.errors import VaultmemError
from vaultmem.index.records import NoteRecord
from vaultmem.index.store import NoteIndex
from vaultmem.notes.frontmatter import MalformedNote
from vaultmem.notes.model import Note
from vaultmem.vault.catalog import Catalog, read_note
from vaultmem.vault.layout import VaultLayout

log = logging.getLogger(__name__)
#: Namespace of ids derived for notes a person wrote without an ``id`` (stable while the path is).
_DERIVED_NS = uuid.UUID("8f7a4c52-3c1e-4d0b-9a55-6b1d2f0e7a10")
Progress = Callable[[int, int], None]


def derived_id(path: str) -> str:
    """The id of a note without one: a UUID derived from its vault path."""
    return str(uuid.uuid5(_DERIVED_NS, path))


def record_for(note: Note) -> NoteRecord:
    """The index record of a note."""
    return NoteRecord(
        id=note.id or derived_id(note.path),
        path=note.path,
        slug=note.slug,
        title=note.title,
        kind=note.kind,
        status=note.status,
        project=note.project,
        tags=note.tags,
        text=note.body,
        content_hash=note.content_hash,
        created=note.created or "",
        updated=note.updated or note.created or "",
    )


class IndexListener:
    """Keeps the index current with the service's own writes (read your writes)."""

    def __init__(self, index: NoteIndex) -> None:
        self.index = index

    def note_written(self, note: Note) -> None:
        self.index.upsert([record_for(note)])


@dataclass
class ReconcileReport:
    """What a reconcile found and did."""

    indexed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    malformed: dict[str, str] = field(default_factory=dict)
    unchanged: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.indexed or self.removed)


def reconcile(
    layout: VaultLayout,
    catalog: Catalog,
    index: NoteIndex,
    *,
    batch: int = 64,
    progress: Progress | None = None,
) -> ReconcileReport:
    """Bring the index to the vault's state: upsert changed paths, delete vanished ones.

    The catalog must be current (``catalog.scan()`` compares mtime and size, then parses what
    changed); this compares its content hashes with the index's and re-reads only the differences.
    """
    report = ReconcileReport(malformed=dict(catalog.problems))
    indexed = index.path_hashes()
    wanted = {e.path: e.content_hash for e in catalog.entries()}
    stale = [p for p, h in wanted.items() if indexed.get(p) != h]
    gone = [p for p in indexed if p not in wanted]
    report.unchanged = len(wanted) - len(stale)
    if gone:
        ids = [r.id for r in index.records_for_paths(gone)]
        index.delete_ids(ids)
        report.removed.extend(gone)
    total = len(stale)
    pending: list[NoteRecord] = []
    done = 0
    for rel in stale:
        try:
            note = read_note(layout, rel)
        except MalformedNote as exc:
            report.malformed[rel] = str(exc)
            continue
        pending.append(record_for(note))
        if len(pending) >= batch:
            index.upsert(pending)
            done += len(pending)
            report.indexed.extend(r.path for r in pending)
            pending = []
            if progress:
                progress(done, total)
    if pending:
        index.upsert(pending)
        done += len(pending)
        report.indexed.extend(r.path for r in pending)
    if progress:
        progress(done, total)
    return report


def sync_path(layout: VaultLayout, catalog: Catalog, index: NoteIndex, rel: str) -> str:
    """Bring one path's catalog entry and index row up to date.

    Returns what happened: ``unchanged`` (the daemon's own write, or nothing new), ``indexed``,
    ``removed`` or ``malformed``.
    """
    full = layout.root / rel
    if not full.is_file():
        had = catalog.by_path(rel) is not None or rel in catalog.problems
        catalog.forget_path(rel)
        rows = index.records_for_paths([rel])
        if rows:
            index.delete_ids([r.id for r in rows])
        return "removed" if (had or rows) else "unchanged"
    try:
        note = read_note(layout, rel)
    except MalformedNote as exc:
        catalog.refresh(rel)
        rows = index.records_for_paths([rel])
        if rows:
            index.delete_ids([r.id for r in rows])
        log.warning("%s", exc)
        return "malformed"
    known = catalog.by_path(rel)
    if (
        known is not None
        and known.content_hash == note.content_hash
        and index.path_hashes_for([rel]).get(rel) == note.content_hash
    ):
        return "unchanged"
    catalog.refresh(rel)
    try:
        index.upsert([record_for(note)])
    except VaultmemError as exc:
        log.warning("could not index %s: %s", rel, exc)
        raise
    return "indexed"
