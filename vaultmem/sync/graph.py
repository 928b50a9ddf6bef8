"""The edge graph in memory: every typed link of the vault, derived from frontmatter.

Built from the notes' frontmatter at start (the first reconcile) and kept current by the write
path's listener and the watcher, so it is current when a write returns; the graph tools read it.
It is derived state held only here: a restart derives it again (``docs/architecture.md`` says why
there is no LanceDB edges table).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from vaultmem.errors import MalformedNote
from vaultmem.notes.ids import derived_id
from vaultmem.notes.links import Edge, edges_of, typed_links
from vaultmem.notes.model import Note
from vaultmem.vault.catalog import Catalog, Entry, read_note
from vaultmem.vault.layout import VaultLayout


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


@dataclass(frozen=True)
class Standing:
    """A note's standing among its peers (graph document: ``standing`` and its companions)."""

    standing: str  # current | superseded | contradicted
    superseded_by: tuple[str, ...]
    contradicted_by: tuple[str, ...]


class EdgeGraph:
    """Every edge of the vault, by source, by target and by id. Thread-safe."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._out: dict[str, list[Edge]] = {}  # source id -> its edges
        self._in: dict[str, list[Edge]] = {}  # target id -> edges pointing at it
        self._by_id: dict[str, Edge] = {}  # edge id -> edge
        self.primed = False  # every linked note's edges computed at least once
        self._lock = threading.RLock()

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
        """Replace the outgoing edges of each note."""
        with self._lock:
            for note in notes:
                source_id = index_id(note, self.catalog)  # a conflict copy's links are its own
                meta = note.text.meta if note.text is not None else {}
                if not typed_links(meta) and source_id not in self._out:
                    continue
                edges, _dangling = edges_of(
                    source_id, meta, self._resolver(note.path), note.updated or note.created or ""
                )
                self._set(source_id, edges)

    def forget(self, source_id: str) -> None:
        with self._lock:
            self._set(source_id, [])

    def _set(self, source_id: str, edges: list[Edge]) -> None:
        for old in self._out.pop(source_id, []):
            self._by_id.pop(old.id, None)
            incoming = self._in.get(old.target_id, [])
            incoming[:] = [e for e in incoming if e.source_id != source_id]
            if not incoming:
                self._in.pop(old.target_id, None)
        if edges:
            self._out[source_id] = list(edges)
            for edge in edges:
                self._in.setdefault(edge.target_id, []).append(edge)
                self._by_id[edge.id] = edge

    def find(self, edge_id: str) -> Edge | None:
        """The edge with this id (from memory)."""
        return self._by_id.get(edge_id)

    def outgoing(self, note_id: str) -> list[Edge]:
        return list(self._out.get(note_id, []))

    def incoming(self, note_id: str) -> list[Edge]:
        return list(self._in.get(note_id, []))

    def edges_of(self, note_id: str) -> list[Edge]:
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
