"""Turn notes into index records, and reconcile the index with the vault.

The vault is the source of truth: :func:`reconcile` makes the index's (path, content hash) set equal
the vault's, re-reading only files whose hash differs. A malformed note is reported and left out of
the index, never rewritten.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vaultmem.errors import MalformedNote, VaultmemError
from vaultmem.index.records import NoteRecord
from vaultmem.notes.links import text_refs
from vaultmem.notes.model import Note
from vaultmem.sync.graph import EdgeGraph, index_id
from vaultmem.vault.catalog import Catalog
from vaultmem.vault.layout import VaultLayout, bad_name_reason, is_conflict_copy
from vaultmem.vault.note_files import read_note
from vaultmem.vault.reading import shown

if TYPE_CHECKING:
    from vaultmem.index.note_index import NoteIndex

log = logging.getLogger(__name__)
#: ``(notes indexed, notes to index, chunks embedded)``: a chunk is a text the model embedded (a
#: short note, or one window of a long one); whatever the cache held is not counted.
Progress = Callable[[int, int, int], None]
#: The tag a sync client's conflict copy carries in the index (the file itself is never changed).
CONFLICT_COPY_TAG = "conflict-copy"


def record_for(note: Note, catalog: Catalog | None = None) -> NoteRecord:
    """The index record of a note (under :func:`index_id`). Its tags are every tag the note
    carries, frontmatter ``tags:`` and body ``#tags`` (so both filter a search); a conflict copy
    is flagged with the ``conflict-copy`` tag."""
    note_id = index_id(note, catalog)
    entry = catalog.by_path(note.path) if catalog is not None else None
    body_tags = entry.body_tags if entry is not None and entry.content_hash == note.content_hash else None
    if body_tags is None:
        body_tags = text_refs(note.body).tags
    tags = (*note.tags, *(t for t in body_tags if t not in note.tags))
    if is_conflict_copy(note.path, catalog.layout.root if catalog is not None else None):
        tags = (*tags, CONFLICT_COPY_TAG)
    session = note.source.get("session")
    return NoteRecord(
        id=note_id,
        path=note.path,
        slug=note.slug,
        title=note.title,
        kind=note.kind,
        status=note.status,
        project=note.project,
        tags=tags,
        text=note.body,
        content_hash=note.content_hash,
        created=note.created or "",
        updated=note.updated or note.created or "",
        session=session if isinstance(session, str) and session else None,
    )


class IndexListener:
    """Keeps the index current with the service's own writes (read your writes)."""

    def __init__(
        self, index: NoteIndex, edges: EdgeGraph | None = None, catalog: Catalog | None = None
    ) -> None:
        self.index = index
        self.edges = edges
        #: Who holds each id: a write to a conflict copy (which carries its original's id) goes to
        #: the copy's own row, never over the original's.
        self.catalog = catalog

    def notes_written(self, notes: list[Note]) -> None:
        """A batch written as one action: one index upsert, then the edges of every note."""
        self.index.upsert([record_for(n, self.catalog) for n in notes])
        if self.edges is not None:
            self.edges.update_many(notes)


@dataclass
class ReconcileReport:
    """What a reconcile found and did."""

    indexed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    malformed: dict[str, str] = field(default_factory=dict)
    unchanged: int = 0
    #: Chunks the embedder embedded while it ran (0: every vector came from the embedding cache).
    embedded: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.indexed or self.removed)


def reconcile(
    layout: VaultLayout,
    catalog: Catalog,
    index: NoteIndex,
    *,
    batch: int = 128,
    progress: Progress | None = None,
    edges: EdgeGraph | None = None,
    wait: bool = False,
) -> ReconcileReport:
    """Bring the index to the vault's state: upsert changed paths, delete vanished ones.

    The catalog must be current (``catalog.scan()`` compares mtime and size, then parses what
    changed); this compares its content hashes with the index's and re-reads only the differences.
    The index embeds in the background; ``wait`` returns once it has (``progress`` is told how
    far the index writer got, in notes and chunks, as it goes).
    """
    report = ReconcileReport(malformed=dict(catalog.problems))
    wanted = {e.path: e.content_hash for e in catalog.entries()}
    indexed = index.path_hashes()
    _bring_up_to_date(layout, catalog, index, wanted, indexed, report, batch, progress, edges, wait)
    if index.failed_writes:  # writes that failed earlier (a full disk): cleared once in step
        index.settle_failed_writes(wanted)
    return report


def reconcile_paths(
    layout: VaultLayout,
    catalog: Catalog,
    index: NoteIndex,
    paths: list[str],
    *,
    batch: int = 128,
    edges: EdgeGraph | None = None,
) -> ReconcileReport:
    """:func:`reconcile` for ``paths`` only: what a sync round's merge changed, from its diff, so
    1,000 incoming notes cost 1,000 reads, not a walk of the vault. The catalog must be current for
    them (the round refreshes it under the write lock)."""
    report = ReconcileReport(malformed={p: catalog.problems[p] for p in paths if p in catalog.problems})
    entries = {p: e for p in paths if (e := catalog.by_path(p)) is not None}
    wanted = {p: e.content_hash for p, e in entries.items()}
    indexed = index.path_hashes_for(paths)
    _bring_up_to_date(layout, catalog, index, wanted, indexed, report, batch, None, edges, False)
    return report


def _bring_up_to_date(
    layout: VaultLayout,
    catalog: Catalog,
    index: NoteIndex,
    wanted: dict[str, str],
    indexed: dict[str, str],
    report: ReconcileReport,
    batch: int,
    progress: Progress | None,
    edges: EdgeGraph | None,
    wait: bool,
) -> None:
    """Upsert the ``wanted`` notes whose hash the index lacks, delete the ``indexed`` ones not wanted;
    ``wait`` returns once the index's writer has embedded them, telling ``progress`` as it goes."""
    stored, embedded = index.notes_stored, index.texts_embedded

    def tell(total: int) -> None:
        if progress:
            progress(min(total, index.notes_stored - stored), total, index.texts_embedded - embedded)

    stale = [p for p, h in wanted.items() if indexed.get(p) != h]
    stale += _misfiled(catalog, index, wanted, set(stale))
    gone = [p for p in indexed if p not in wanted]
    # A row of a changed path under another id goes (its id was edited: a person's hand, or a
    # sync round's merge); the row under the id the file has now is written below.
    entries = {p: e for p in stale if p in indexed and (e := catalog.by_path(p)) is not None}
    if entries:
        index.delete_ids(
            r.id for r in index.records_for_paths(list(entries)) if r.id != index_id(entries[r.path], catalog)
        )
    stale += [p for p in _untagged(catalog, index, set(stale)) if p in wanted]  # of these paths
    report.unchanged = len(wanted) - len(stale)
    if gone:
        index.delete_ids(r.id for r in index.records_for_paths(gone))
        report.removed.extend(gone)
    total = len(stale)
    pending: list[NoteRecord] = []
    for rel in stale:
        try:
            note = read_note(layout, rel)
        except MalformedNote as exc:
            report.malformed[rel] = str(exc)
            continue
        pending.append(record_for(note, catalog))
        if len(pending) >= batch:
            index.upsert(pending)
            report.indexed.extend(r.path for r in pending)
            pending = []
            tell(total)
    if pending:
        index.upsert(pending)
        report.indexed.extend(r.path for r in pending)
    total = len(report.indexed)
    while wait and not index.writes_done(0.25):
        tell(total)
    tell(total)
    report.embedded = index.texts_embedded - embedded
    if edges is not None and (report.changed or not edges.primed):
        edges.rebuild(layout)


def _misfiled(catalog: Catalog, index: NoteIndex, wanted: dict[str, str], stale: set[str]) -> list[str]:
    """Unchanged notes whose row is not where the catalog gives their id now (a copy made by hand
    took its original's id, a holder's file was renamed or touched while nothing ran, a process
    was killed between the two), and the notes whose row is under that id instead: both written
    again, each under its own id (33-54 ms at 100k notes, load 2.8)."""
    out = []
    for note_id, row_path in index.mirror.misplaced(catalog.holders()).items():
        holder = catalog.by_id(note_id)
        for rel in (holder.path if holder is not None else None, row_path):
            if rel is not None and rel in wanted and rel not in stale:
                out.append(rel)
                stale.add(rel)
    return out


def _untagged(catalog: Catalog, index: NoteIndex, stale: set[str]) -> list[str]:
    """Notes whose index row's tags are not the note's (frontmatter ``tags:`` and body ``#tags``, a
    conflict copy's flag aside): rows written before body tags counted, before Templater
    placeholders were no tags, or before tags were read as Obsidian reads them (an emoji, math, a
    block closed by ``...``). Written again, which re-embeds nothing (the text is unchanged)."""
    out: list[str] = []
    flag = {CONFLICT_COPY_TAG}
    for r in index.iter_records():
        entry = catalog.by_path(r.path) if r.path not in stale else None
        if entry is None or r.tags == entry.all_tags:  # the same, in the same order: the usual case
            continue
        if set(r.tags) - flag != set(entry.all_tags) - flag:
            out.append(r.path)
    return sorted(out)


def sync_path(
    layout: VaultLayout, catalog: Catalog, index: NoteIndex, rel: str, edges: EdgeGraph | None = None
) -> str:
    """Bring one path's catalog entry and index row up to date.

    Returns what happened: ``unchanged`` (the daemon's own write, or nothing new), ``indexed``,
    ``removed``, ``malformed`` (reported, left out of the index), ``unreadable`` (a name that is not
    UTF-8: reported, never read) or ``skipped`` (a pipe, socket or device: reported, never opened).
    """
    full = layout.root / rel
    reason = layout.skip_reason(rel)
    if reason is not None:
        catalog.refresh(rel)  # records why in catalog.skipped
        rows = index.records_for_paths([rel])
        if rows:  # a note replaced by a pipe, say
            _drop_rows(catalog, index, rows, edges)
        log.warning("%s", reason)
        return "unreadable" if bad_name_reason(rel) is not None else "skipped"
    if not full.is_file():
        had = catalog.by_path(rel) is not None or rel in catalog.problems or shown(rel) in catalog.skipped
        catalog.forget_path(rel)
        rows = index.records_for_paths([rel])
        if rows:
            _drop_rows(catalog, index, rows, edges)
        elif edges is not None and rel.endswith(".md"):
            edges.path_gone(rel)  # its row went with its id to a new name: links by the old name dangle
        # A note renamed by hand whose new name was seen first has already lost its entry and
        # row to the new path; its old path's removal must still be committed (a missing path
        # git never tracked is left out of the commit).
        return "removed" if (had or rows or rel.endswith(".md")) else "unchanged"
    try:
        note = read_note(layout, rel)
    except MalformedNote as exc:
        catalog.refresh(rel)
        rows = index.records_for_paths([rel])
        if rows:
            _drop_rows(catalog, index, rows, edges)
        log.warning("%s", exc)
        return "malformed"
    known = catalog.by_path(rel)
    if known is not None and known.content_hash == note.content_hash:
        # Already known at this exact content: the daemon's own write (its pipeline updates the
        # index), or an event for a file that did not change. No index query on this hot path.
        return "unchanged"
    catalog.refresh(rel)
    try:
        # the id in the file was edited by hand: the row under the old id goes, and a copy
        # carrying that id takes it
        replaced = _index_note(catalog, index, note, edges)
        _index_heirs(catalog, index, replaced, edges)
    except VaultmemError as exc:
        log.warning("could not index %s: %s", rel, exc)
        raise
    return "indexed"


def _index_note(catalog: Catalog, index: NoteIndex, note: Note, edges: EdgeGraph | None) -> list[str]:
    """Write the row and the edges of ``note``; return the ids of the rows at its path it replaced
    (a row under an id the note no longer has: its own edited, or one it took over)."""
    record = record_for(note, catalog)
    replaced = [r.id for r in index.records_for_paths([note.path]) if r.id != record.id]
    if replaced:
        index.delete_ids(replaced)
    prior = index.get(record.id)  # the row of this id, at another path when the id moves here
    index.upsert([record])
    if edges is not None:
        for old in replaced:
            edges.forget(old)
        edges.update(note)
    if prior is not None and prior.path != note.path and catalog.by_path(prior.path) is not None:
        # the note there lost its row to this one (it carries the id too, and this file took it
        # back: a sync client's conflict copy yields to a plain file): it is written again under
        # an id of its own
        with contextlib.suppress(MalformedNote):
            _index_note(catalog, index, read_note(catalog.layout, prior.path), edges)
    return replaced


def _drop_rows(catalog: Catalog, index: NoteIndex, rows: list[NoteRecord], edges: EdgeGraph | None) -> None:
    """The rows of a path that is no note now (gone, broken, a pipe): out of the index with their
    edges (the links naming them or recording their ids resolve again), and their ids to heirs."""
    index.delete_ids([r.id for r in rows])
    if edges is not None:
        for row in rows:
            edges.forget(row.id, row.path)
    _index_heirs(catalog, index, [r.id for r in rows], edges)


def _index_heirs(catalog: Catalog, index: NoteIndex, freed: list[str], edges: EdgeGraph | None) -> None:
    """The ids in ``freed`` left the index with their note (deleted, broken, or its id edited): a
    copy that carries one and was indexed under an id of its own takes it now, row and edges, as
    the catalog gave it (``Catalog.refresh``) and as the next start would find it."""
    for note_id in freed:
        heir = catalog.by_id(note_id)
        if heir is None or index.get(note_id) is not None:
            continue
        try:
            _index_note(catalog, index, read_note(catalog.layout, heir.path), edges)
        except MalformedNote:
            continue
