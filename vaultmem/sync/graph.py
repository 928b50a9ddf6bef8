"""The edge graph in memory: every link of the vault, derived from the notes.

Two kinds of edges: the typed links of frontmatter (``supports: ["[[x]]"]``, written by agents or
a person) and the read-only ``links_to`` edges of the links in a note's text (``[[x]]`` in the
body, a person's own property): the graph a person builds in Obsidian. The second kind comes from
the catalog (which parsed the text once, and caches it), so building the graph reads only the
notes that carry typed links.

Built at start (the first reconcile) and kept current by the write path's listener and the
watcher, so it is current when a write returns; the graph tools read it. A note that appears,
goes or changes its ``aliases:`` re-resolves the links that name it (a person clicks an
unresolved link and Obsidian creates the note: the edge appears). It is derived state held only
here: a restart derives it again (``docs/architecture.md`` says why there is no LanceDB edges table).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from vaultmem.errors import MalformedNote
from vaultmem.notes.ids import derived_id
from vaultmem.notes.links import TEXT_LINK, Edge, edges_of, name_key, text_edges, text_refs, typed_links
from vaultmem.notes.model import Note
from vaultmem.vault.catalog import Catalog
from vaultmem.vault.entry import Entry
from vaultmem.vault.layout import VaultLayout
from vaultmem.vault.note_files import read_note


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
    """Every edge of the vault, by source, by target and by id. Thread-safe.

    The typed edges are built by :meth:`rebuild` (the first reconcile, on the start's path). The
    ``links_to`` edges of the notes' text are built on the first read that needs them, or on a
    thread as soon as a daemon starts watching (:meth:`warm_in_background`): a vault of a
    person's notes has several per note, and deriving tens of thousands of them before the first
    answer would slow every start (``docs/benchmarks.md``). A search's standing annotations read
    only typed edges and never wait for them.
    """

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._out: dict[str, list[Edge]] = {}  # source id -> its edges
        self._in: dict[str, list[Edge]] = {}  # target id -> edges pointing at it
        self._by_id: dict[str, Edge] = {}  # edge id -> edge
        #: Lower-cased last name of every link target -> paths of the notes whose links name it.
        self._mentions: dict[str, set[str]] = {}
        self._named: dict[str, tuple[str, tuple[str, ...]]] = {}  # note id -> (path, its names)
        #: Id recorded for a link (``link_targets``) -> paths of the notes whose links recorded it.
        self._recorded: dict[str, set[str]] = {}
        self.primed = False  # every linked note's typed edges computed at least once
        self._text_ready = True  # False while the catalog's text links wait to become edges
        self._background = False  # build them on a thread after each rebuild (a daemon)
        self._lock = threading.RLock()
        self._memo: dict[str, str] | None = None  # path -> index id, while a build runs

    # -- reads -------------------------------------------------------------------------------------
    def find(self, edge_id: str) -> Edge | None:
        """The edge with this id (from memory)."""
        self._text_edges()
        return self._by_id.get(edge_id)

    def outgoing(self, note_id: str) -> list[Edge]:
        self._text_edges()
        return list(self._out.get(note_id, []))

    def incoming(self, note_id: str) -> list[Edge]:
        self._text_edges()
        return list(self._in.get(note_id, []))

    def edges_of(self, note_id: str) -> list[Edge]:
        """Every edge that starts or ends at ``note_id`` (from memory; no index query)."""
        self._text_edges()
        return [*self._out.get(note_id, []), *self._in.get(note_id, [])]

    def standing(self, note_id: str, status: str, is_live: Callable[[str], bool]) -> Standing:
        """Whether a note is current, superseded or contradicted, and by which live notes.

        Superseded: its status says so, or a live note ``replaces`` it. Contradicted: a live note
        and it are joined by a ``contradicts`` edge (either direction). Typed edges only: this
        never waits for the edges of the notes' text.
        """
        incoming, outgoing = self._in.get(note_id, []), self._out.get(note_id, [])
        superseded_by = sorted(
            {e.source_id for e in incoming if e.type == "replaces" and is_live(e.source_id)}
        )
        contradicted_by = sorted(
            {
                e.target_id if e.source_id == note_id else e.source_id
                for e in [*outgoing, *incoming]
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

    # -- building ----------------------------------------------------------------------------------
    def rebuild(self, layout: VaultLayout) -> int:
        """Recompute every note's typed edges (after a reconcile changed what links resolve to)
        and mark the edges of the notes' text to be derived again; return how many notes have
        links. Only the notes with typed links are read from the vault, and a note without links
        or aliases costs nothing here (most of a person's vault)."""
        with self._lock:
            for table in (self._out, self._in, self._by_id, self._mentions, self._named, self._recorded):
                table.clear()
            memo: dict[str, str] = {}
            self._memo = memo
            linked = 0
            texts = False
            self._text_ready = True  # typed edges only, now: the text build follows
            try:
                for entry in self.catalog.entries():
                    if not (entry.links or entry.text_links or entry.aliases):
                        continue
                    source_id = memo.get(entry.path)
                    if source_id is None:
                        source_id = memo[entry.path] = index_id(entry, self.catalog)
                    if entry.aliases:  # a note's file name is known from its path; its aliases only here
                        self._named[source_id] = (entry.path, _names(entry.path, entry.aliases))
                    texts = texts or bool(entry.text_links)
                    if entry.links:
                        self._compute(source_id, entry.path, entry, None)
                    linked += bool(entry.links or entry.text_links)
            finally:
                self._memo = None
            self._text_ready = not texts
            self.primed = True
        if self._background and not self._text_ready:
            self._start_text_build()
        return linked

    def warm_in_background(self) -> None:
        """Derive the edges of the notes' text on a thread now, and after every rebuild (a
        daemon, whose first graph read should not wait for them)."""
        self._background = True
        if not self._text_ready:
            self._start_text_build()

    def _start_text_build(self) -> None:
        threading.Thread(target=self._text_edges, name="vaultmem-text-links", daemon=True).start()

    def _text_edges(self) -> None:
        """Add the ``links_to`` edge of every link in every note's text (once after a rebuild)."""
        if self._text_ready:
            return
        with self._lock:
            if self._text_ready:
                return
            memo: dict[str, str] = {}
            self._memo = memo
            try:
                for entry in self.catalog.entries():
                    if not entry.text_links:
                        continue
                    source_id = memo.get(entry.path)
                    if source_id is None:
                        source_id = memo[entry.path] = index_id(entry, self.catalog)
                    for target in entry.text_links:
                        self._mentions.setdefault(_last_name(target), set()).add(entry.path)
                    edges, _dangling = text_edges(
                        source_id, entry.text_links, self._resolver(entry.path), _stamp(entry, None)
                    )
                    self._add(source_id, edges)
            finally:
                self._memo = None
            self._text_ready = True

    def _resolver(self, source: str) -> Callable[[str, str | None], str | None]:
        """Resolve the links of the note at ``source``: (name, recorded id) -> the target's id."""
        memo = self._memo

        def resolve(target: str, recorded: str | None) -> str | None:
            if recorded:  # when another file comes to hold that id, this link follows it
                self._recorded.setdefault(recorded, set()).add(source)
            entry = self.catalog.resolve_link(target, source=source, recorded=recorded)
            if entry is None:
                return None
            if memo is None:
                return index_id(entry, self.catalog)  # a link to a conflict copy points at the copy's row
            found = memo.get(entry.path)
            if found is None:
                found = memo[entry.path] = index_id(entry, self.catalog)
            return found

        return resolve

    # -- keeping up --------------------------------------------------------------------------------
    def update(self, note: Note) -> None:
        """Replace the note's outgoing edges (a no-op for a note that has and had none)."""
        self.update_many([note])

    def update_many(self, notes: list[Note]) -> None:
        """Replace the outgoing edges of each note; re-resolve the links naming a note that is new
        here or changed its ``aliases:``."""
        with self._lock:
            renamed: set[str] = set()
            moved: set[str] = set()  # ids new at their path: the links that recorded them follow
            for note in notes:
                source_id = index_id(note, self.catalog)  # a conflict copy's links are its own
                entry = self.catalog.by_path(note.path)
                if entry is not None and entry.content_hash != note.content_hash:
                    entry = None  # the catalog has moved on (or not yet): read the note itself
                if self._named.get(source_id, (None,))[0] != note.path:
                    moved.add(source_id)
                renamed |= self._renamed(source_id, note.path, entry.aliases if entry else ())
                self._compute(source_id, note.path, entry, note)
            self._refresh(renamed, moved)

    def forget(self, source_id: str, path: str | None = None) -> None:
        """The note ``source_id`` (at ``path``) is gone: drop its edges and re-resolve the links
        that named it."""
        with self._lock:
            self._set(source_id, [])
            named = self._named.pop(source_id, None)
            names = set(named[1]) if named is not None else set()
            if path is not None:
                names.add(_names(path, ())[0])
            self._refresh(names, {source_id})

    def path_gone(self, path: str) -> None:
        """The file at ``path`` is gone and no row went with it (a note renamed by hand whose new
        name was seen first: its id and row are at the new name already): the links that named the
        old file name resolve again (to nothing, or to another note of that name)."""
        with self._lock:
            self._refresh({_names(path, ())[0]})

    def _compute(self, source_id: str, path: str, entry: Entry | None, note: Note | None) -> None:
        """Recompute one note's edges: typed ones from ``note`` (read from the vault when it has
        typed links and is not given), those of its text from ``entry`` (or ``note``) unless the
        text build is still to come (it adds them)."""
        meta = note.text.meta if note is not None and note.text is not None else None
        links = typed_links(meta) if meta is not None else (entry.links if entry is not None else ())
        if links and meta is None:
            try:
                note = read_note(self.catalog.layout, path)
                meta = note.text.meta if note.text is not None else {}
            except MalformedNote:
                links, meta = (), None
        targets: tuple[str, ...] = ()
        if self._text_ready:
            if entry is not None:
                targets = entry.text_links
            elif note:
                targets = text_refs(note.body, meta, persons=note.persons).links
        for target in (*(name for _t, name in links), *targets):
            self._mentions.setdefault(_last_name(target), set()).add(path)
        if not links and not targets and source_id not in self._out:
            return
        resolve = self._resolver(path)
        created = _stamp(entry, note)
        edges: list[Edge] = []
        if links and meta is not None:
            edges, _dangling = edges_of(source_id, meta, resolve, created)
        if targets:
            edges.extend(text_edges(source_id, targets, resolve, created)[0])
        self._set(source_id, edges)

    def _renamed(self, note_id: str, path: str, aliases: tuple[str, ...]) -> set[str]:
        """The names whose links resolve differently now that ``note_id`` is at ``path`` with these
        ``aliases``: all of them for a note not seen here before (new, or not written since the
        rebuild), none for one whose names stayed."""
        names = _names(path, aliases)
        before = self._named.get(note_id)
        self._named[note_id] = (path, names)
        if before is None:
            return set(names)
        if before[0] == path and set(before[1]) == set(names):
            return set()
        return {*names, *before[1]}

    def _refresh(self, names: Iterable[str], ids: Iterable[str] = ()) -> None:
        """Recompute the edges of every note whose links name one of ``names`` or recorded one of
        ``ids``."""
        paths = {p for name in names for p in self._mentions.get(name, ())}
        paths.update(p for note_id in ids for p in self._recorded.get(note_id, ()))
        for path in sorted(paths):
            entry = self.catalog.by_path(path)
            if entry is None:
                self._mentions_gone(path)
                continue
            self._compute(index_id(entry, self.catalog), path, entry, None)

    def _mentions_gone(self, path: str) -> None:
        for name in [n for n, paths in self._mentions.items() if path in paths]:
            self._mentions[name].discard(path)
            if not self._mentions[name]:
                del self._mentions[name]

    def _set(self, source_id: str, edges: list[Edge]) -> None:
        """Replace the edges of ``source_id``. Readers take no lock (a search's standing must not
        wait for a build), so every table entry is swapped in one assignment, new edges in before
        old ones out: a read meanwhile sees a note's edges before or after, never none."""
        old = self._out.get(source_id, [])
        for edge in edges:
            self._by_id[edge.id] = edge
        kept = {edge.id for edge in edges}
        for edge in old:
            if edge.id not in kept:
                self._by_id.pop(edge.id, None)
        if edges:
            self._out[source_id] = list(edges)
        else:
            self._out.pop(source_id, None)
        for target in {e.target_id for e in (*old, *edges)}:
            incoming = [e for e in self._in.get(target, ()) if e.source_id != source_id]
            incoming.extend(e for e in edges if e.target_id == target)
            if incoming:
                self._in[target] = incoming
            else:
                self._in.pop(target, None)

    def _add(self, source_id: str, edges: list[Edge]) -> None:
        if not edges:
            return
        self._out.setdefault(source_id, []).extend(edges)
        for edge in edges:
            self._in.setdefault(edge.target_id, []).append(edge)
            self._by_id[edge.id] = edge


def _names(path: str, aliases: tuple[str, ...]) -> tuple[str, ...]:
    """The names (:func:`name_key`) a link may call the note at ``path`` by: its file name, its aliases."""
    return (name_key(path.rsplit("/", 1)[-1].removesuffix(".md")), *(name_key(a) for a in aliases))


def _last_name(target: str) -> str:
    """The file name a link target ends with (:func:`name_key`): what a new note must be called to take it."""
    return name_key(target.rsplit("/", 1)[-1].strip())


def _stamp(entry: Entry | None, note: Note | None) -> str:
    """When a note's links were last written, as far as the vault tells: its ``updated`` or
    ``created``, else (a person's note without frontmatter) its file's time."""
    for source in (note, entry):
        if source is not None and (source.updated or source.created):
            return str(source.updated or source.created)
    if entry is not None:
        when = dt.datetime.fromtimestamp(entry.mtime_ns / 1e9, tz=dt.UTC)
        return when.isoformat(timespec="seconds").replace("+00:00", "Z")
    return ""


__all__ = ["TEXT_LINK", "EdgeGraph", "Standing", "index_id"]
