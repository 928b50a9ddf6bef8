"""Turn notes into index records, and reconcile the index with the vault.

The vault is the source of truth: :func:`reconcile` makes the index's (path, content hash) set equal
the vault's, re-reading only files whose hash differs. A malformed note is reported and left out of
the index, never rewritten.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from vaultmem.errors import VaultmemError
from vaultmem.graph.links import edges_of, typed_links
from vaultmem.index.records import EdgeRecord, NoteRecord
from vaultmem.index.store import NoteIndex
from vaultmem.notes.frontmatter import MalformedNote
from vaultmem.notes.ids import derived_id
from vaultmem.notes.model import Note
from vaultmem.vault.catalog import Catalog, Entry, read_note
from vaultmem.vault.layout import VaultLayout, bad_name_reason, is_conflict_copy
from vaultmem.vault.reading import shown

log = logging.getLogger(__name__)
Progress = Callable[[int, int], None]
#: Above this many changed sources, edges reach the index's table in the background.
BACKGROUND_BATCH = 32
#: The tag a sync client's conflict copy carries in the index (the file itself is never changed).
CONFLICT_COPY_TAG = "conflict-copy"


def index_id(note: Note | Entry, catalog: Catalog | None = None) -> str:
    """The id a note is indexed under, and its edges keyed by.

    A file carrying another file's id (a sync client's conflict copy, a copy made by hand) gets an
    id derived from its path, so both stay searchable and neither replaces the other's row or
    edges. A note without an id gets one derived from its path too.
    """
    if not note.id:
        return derived_id(note.path)
    if catalog is not None:
        owner = catalog.by_id(note.id)
        if owner is not None and owner.path != note.path:
            return derived_id(note.path)
    return note.id


def record_for(note: Note, catalog: Catalog | None = None) -> NoteRecord:
    """The index record of a note (under :func:`index_id`); a conflict copy is flagged with the
    ``conflict-copy`` tag."""
    note_id = index_id(note, catalog)
    tags = (*note.tags, CONFLICT_COPY_TAG) if is_conflict_copy(note.path) else note.tags
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
    )


@dataclass(frozen=True)
class Standing:
    """A note's standing among its peers (graph document: ``standing`` and its companions)."""

    standing: str  # current | superseded | contradicted
    superseded_by: tuple[str, ...]
    contradicted_by: tuple[str, ...]


class EdgeSync:
    """Derives the edges table from the typed links in notes' frontmatter."""

    def __init__(self, catalog: Catalog, index: NoteIndex) -> None:
        self.catalog = catalog
        self.index = index
        self._out: dict[str, list[EdgeRecord]] = {}  # source id -> its edges (in the index too)
        self._in: dict[str, list[EdgeRecord]] = {}  # target id -> edges pointing at it
        self._by_id: dict[str, EdgeRecord] = {}  # edge id -> edge
        self.primed = False  # every linked note's edges computed at least once
        # The in-memory graph answers the graph tools at once; the index's edges table follows. The
        # index replaces edges one source at a time (one LanceDB commit each), so a large batch is
        # copied to it by a background thread, always writing a source's *current* edges.
        self._lock = threading.RLock()
        self._pending: dict[str, None] = {}
        self._flusher: threading.Thread | None = None
        self._closed = False

    def _resolver(self, source: str) -> Callable[[str, str | None], str | None]:
        """Resolve the links of the note at ``source``: (name, recorded id) -> the target's id."""

        def resolve(target: str, recorded: str | None) -> str | None:
            entry = self.catalog.resolve_link(target, source=source, recorded=recorded)
            if entry is None:
                return None
            return index_id(entry, self.catalog)  # a link to a conflict copy points at the copy's row

        return resolve

    def update(self, note: Note) -> None:
        """Replace the note's outgoing edges (a no-op for a note that has and had none)."""
        self.update_many([note])

    def update_many(self, notes: list[Note]) -> None:
        """Replace the outgoing edges of each note: in memory at once, then in the index (in the
        background when more than :data:`BACKGROUND_BATCH` sources changed)."""
        with self._lock:
            changed: list[str] = []
            for note in notes:
                source_id = index_id(note, self.catalog)  # a conflict copy's links are its own
                meta = note.text.meta if note.text is not None else {}
                if not typed_links(meta) and source_id not in self._out:
                    continue
                edges, _dangling = edges_of(
                    source_id, meta, self._resolver(note.path), note.updated or note.created or ""
                )
                self._set(source_id, edges)
                changed.append(source_id)
            if len(changed) <= BACKGROUND_BATCH:
                for source_id in changed:
                    self._pending.pop(source_id, None)
                    self._push(source_id)
                return
            self._pending.update(dict.fromkeys(changed))
            if self._flusher is None:
                self._flusher = threading.Thread(target=self._flush, name="vaultmem-edges", daemon=True)
                self._flusher.start()

    def _push(self, source_id: str) -> None:
        """Write a source's current edges to the index (lock held, so a stale copy never wins)."""
        self.index.replace_edges_for(source_id, list(self._out.get(source_id, [])))

    def _flush(self) -> None:
        while True:
            with self._lock:
                if not self._pending or self._closed:
                    self._flusher = None
                    return
                source_id = next(iter(self._pending))
                del self._pending[source_id]
                try:
                    self._push(source_id)
                except VaultmemError as exc:  # the index closed: the next start rebuilds the edges
                    log.warning("edges of %s not copied to the index: %s", source_id, exc)
                    self._flusher = None
                    return

    def drain(self, timeout: float = 120.0) -> bool:
        """Wait until the index holds every edge; False if that took longer than ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                flusher = self._flusher
            if flusher is None:
                return True
            flusher.join(max(0.0, deadline - time.monotonic()))
            if time.monotonic() >= deadline:
                return False

    def close(self) -> None:
        """Stop copying to the index (what is left is rebuilt from the vault at the next start)."""
        with self._lock:
            self._closed = True

    def forget(self, source_id: str) -> None:
        with self._lock:
            if source_id in self._out:
                self._set(source_id, [])
                self._pending.pop(source_id, None)
                self._push(source_id)

    def _set(self, source_id: str, edges: list[EdgeRecord]) -> None:
        for old in self._out.pop(source_id, []):
            self._by_id.pop(old.edge_id, None)
            incoming = self._in.get(old.target_id, [])
            incoming[:] = [e for e in incoming if e.source_id != source_id]
            if not incoming:
                self._in.pop(old.target_id, None)
        if edges:
            self._out[source_id] = list(edges)
            for edge in edges:
                self._in.setdefault(edge.target_id, []).append(edge)
                self._by_id[edge.edge_id] = edge

    def find(self, edge_id: str) -> EdgeRecord | None:
        """The edge with this id (from memory)."""
        return self._by_id.get(edge_id)

    def outgoing(self, note_id: str) -> list[EdgeRecord]:
        return list(self._out.get(note_id, []))

    def incoming(self, note_id: str) -> list[EdgeRecord]:
        return list(self._in.get(note_id, []))

    def edges_of(self, note_id: str) -> list[EdgeRecord]:
        """Every edge that starts or ends at ``note_id`` (from memory; no index query)."""
        return [*self._out.get(note_id, []), *self._in.get(note_id, [])]

    def standing(self, note_id: str, status: str, is_live: Callable[[str], bool]) -> Standing:
        """Whether a note is current, superseded or contradicted, and by which live notes.

        Superseded: its status says so, or a live note ``replaces`` it. Contradicted: a live note
        and it are joined by a ``contradicts`` edge (either direction).
        """
        superseded_by = sorted(
            {e.source_id for e in self._in.get(note_id, []) if e.type == "replaces" and is_live(e.source_id)}
        )
        contradicted_by = sorted(
            {
                e.target_id if e.source_id == note_id else e.source_id
                for e in self.edges_of(note_id)
                if e.type == "contradicts"
            }
            - {note_id}
        )
        contradicted_by = [i for i in contradicted_by if is_live(i)]
        if status == "superseded" or superseded_by:
            return Standing("superseded", tuple(superseded_by), tuple(contradicted_by))
        if contradicted_by:
            return Standing("contradicted", (), tuple(contradicted_by))
        return Standing("current", (), ())

    def rebuild(self, layout: VaultLayout) -> int:
        """Recompute every linked note's edges (after a reconcile changed what links resolve to)."""
        notes: list[Note] = []
        for entry in self.catalog.entries():
            if entry.links:
                try:
                    notes.append(read_note(layout, entry.path))
                except MalformedNote:
                    continue
        self.update_many(notes)
        self.primed = True
        return len(notes)


class IndexListener:
    """Keeps the index current with the service's own writes (read your writes)."""

    def __init__(self, index: NoteIndex, edges: EdgeSync | None = None) -> None:
        self.index = index
        self.edges = edges

    def note_written(self, note: Note) -> None:
        self.notes_written([note])

    def notes_written(self, notes: list[Note]) -> None:
        """A batch written as one action: one index upsert, then the edges of every note."""
        self.index.upsert([record_for(n) for n in notes])
        if self.edges is not None:
            self.edges.update_many(notes)


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
    batch: int = 128,
    progress: Progress | None = None,
    edges: EdgeSync | None = None,
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
        pending.append(record_for(note, catalog))
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
    if edges is not None and (report.changed or not edges.primed):
        edges.rebuild(layout)
    if index.failed_writes:  # writes that failed earlier (a full disk): cleared once in step
        index.settle_failed_writes(wanted)
    return report


def sync_path(
    layout: VaultLayout, catalog: Catalog, index: NoteIndex, rel: str, edges: EdgeSync | None = None
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
            index.delete_ids([r.id for r in rows])
        log.warning("%s", reason)
        return "unreadable" if bad_name_reason(rel) is not None else "skipped"
    if not full.is_file():
        had = catalog.by_path(rel) is not None or rel in catalog.problems or shown(rel) in catalog.skipped
        catalog.forget_path(rel)
        rows = index.records_for_paths([rel])
        if rows:
            index.delete_ids([r.id for r in rows])  # also drops their outgoing edges
            for row in rows:
                if edges is not None:
                    edges.forget(row.id)
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
    if known is not None and known.content_hash == note.content_hash:
        # Already known at this exact content: the daemon's own write (its pipeline updates the
        # index), or an event for a file that did not change. No index query on this hot path.
        return "unchanged"
    catalog.refresh(rel)
    record = record_for(note, catalog)
    try:
        replaced = [r.id for r in index.records_for_paths([rel]) if r.id != record.id]
        if replaced:  # the id in the file was edited by hand: drop the row under the old id
            index.delete_ids(replaced)
        index.upsert([record])
        if edges is not None:
            edges.update(note)
    except VaultmemError as exc:
        log.warning("could not index %s: %s", rel, exc)
        raise
    return "indexed"
