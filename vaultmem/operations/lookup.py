"""Finding thoughts and edges: by id, through the catalog (the vault's view) and the edge graph."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vaultmem.errors import InvalidInput, NotFound
from vaultmem.notes.frontmatter import NoteText
from vaultmem.notes.ids import canonical_id, is_full_id
from vaultmem.notes.links import (
    LINK_TARGETS_KEY,
    TEXT_LINK,
    Edge,
    LinkTarget,
    edge_id,
    link_key,
    recorded_targets,
    remove_link,
    typed_links,
)
from vaultmem.notes.model import LIVE_STATUSES
from vaultmem.operations.results import Json, Thought
from vaultmem.sync.graph import EdgeGraph, index_id
from vaultmem.vault.catalog import Catalog
from vaultmem.vault.entry import Entry
from vaultmem.vault.store import NoteStore

if TYPE_CHECKING:
    from vaultmem.index.note_index import NoteIndex


@dataclass(frozen=True)
class Located:
    """An edge found in the vault: the edge and the note whose frontmatter declares it."""

    edge: Edge
    source: Entry


class Lookup:
    """Thoughts and edges by id: the reads every graph action shares."""

    def __init__(self, catalog: Catalog, store: NoteStore, edges: EdgeGraph, index: NoteIndex | None) -> None:
        self.catalog = catalog
        self.store = store
        self.edges = edges
        self.index = index

    # -- thoughts ---------------------------------------------------------------------------
    def id_of(self, entry: Entry) -> str:
        """The id a note answers under: its own while its file holds it, else one derived from its
        path (a sync client's conflict copy or a hand copy carrying another file's id), as it is
        indexed (:func:`~vaultmem.sync.graph.index_id`)."""
        return index_id(entry, self.catalog)

    def entry(self, note_id: str) -> Entry | None:
        """The catalog entry of a thought id (a note without an ``id`` key has a derived one)."""
        if not is_full_id(note_id):
            return None
        wanted = canonical_id(note_id)
        entry = self.catalog.by_id(wanted)
        if entry is not None:
            return entry
        record = self.index.get(wanted) if self.index is not None else None  # a derived id, at once
        if record is not None and (by_path := self.catalog.by_path(record.path)) is not None:
            return by_path
        return self.catalog.entry_for_id(wanted)  # not indexed yet: the catalog decides

    def require(self, note_id: Json, argument: str = "thought_id", *, forgotten_ok: bool = False) -> Entry:
        """The thought ``argument`` names. A forgotten one (``status: deleted``) is left out of every
        tool, as the memory-tools document says of a soft delete, so it is a 404 too unless the
        action is itself idempotent over forgetting (``forgotten_ok``)."""
        if not isinstance(note_id, str) or not note_id.strip():
            raise InvalidInput(f"{argument} is required: pass the id of a thought")
        if not is_full_id(note_id):
            raise InvalidInput(
                f"{argument} {note_id!r} is not a thought id; ids look like 0192f0c1-8d2e-7b3a-…"
            )
        entry = self.entry(note_id)
        if entry is None:
            raise NotFound(
                f"no thought has id {note_id} ({argument}); find it with memory_recall action=search"
            )
        if entry.status == "deleted" and not forgotten_ok:
            raise NotFound(
                f"no thought has id {note_id} ({argument}): it was forgotten (memory_forget), and the "
                "tools leave forgotten memories out; memory_search with include_deleted: true still "
                "lists it, and a person restores it by setting its status back in the file"
            )
        return entry

    def is_live(self, note_id: str) -> bool:
        entry = self.entry(note_id)
        return entry is not None and entry.status in LIVE_STATUSES

    def thought(self, entry: Entry, body: str | None = None) -> Thought:
        if body is None:
            body = self.store.read(entry.path).body
        return Thought.of(entry, self.id_of(entry), body)

    def thoughts(self, entries: Iterable[Entry]) -> dict[str, Thought]:
        """Thoughts for many entries; bodies come from the index in one call, files only for stragglers."""
        wanted = {self.id_of(e): e for e in entries}
        records = self.index.get_many(list(wanted)) if self.index is not None else {}
        out: dict[str, Thought] = {}
        for note_id, entry in wanted.items():
            record = records.get(note_id)
            fresh = record is not None and record.content_hash == entry.content_hash
            out[note_id] = self.thought(entry, record.text if fresh and record is not None else None)
        return out

    def thought_by_id(self, note_id: str) -> Thought | None:
        """The thought with this id, unless there is none or it was forgotten."""
        entry = self.entry(note_id)
        return self.thought(entry) if entry is not None and entry.status != "deleted" else None

    # -- links --------------------------------------------------------------------------------
    def link_to(self, target: Entry) -> LinkTarget:
        """How a new link names ``target``: its file name, or its vault path when another note shares
        the name (a bare name would be ambiguous in Obsidian), with the id recorded beside it."""
        shared = len(self.catalog.paths_named(target.slug)) > 1
        name = target.path.removesuffix(".md") if shared else target.slug
        return LinkTarget(name, self.id_of(target))

    def target_of(self, holder: str, meta: Mapping[str, Any], edge_type: str, name: str) -> Entry | None:
        """The note the ``edge_type`` link ``[[name]]`` of the note at ``holder`` (frontmatter
        ``meta``) points at: the one recorded for it while that note exists, else by name."""
        recorded = recorded_targets(meta).get(link_key(edge_type, name))
        return self.catalog.resolve_link(name, source=holder, recorded=recorded)

    def points_at(
        self, holder: str, meta: Mapping[str, Any], edge_type: str, note_id: str
    ) -> Callable[[str], bool]:
        """Whether a ``edge_type`` link name of the note at ``holder`` points at ``note_id``."""

        def check(name: str) -> bool:
            entry = self.target_of(holder, meta, edge_type, name)
            return entry is not None and self.id_of(entry) == note_id

        return check

    def without_link(
        self, text: NoteText, holder: str, edge_type: str, note_id: str
    ) -> tuple[NoteText, list[str]]:
        """``text`` (of the note at ``holder``) without its ``edge_type`` links to ``note_id``."""
        return remove_link(text, edge_type, self.points_at(holder, text.meta, edge_type, note_id))

    def _links_of(self, entry: Entry) -> dict[str, Any]:
        """The typed links of a catalogued note, as a minimal frontmatter for :meth:`target_of`."""
        return {LINK_TARGETS_KEY: dict(entry.link_ids)} if entry.link_ids else {}

    # -- edges --------------------------------------------------------------------------------
    def locate(self, wanted_id: Json) -> Located | None:
        """The edge with this id as the vault has it now (memory first, then a scan of the catalog)."""
        if not isinstance(wanted_id, str) or not wanted_id.strip():
            raise InvalidInput("edge_id is required: pass the id of an edge (from link, get or context)")
        key = _edge_key(wanted_id)
        record = self.edges.find(key)
        if record is not None and record.type == TEXT_LINK:
            raise InvalidInput(self.text_link_refusal(record))
        if record is not None:
            source = self.entry(record.source_id)
            if source is not None and self._declares(source, record.type, record.target_id):
                return Located(record, source)
        for entry in self.catalog.entries():  # a write the edge graph has not seen yet
            records = self._links_of(entry)
            for edge_type, name in entry.links:
                target = self.target_of(entry.path, records, edge_type, name)
                if target is None:
                    continue
                source_id, target_id = self.id_of(entry), self.id_of(target)
                if edge_id(source_id, edge_type, target_id) == key:
                    found = self.edges.find(key)
                    created = (
                        found.created_at if found is not None else (entry.updated or entry.created or "")
                    )
                    return Located(Edge(key, source_id, target_id, edge_type, created), entry)
        return None

    def text_link(self, wanted_id: str) -> Edge | None:
        """The ``links_to`` edge (a link in a note's text) with this id, if it is one."""
        record = self.edges.find(_edge_key(wanted_id))
        return record if record is not None and record.type == TEXT_LINK else None

    def text_link_refusal(self, edge: Edge) -> str:
        """Why the ``links_to`` edge ``edge`` cannot be unlinked or retyped, and what to do instead."""
        source, target = self.entry(edge.source_id), self.entry(edge.target_id)
        where = source.path if source is not None else edge.source_id
        to = target.path if target is not None else edge.target_id
        return (
            f"edge {edge.id} is the link from {where} to {to} written in the note's text ({TEXT_LINK}): "
            "it lives in the note's words, which vaultmem never edits; change or remove the link in the "
            "note itself (in Obsidian), or add a typed link beside it with memory_store action=link"
        )

    def _declares(self, source: Entry, edge_type: str, target_id: str) -> bool:
        points_at = self.points_at(source.path, self._links_of(source), edge_type, target_id)
        return any(t == edge_type and points_at(name) for t, name in source.links)

    def links_between(
        self, a: Entry, b: Entry, metas: Mapping[str, Mapping[str, Any]] | None = None
    ) -> list[Edge]:
        """The edges joining two thoughts, either direction, as the vault (or a pending batch) has them."""
        out: list[Edge] = []
        for source, target in ((a, b), (b, a)):
            source_id, target_id = self.id_of(source), self.id_of(target)
            pending = (metas or {}).get(source.path)
            links = typed_links(pending) if pending is not None else source.links
            meta = pending if pending is not None else self._links_of(source)
            for edge_type, name in links:
                if self.points_at(source.path, meta, edge_type, target_id)(name):
                    record = self.edges.find(edge_id(source_id, edge_type, target_id))
                    created = record.created_at if record is not None else ""
                    out.append(Edge.make(source_id, edge_type, target_id, created))
        return out


def _edge_key(wanted_id: str) -> str:
    """An edge id as the graph keys it (a full id in canonical form)."""
    return canonical_id(wanted_id) if is_full_id(wanted_id) else wanted_id.strip()
