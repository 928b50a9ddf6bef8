"""Every version of every note, with when each held, and the search of the memory as it was then.

A *version* is a note as one commit of the vault's main line left it: its index record (text,
status, project, tags, ...) and its catalog entry (the owned keys a thought shows). It holds from the
commit that wrote it (``start``, a position on the main line) until the commit that changed or
removed it (``end``; :data:`OPEN` while none has). The memory *at* position ``s`` is every version
with ``start <= s < end``: one per note then in the vault, with its text and status then.

:class:`VersionStore` holds the rows in memory: growing NumPy columns for the filters, one
:class:`~vaultmem.index.bm25.Bm25Corpus` document per distinct searched text, one vector per
distinct embedded text (keyed by its hash, as the embedding cache keys it, so each text is embedded
once however many versions share it). :class:`PastView` is the store read at one position: it
answers the reads a search makes of the index (``get``, ``get_many``, ``ids_with_prefix``,
``search``, ``search_vector``) with the hybrid ranking of the present search: both legs over the
notes then, fused, the context step over their timeline then, the same gate.

The store is derived state: :mod:`vaultmem.sync.versions` builds it from ``git log`` and keeps it
current; nothing here touches git or the vault.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from vaultmem.errors import IndexError_, InvalidInput
from vaultmem.index.bm25 import Analyzer, Bm25Corpus
from vaultmem.index.fusion import (
    FusedScore,
    FusionConfig,
    RelevanceCalibration,
    calibrate_relevance,
    fuse,
    propagate_context,
)
from vaultmem.index.records import (
    NoteRecord,
    SearchFilters,
    SearchHit,
    SearchResult,
    check_search,
    embedding_text,
    is_blank,
    lexical_fields,
    text_hash,
)
from vaultmem.index.timeline import parse_timestamp
from vaultmem.vault.entry import ENTRY_FIELDS, Entry

__all__ = ["OPEN", "PastView", "Version", "VersionStore"]

#: ``end`` of a version no commit has replaced yet.
OPEN = 2**31 - 1
Vector = npt.NDArray[np.float32]
Rows = npt.NDArray[np.intp]
#: NoteRecord's fields in order: a snapshot stores each record as a row of these values.
RECORD_FIELDS = tuple(NoteRecord.__annotations__)


@dataclass(frozen=True)
class Version:
    """One note as one commit left it: what a search returns (``record``) and what a thought shows
    (``entry``, its ``id`` the record's)."""

    record: NoteRecord
    entry: Entry


class _Column:
    """A growing NumPy column (amortised appends; ``view()`` is the filled part)."""

    def __init__(self, dtype: Any, fill: float = 0) -> None:
        self.data: npt.NDArray[Any] = np.full(1024, fill, dtype=dtype)
        self.fill = fill
        self.n = 0

    def append(self, value: float) -> None:
        if self.n == len(self.data):
            grown = np.full(2 * len(self.data), self.fill, dtype=self.data.dtype)
            grown[: self.n] = self.data
            self.data = grown
        self.data[self.n] = value
        self.n += 1

    def view(self) -> npt.NDArray[Any]:
        return self.data[: self.n]


class VersionStore:
    """Every version of the main line, in memory. One lock guards it: the keeper's appends and
    the views' reads (a search holds it for its few milliseconds)."""

    def __init__(self, dim: int) -> None:
        self.lock = threading.RLock()
        self.dim = dim
        self.versions: list[Version] = []
        self._start = _Column(np.int32)
        self._end = _Column(np.int32)
        self._status = _Column(np.int32)
        self._project = _Column(np.int32, -1)
        self._kind = _Column(np.int32)
        self._blank = _Column(np.bool_)  # the body holds no word (records.is_blank): never a hit
        self._doc = _Column(np.int32)
        self._vec = _Column(np.int32)
        self._stamp = _Column(np.float64, math.nan)  # created, for the context step's timeline
        self._codes: dict[str, dict[str, int]] = {"status": {}, "project": {}, "kind": {}}
        self._by_id: dict[str, list[int]] = {}
        self._open: dict[str, int] = {}  # path -> row of the version the newest position holds
        self.corpus = Bm25Corpus(Analyzer())
        self._docs: dict[str, int] = {}
        self._vectors: dict[str, int] = {}
        self._matrix: Vector = np.zeros((1024, dim), dtype=np.float32)
        self._ready = _Column(np.bool_)
        self._unembedded: dict[str, str] = {}  # hash -> text of vectors not known yet
        self._order: Rows | None = None  # rows with a created time, by (project, created, id)

    def __len__(self) -> int:
        return len(self.versions)

    # ----------------------------------------------------------------- writes (the keeper's)

    def close(self, path: str, position: int) -> Version | None:
        """The version at ``path`` stops holding at ``position`` (changed or removed there)."""
        row = self._open.pop(path, None)
        if row is None:
            return None
        self._end.data[row] = position
        return self.versions[row]

    def add(self, version: Version, position: int) -> None:
        """A version written at ``position`` (its path's previous one is closed first)."""
        self.close(version.record.path, position)
        title, body = lexical_fields(version.record)
        key = text_hash(f"{title}\x00{body}")
        doc = self._docs.get(key)
        if doc is None:
            doc = self._docs[key] = self.corpus.add(title, body)
        self._append(version, position, OPEN, doc)

    def _append(self, version: Version, start: int, end: int, doc: int) -> None:
        record = version.record
        row = len(self.versions)
        self.versions.append(version)
        self._start.append(start)
        self._end.append(end)
        self._status.append(self._code("status", record.status))
        self._project.append(-1 if record.project is None else self._code("project", record.project))
        self._kind.append(self._code("kind", record.kind))
        self._blank.append(is_blank(record))
        self._doc.append(doc)
        self._vec.append(self._vector_slot(embedding_text(record)))
        stamp = parse_timestamp(record.created) if record.created else None
        self._stamp.append(math.nan if stamp is None else stamp)
        self._by_id.setdefault(record.id, []).append(row)
        if end == OPEN:
            self._open[record.path] = row
        self._order = None

    # ----------------------------------------------------------------- snapshot

    def snapshot(
        self,
    ) -> tuple[list[list[int]], list[tuple[str, array[int], array[int]]], Iterator[list[Any]]]:
        """The store as plain values, for :meth:`restore` in another process: the documents'
        lengths, each term's postings (term, documents, counts), and each row ``[start, end,
        document, record, entry]``. A copy taken under the lock; the rows are produced one at a time
        from it, so writing a snapshot holds one row's JSON in memory, not the store's."""
        with self.lock:
            versions = list(self.versions)
            columns = (self._start.view().copy(), self._end.view().copy(), self._doc.view().copy())
            lengths, postings = self.corpus.frozen()

        def rows() -> Iterator[list[Any]]:
            for v, start, end, doc in zip(versions, *columns, strict=True):
                record = [getattr(v.record, f) for f in RECORD_FIELDS]
                yield [int(start), int(end), int(doc), record, list(v.entry)]

        return lengths, postings, rows()

    def restore(
        self, lengths: list[list[int]], postings: Iterable[list[Any]], rows: Iterable[list[Any]]
    ) -> None:
        """Hold what a :meth:`snapshot` holds, read back (this store must be new; ValueError,
        TypeError, KeyError or IndexError when the data is no snapshot). Vectors are not in it:
        every text is :meth:`unembedded` until set."""
        self.corpus.restore(lengths, postings)
        documents = len(self.corpus)
        for start, end, doc, record_row, entry in rows:
            if not (isinstance(doc, int) and 0 <= doc < documents and isinstance(start, int)):
                raise ValueError("a snapshot row names no document")
            values = dict(zip(RECORD_FIELDS, record_row, strict=True))
            values["tags"] = tuple(values["tags"])
            record = NoteRecord(**values)
            title, body = lexical_fields(record)
            self._docs.setdefault(text_hash(f"{title}\x00{body}"), doc)
            self._append(Version(record, entry_from_row(entry)), start, int(end), doc)

    def _code(self, column: str, value: str) -> int:
        codes = self._codes[column]
        return codes.setdefault(value, len(codes))

    def _vector_slot(self, text: str) -> int:
        key = text_hash(text)
        slot = self._vectors.get(key)
        if slot is None:
            slot = self._vectors[key] = len(self._vectors)
            if slot == len(self._matrix):
                grown = np.zeros((2 * len(self._matrix), self.dim), dtype=np.float32)
                grown[:slot] = self._matrix
                self._matrix = grown
            self._ready.append(False)
            self._unembedded[key] = text
        return slot

    def unembedded(self) -> dict[str, str]:
        """``{text hash: text}`` of the embedded texts whose vector the store does not have yet."""
        with self.lock:
            return dict(self._unembedded)

    def set_vectors(self, vectors: dict[str, Vector]) -> None:
        """Vectors of texts, by the text's hash (unknown hashes are ignored)."""
        with self.lock:
            for key, vector in vectors.items():
                slot = self._vectors.get(key)
                if slot is not None and len(vector) == self.dim:
                    self._matrix[slot] = vector
                    self._ready.data[slot] = True
                    self._unembedded.pop(key, None)

    # ----------------------------------------------------------------- reads

    def rows_at(self, position: int) -> Rows:
        """The rows holding at ``position``: the memory as it was then."""
        start, end = self._start.view(), self._end.view()
        return np.flatnonzero((start <= position) & (end > position))

    def row_at(self, note_id: str, position: int) -> int | None:
        """The row of ``note_id``'s version at ``position``, if the note existed then."""
        for row in reversed(self._by_id.get(note_id, ())):
            if self._start.data[row] <= position < self._end.data[row]:
                return row
        return None

    def in_scope(self, rows: Rows, filters: SearchFilters) -> Rows:
        """The rows among ``rows`` inside ``filters`` (the semantics of ``filters.to_sql()``) that a
        search may return (a version with a blank body is none)."""
        keep: npt.NDArray[np.bool_] = ~self._blank.data[rows]
        statuses = self._codes["status"]
        if filters.statuses is not None:
            allowed = set(filters.statuses) | ({"deleted"} if filters.include_deleted else set())
            if not allowed:
                raise InvalidInput("statuses must name at least one status, or be None for any")
            keep &= np.isin(self._status.data[rows], [statuses.get(s, -2) for s in allowed])
        elif not filters.include_deleted:
            keep &= self._status.data[rows] != statuses.get("deleted", -2)
        if filters.project is not None:
            keep &= self._project.data[rows] == self._codes["project"].get(filters.project, -2)
        if filters.kind is not None:
            keep &= self._kind.data[rows] == self._codes["kind"].get(filters.kind, -2)
        if filters.tags:
            wanted = filters.tags
            keep &= np.fromiter(
                (wanted.issubset(self.versions[r].record.tags) for r in rows), dtype=np.bool_, count=len(rows)
            )
        return rows[keep]

    def bm25(self, query: str, rows: Rows, n: int) -> list[tuple[int, float]]:
        """The ``n`` best rows among ``rows`` for ``query`` by BM25 over exactly those rows' texts."""
        docs = self._doc.data[rows]
        present = np.bincount(docs, minlength=len(self.corpus)).astype(np.int64)
        scores = self.corpus.scores(query, present)[docs]
        return _top(rows, scores, n, positive=True)

    def nearest(self, vector: Vector, rows: Rows, n: int) -> tuple[list[tuple[int, float]], int]:
        """The ``n`` rows among ``rows`` most similar to ``vector``, and how many rows were left out
        because their text has no vector yet."""
        slots = self._vec.data[rows]
        ready = self._ready.data[slots]
        scores = self._matrix[slots[ready]] @ vector
        return _top(rows[ready], scores, n, positive=False), int(len(rows) - ready.sum())

    def cosines(self, vector: Vector, rows: Iterable[int]) -> dict[int, float]:
        """Cosine of ``vector`` with each of ``rows`` whose text has a vector."""
        out: dict[int, float] = {}
        for row in rows:
            slot = int(self._vec.data[row])
            if self._ready.data[slot]:
                out[row] = float(self._matrix[slot] @ vector)
        return out

    def timeline(self, live: Rows) -> Callable[[int, float], list[int]]:
        """Adjacency among ``live`` (the rows of one position): the previous and the next row of the
        same project by created time, when within the window (the present timeline's rule)."""
        if self._order is None:
            stamps = self._stamp.view()
            dated = np.flatnonzero(~np.isnan(stamps))
            ids = np.array([self.versions[r].record.id for r in dated])
            self._order = dated[np.lexsort((ids, stamps[dated], self._project.data[dated]))]
        order = self._order
        is_live = np.zeros(len(self.versions), dtype=np.bool_)
        is_live[live] = True
        in_time = order[is_live[order]]
        place = np.full(len(self.versions), -1, dtype=np.intp)
        place[in_time] = np.arange(len(in_time))
        project, stamp = self._project.data, self._stamp.data

        def neighbours(row: int, window: float) -> list[int]:
            at = int(place[row])
            if at < 0:
                return []
            out = []
            for other in (at - 1, at + 1):
                if 0 <= other < len(in_time):
                    near = int(in_time[other])
                    if project[near] == project[row] and abs(stamp[near] - stamp[row]) <= window:
                        out.append(near)
            return out

        return neighbours


def _top(rows: Rows, scores: npt.NDArray[np.float32], n: int, *, positive: bool) -> list[tuple[int, float]]:
    if positive:
        keep = scores > 0
        rows, scores = rows[keep], scores[keep]
    if len(scores) > n:
        best = np.argpartition(-scores, n - 1)[:n]
        rows, scores = rows[best], scores[best]
    return [(int(r), float(s)) for r, s in zip(rows, scores, strict=True)]


class PastView:
    """The memory at one position of the main line, read as the index is read."""

    def __init__(
        self,
        store: VersionStore,
        position: int,
        *,
        moment: str,
        embed_query: Callable[[str], Vector],
        stale: Callable[[], bool],
        fusion: FusionConfig,
        calibration: RelevanceCalibration,
    ) -> None:
        self.store = store
        self.position = position
        #: How answers name this moment ("at commit 1a2b3c4d5e6f (2026-03-14T09:30:00Z)").
        self.moment = moment
        self._embed_query = embed_query
        self._stale = stale
        self.fusion = fusion
        self.calibration = calibration
        with store.lock:
            self._live = store.rows_at(position)

    # ----------------------------------------------------------------- lookups

    def version(self, note_id: str) -> Version | None:
        """``note_id`` as it was then (any status), or None when it did not exist then."""
        with self.store.lock:
            row = self.store.row_at(note_id, self.position)
            return None if row is None else self.store.versions[row]

    def get(self, note_id: str) -> NoteRecord | None:
        found = self.version(note_id)
        return None if found is None else found.record

    def get_many(self, ids: Sequence[str]) -> dict[str, NoteRecord]:
        found = {i: self.get(i) for i in ids}
        return {i: r for i, r in found.items() if r is not None}

    def ids_with_prefix(self, hexprefix: str, limit: int = 100) -> list[str]:
        prefix = hexprefix.replace("-", "").lower()
        if not prefix or any(c not in "0123456789abcdef" for c in prefix):
            raise InvalidInput(f"{hexprefix!r} is not a hexadecimal id prefix")
        versions = self.store.versions
        ids = (versions[r].record.id for r in self._live)
        return sorted(i for i in ids if i.replace("-", "").startswith(prefix))[:limit]

    # ----------------------------------------------------------------- searches

    def _vector(self, query: str) -> Vector:
        if self._stale():
            raise IndexError_("the stored vectors belong to another embedding model; run `vaultmem reindex`")
        return self._embed_query(query)

    def search_vector(self, query: str, filters: SearchFilters, k: int) -> SearchResult:
        """The vector leg alone, over the notes as they were."""
        check_search(query, k)
        vector = self._vector(query)
        store = self.store
        with store.lock:
            ranked, missing = store.nearest(vector, store.in_scope(self._live, filters), k)
            versions = store.versions
        hits = [
            SearchHit(
                versions[row].record,
                score,
                ("embedding",),
                similarity=score,
                relevance=calibrate_relevance(score, self.calibration),
                low_confidence=score < self.calibration.vector_floor,
            )
            for row, score in sorted(ranked, key=lambda p: (-p[1], versions[p[0]].record.id))
        ]
        return SearchResult(hits=hits, total=len(hits), degraded=missing > 0, warnings=_missing(missing))

    def search(
        self, query: str, filters: SearchFilters, k: int, *, min_relevance: float | None = None
    ) -> SearchResult:
        """Hybrid search over the notes as they were: BM25 over their texts then and cosines of
        those texts' vectors, fused, lifted by their time-adjacent notes then, gated at
        ``min_relevance`` (the calibration's gate by default), cut to ``k``."""
        check_search(query, k)
        gate = self.calibration.min_relevance if min_relevance is None else min_relevance
        pool = max(self.fusion.pool, k)
        warnings: list[str] = []
        vector: Vector | None = None
        try:
            vector = self._vector(query)
        except IndexError_ as exc:
            warnings.append(f"vector search unavailable: {exc}")
        store = self.store
        with store.lock:
            rows = store.in_scope(self._live, filters)
            bm25 = store.bm25(query, rows, pool)
            near, missing = store.nearest(vector, rows, pool) if vector is not None else ([], 0)
            versions = store.versions
            ids = {row: versions[row].record.id for row, _ in [*bm25, *near]}
            bm25_ranked = [(ids[r], s) for r, s in bm25]
            vector_ranked = [(ids[r], s) for r, s in near]
            fused = fuse(bm25_ranked, vector_ranked, self.fusion)
            if self.fusion.context_weight > 0 and fused:
                fused = self._with_context(fused, bm25_ranked, vector_ranked, rows, vector, ids)
            records = {i: versions[r].record for r, i in ids.items()}
        warnings.extend(_missing(missing))
        hits: list[SearchHit] = []
        filtered_out = 0
        for f in fused:
            relevance = None if f.similarity is None else calibrate_relevance(f.similarity, self.calibration)
            anchored = f.bm25 is not None or f.context > 0
            if not anchored and relevance is not None and relevance < gate:
                filtered_out += 1
                continue
            sources = tuple(s for s, v in (("bm25", f.bm25), ("embedding", f.similarity)) if v is not None)
            low = not anchored and f.similarity is not None and f.similarity < self.calibration.vector_floor
            hits.append(
                SearchHit(
                    records[f.id],
                    f.score,
                    (*sources, "context") if f.context > 0 else sources,
                    bm25_score=f.bm25,
                    similarity=f.similarity,
                    relevance=relevance,
                    low_confidence=low,
                )
            )
        return SearchResult(
            hits=hits[:k],
            total=len(fused),
            filtered_out=filtered_out,
            degraded=vector is None or missing > 0,
            warnings=tuple(warnings),
        )

    def _with_context(
        self,
        fused: list[FusedScore],
        bm25_ranked: list[tuple[str, float]],
        vector_ranked: list[tuple[str, float]],
        rows: Rows,
        vector: Vector | None,
        ids: dict[int, str],
    ) -> list[FusedScore]:
        """The present search's context step over the timeline of then: the time-adjacent notes of
        the top hits join with their cosines, then every hit inherits from its neighbours."""
        store, window = self.store, self.fusion.context_window_s
        neighbours = store.timeline(self._live)
        row_of = {i: r for r, i in ids.items()}
        candidates = set(row_of)
        scoped = np.zeros(len(store), dtype=np.bool_)
        scoped[rows] = True
        wanted = {
            n
            for f in fused[: self.fusion.context_expand]
            for n in neighbours(row_of[f.id], window)
            if scoped[n] and store.versions[n].record.id not in candidates
        }
        if wanted and vector is not None:
            extra = store.cosines(vector, sorted(wanted))
            for row in extra:
                ids[row] = store.versions[row].record.id
                row_of[ids[row]] = row
            similarities = {ids[r]: s for r, s in extra.items()}
            fused = fuse(bm25_ranked, vector_ranked, self.fusion, extra_similarities=similarities)
        adjacency = {
            f.id: [(1, store.versions[n].record.id) for n in neighbours(row_of[f.id], window)] for f in fused
        }
        return propagate_context(fused, adjacency, self.fusion.context_weight)


def _missing(count: int) -> tuple[str, ...]:
    if count <= 0:
        return ()
    return (
        f"{count} past version(s) in the answer's scope have no vector yet (their texts are being "
        "embedded in the background): the vector leg left them out",
    )


_PAIRS = [ENTRY_FIELDS.index(n) for n in ("links", "url_links", "link_ids")]
_FLAT = [ENTRY_FIELDS.index(n) for n in ("tags", "text_links", "body_tags", "aliases")]


def entry_from_row(row: list[Any]) -> Entry:
    """The catalog entry a snapshot row holds as ``list(entry)`` (ValueError when it holds none):
    its lists become the tuples the entry's sequence fields hold."""
    if not isinstance(row, list) or len(row) != len(ENTRY_FIELDS):  # a short row would take defaults
        raise ValueError("not a catalog entry row")
    row = list(row)
    for i in _FLAT:
        row[i] = tuple(row[i]) if row[i] else ()
    for i in _PAIRS:
        row[i] = tuple(tuple(item) for item in row[i]) if row[i] else ()
    return Entry(*row)
