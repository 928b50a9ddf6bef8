"""The notes table held in memory: records, a vector matrix and the columns searches filter on.

LanceDB keeps the notes durable and answers the BM25 leg; everything else a search needs (the
vector leg, the context step's neighbour cosines, the records of the hits, the filters) is
answered from here, which turns ~10 ms of LanceDB round trips per search into well under 1 ms of
NumPy at 10k notes. The mirror is loaded from the notes table when the index opens and changed
only by the index's writer, after the same change reached LanceDB, so the two never disagree in
what they hold (see ``docs/architecture.md``, "The index in memory").

Rows are kept dense: a deleted note's row is filled with the last row, so a scan is a plain
matrix-vector product over ``vectors[:n]``. Vectors are unit length, so a cosine is a dot product.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from vaultmem.errors import InvalidInput
from vaultmem.index.bm25 import Analyzer
from vaultmem.index.chunk_matrix import ChunkMatrix, Spans
from vaultmem.index.lexical import LexicalIndex, state_key
from vaultmem.index.records import NoteRecord, SearchFilters, is_blank
from vaultmem.vault.multimap import Multimap

__all__ = ["NoteMirror"]

log = logging.getLogger(__name__)

Vector = npt.NDArray[np.float32]
_NO_PROJECT = -1
_UNKNOWN = -2  # a code no row has: an unknown filter value matches nothing


class _Codes:
    """A growing dictionary of small integer codes for the values of one column."""

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}

    def code(self, value: str) -> int:
        found = self._codes.get(value)
        if found is None:
            found = self._codes[value] = len(self._codes)
        return found

    def lookup(self, value: str) -> int:
        return self._codes.get(value, _UNKNOWN)

    def column(self, values: list[str | None], size: int) -> npt.NDArray[np.int32]:
        """Codes for ``values`` (None: ``_NO_PROJECT``), new values numbered in order of first
        appearance as :meth:`code` would, in an array of ``size`` (zeros past the values): the
        mapping runs in C, 3 columns of 100k notes in ~15 ms against ~0.1 s a value at a time."""
        for value in dict.fromkeys(values):
            if value is not None and value not in self._codes:
                self._codes[value] = len(self._codes)
        out = np.zeros(size, dtype=np.int32)
        codes: dict[str | None, int] = dict(self._codes.items())
        codes[None] = _NO_PROJECT
        out[: len(values)] = np.fromiter(map(codes.__getitem__, values), dtype=np.int32, count=len(values))
        return out


def _shared(record: NoteRecord) -> NoteRecord:
    """The same record with its repeated short strings (status, kind, project) interned, shared
    with every other row and the catalog's entries; an ``updated`` equal to ``created`` shares it."""
    status, kind = sys.intern(record.status), sys.intern(record.kind)
    project = None if record.project is None else sys.intern(record.project)
    updated = record.created if record.updated == record.created else record.updated
    same = (status, kind, project, updated)
    if all(
        a is b
        for a, b in zip(same, (record.status, record.kind, record.project, record.updated), strict=True)
    ):
        return record
    return record.but(kind=kind, status=status, project=project, updated=updated)


class NoteMirror:
    """Every indexed note's record and vector, with vectorised filters and nearest-neighbour scans.

    Thread-safe: the index's writer mutates it while searches read it; each method holds a lock
    for the length of one scan (about a millisecond at 100k notes).
    """

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self._lock = threading.RLock()
        self._status_codes = _Codes()
        self._project_codes = _Codes()
        self._kind_codes = _Codes()
        # Kept across reloads: its memo of stems is the vault's vocabulary.
        self._analyzer = Analyzer()
        self._reset(dim, capacity)

    def _reset(self, dim: int, capacity: int) -> None:
        self.dim = dim
        self._n = 0
        self._ids: list[str] = []
        self._records: list[NoteRecord] = []
        #: Per row: the note whose body is the row's context field (lexical.context_text), or None.
        self._contexts: list[NoteRecord | None] = []
        self._row: dict[str, int] = {}
        self._by_path = Multimap()
        capacity = max(capacity, 16)
        self._vectors: Vector = np.zeros((capacity, dim), dtype=np.float32)
        self._status = np.zeros(capacity, dtype=np.int32)
        self._project = np.zeros(capacity, dtype=np.int32)
        self._kind = np.zeros(capacity, dtype=np.int32)
        #: Ids of the notes whose body holds no word (records.is_blank): never a search's hit.
        self._blank: set[str] = set()
        self._chunks = ChunkMatrix(dim)
        self._lexical = LexicalIndex(self._analyzer)

    # ----------------------------------------------------------------- writes

    def put(
        self,
        records: Sequence[NoteRecord],
        vectors: Vector,
        chunks: Sequence[tuple[Spans, Vector]] | None = None,
        contexts: Sequence[NoteRecord | None] | None = None,
    ) -> None:
        """Insert or replace notes by id (``vectors[i]`` belongs to ``records[i]``; ``chunks[i]``
        are its chunks beyond the first, as body spans and vectors: :mod:`~vaultmem.index.chunk_matrix`;
        ``contexts[i]`` the note whose body is its context field, :mod:`~vaultmem.index.lexical`)."""
        if len(records) != len(vectors) or (chunks is not None and len(chunks) != len(records)):
            raise ValueError("put needs one vector (and one chunk list) per record")
        if contexts is not None and len(contexts) != len(records):
            raise ValueError("put needs one context (or None) per record")
        with self._lock:
            self._reserve(self._n + len(records))
            for i, (record, vector) in enumerate(zip(records, vectors, strict=True)):
                record = _shared(record)
                row = self._row.get(record.id)
                if row is None:
                    row = self._n
                    self._n += 1
                    self._ids.append(record.id)
                    self._records.append(record)
                    self._contexts.append(None)
                    self._row[record.id] = row
                else:
                    self._unlink_path(self._records[row])
                    self._records[row] = record
                context = None if contexts is None else contexts[i]
                self._contexts[row] = context
                self._by_path.add(record.path, record.id)
                self._vectors[row] = vector
                self._status[row] = self._status_codes.code(record.status)
                self._project[row] = (
                    _NO_PROJECT if record.project is None else self._project_codes.code(record.project)
                )
                self._kind[row] = self._kind_codes.code(record.kind)
                if is_blank(record):
                    self._blank.add(record.id)
                else:
                    self._blank.discard(record.id)
                self._lexical.add(record, row, context)
                if chunks is not None:
                    self._chunks.set(record.id, row, *chunks[i])
                else:
                    self._chunks.drop(record.id)

    def remove(self, ids: Iterable[str]) -> None:
        """Forget notes (unknown ids are ignored)."""
        with self._lock:
            for note_id in ids:
                row = self._row.pop(note_id, None)
                if row is None:
                    continue
                self._unlink_path(self._records[row])
                self._blank.discard(note_id)
                self._chunks.drop(note_id)
                self._lexical.remove(row)
                last = self._n - 1
                if row != last:  # fill the hole with the last row, so rows stay dense
                    moved = self._ids[last]
                    self._ids[row] = moved
                    self._records[row] = self._records[last]
                    self._contexts[row] = self._contexts[last]
                    self._row[moved] = row
                    self._chunks.moved(moved, row)
                    self._lexical.move(last, row)
                    for column in (self._vectors, self._status, self._project, self._kind):
                        column[row] = column[last]
                self._ids.pop()
                self._records.pop()
                self._contexts.pop()
                self._n = last

    def replace(
        self,
        records: Sequence[NoteRecord],
        vectors: Vector,
        chunks: Sequence[tuple[Spans, Vector]] | None = None,
        lexical_state: object = None,
        contexts: Sequence[NoteRecord | None] | None = None,
    ) -> None:
        """Hold exactly these notes (a reload of the index), swapped in at once: a search sees the
        old set or the new one, never half of each. The vector width may change.

        A C-ordered, writeable float32 ``vectors`` with one row per record becomes the mirror's own
        matrix (no copy: at 100k notes a copy is 150 MB more while the index opens); the caller
        gives it up. Built column by column, outside the lock, and swapped in under it. The records
        are kept as given: the table's reader (``_schema.records_from_table``) already shares their
        repeated strings, which :meth:`put` does for a write. ``lexical_state`` is what
        :meth:`lexical_state` gave an earlier process: the lexical postings are adopted from it
        where the notes are the same, and built for the others."""
        if len(records) != len(vectors) or (chunks is not None and len(chunks) != len(records)):
            raise ValueError("replace needs one vector (and one chunk list) per record")
        around: list[NoteRecord | None] = [None] * len(records) if contexts is None else list(contexts)
        if len(around) != len(records):
            raise ValueError("replace needs one context (or None) per record")
        dim = vectors.shape[1] if vectors.ndim == 2 else self.dim
        adoptable = vectors.ndim == 2 and vectors.dtype == np.float32 and vectors.flags.c_contiguous
        if not (adoptable and vectors.flags.writeable and len(vectors)):
            matrix = np.zeros((max(len(records), 16), dim), dtype=np.float32)
            matrix[: len(records)] = vectors
            vectors = matrix
        shared = list(records)
        ids = [r.id for r in shared]
        row = {note_id: i for i, note_id in enumerate(ids)}
        if len(row) != len(ids):
            raise ValueError("replace needs one record per id")
        by_path = Multimap()
        for r in shared:
            by_path.add(r.path, r.id)
        status_codes, project_codes, kind_codes = _Codes(), _Codes(), _Codes()
        blank = {r.id for r in shared if is_blank(r)}
        status = status_codes.column([r.status for r in shared], len(vectors))
        project = project_codes.column([r.project for r in shared], len(vectors))
        kind = kind_codes.column([r.kind for r in shared], len(vectors))
        chunk_matrix = ChunkMatrix(dim)
        for i, (r, (spans, chunk_vectors)) in enumerate(zip(shared, chunks or (), strict=False)):
            if len(chunk_vectors):  # a fresh matrix: nothing to drop for a note of one chunk
                chunk_matrix.set(r.id, i, spans, chunk_vectors)
        lexical = None
        if lexical_state is not None:
            try:
                lexical = LexicalIndex.adopt(lexical_state, shared, self._analyzer, around)
            except (ValueError, TypeError) as exc:  # a state of another layout, or damaged
                log.info("building the lexical postings afresh: %s", exc)
        if lexical is None:
            lexical = LexicalIndex(self._analyzer)
            for i, r in enumerate(shared):
                lexical.add(r, i, around[i])
        with self._lock:
            self.dim, self._n = dim, len(shared)
            self._ids, self._records, self._row, self._by_path = ids, shared, row, by_path
            self._contexts = around
            self._vectors, self._status, self._project, self._kind = vectors, status, project, kind
            self._status_codes, self._project_codes, self._kind_codes = (
                status_codes,
                project_codes,
                kind_codes,
            )
            self._chunks = chunk_matrix
            self._lexical = lexical
            self._blank = blank

    def lexical_state(self) -> tuple[object, ...] | None:
        """The lexical postings as :meth:`replace` adopts them, or None when they did not change
        since they were built or adopted (nothing worth writing again)."""
        with self._lock:
            if not self._lexical.changed:
                return None
            keys = [state_key(r, c) for r, c in zip(self._records, self._contexts, strict=True)]
            state = self._lexical.state(keys)
            self._lexical.changed = False
            return state

    def _reserve(self, rows: int) -> None:
        capacity = len(self._vectors)
        if rows <= capacity:
            return
        # Grown by an eighth (at least 256 rows), not doubled: the matrix is most of the mirror
        # (150 MB at 100k notes), and the first write after a start would double it.
        capacity = max(rows, capacity + capacity // 8 + 256)
        vectors = np.zeros((capacity, self.dim), dtype=np.float32)
        vectors[: self._n] = self._vectors[: self._n]
        self._vectors = vectors
        for name in ("_status", "_project", "_kind"):
            old = getattr(self, name)
            grown = np.zeros(capacity, dtype=np.int32)
            grown[: self._n] = old[: self._n]
            setattr(self, name, grown)

    def _unlink_path(self, record: NoteRecord) -> None:
        self._by_path.discard(record.path, record.id)

    # ----------------------------------------------------------------- lookups

    def __len__(self) -> int:
        return self._n

    @property
    def capacity(self) -> int:
        """Rows the vector matrix has room for (the matrix is most of the mirror's memory)."""
        return len(self._vectors)

    def __contains__(self, note_id: object) -> bool:
        return note_id in self._row

    def misplaced(self, holders: Mapping[str, str]) -> dict[str, str | None]:
        """Of ``holders`` (``{id: path}``), the ids whose row is missing or at another path:
        ``{id: the path of its row, or None}``."""
        out: dict[str, str | None] = {}
        with self._lock:
            rows, records = self._row, self._records
            for note_id, path in holders.items():
                row = rows.get(note_id)
                if row is None:
                    out[note_id] = None
                elif records[row].path != path:
                    out[note_id] = records[row].path
        return out

    def get(self, note_id: str) -> NoteRecord | None:
        """The record of ``note_id``, or None."""
        with self._lock:
            row = self._row.get(note_id)
            return None if row is None else self._records[row]

    def get_many(self, ids: Iterable[str]) -> dict[str, NoteRecord]:
        """The records among ``ids`` that exist, by id."""
        with self._lock:
            return {i: self._records[self._row[i]] for i in ids if i in self._row}

    def vector(self, note_id: str) -> Vector | None:
        """A copy of the stored vector of ``note_id``, or None."""
        with self._lock:
            row = self._row.get(note_id)
            return None if row is None else self._vectors[row].copy()

    def chunks(self, note_id: str) -> tuple[Spans, Vector]:
        """The note's chunks beyond the first (body spans and vectors; empty for a short note)."""
        with self._lock:
            return self._chunks.of(note_id)

    def best_spans(self, ids: Iterable[str], query: Vector) -> dict[str, tuple[int, int]]:
        """For each long note among ``ids``, the body span of its chunk most similar to ``query``
        when that is not its first window (what a snippet should show)."""
        query = np.asarray(query, dtype=np.float32)
        with self._lock:
            out: dict[str, tuple[int, int]] = {}
            for i in ids:
                row = self._row.get(i)
                if row is not None:
                    span = self._chunks.best_span(i, query, float(self._vectors[row] @ query))
                    if span is not None:
                        out[i] = span
            return out

    def vectors_of(self, ids: Iterable[str]) -> tuple[list[str], Vector]:
        """The stored vectors of the indexed notes among ``ids``: (their ids in the order given, a
        copy of their rows as one matrix). Unknown ids are skipped. For whole-vault scans such as
        clustering, which need many vectors at once rather than one nearest-neighbour query."""
        with self._lock:
            found = [i for i in dict.fromkeys(ids) if i in self._row]
            rows = np.fromiter((self._row[i] for i in found), dtype=np.intp, count=len(found))
            return found, self._vectors[rows]

    def export(self) -> tuple[list[NoteRecord], Vector, tuple[list[tuple[int, int]], Spans, Vector]]:
        """What the index's snapshot holds (:mod:`~vaultmem.index.snapshot`): the records in row
        order, their vectors (a view of the matrix: valid until the next write) and the long notes'
        chunks (:meth:`ChunkMatrix.export`)."""
        with self._lock:
            return list(self._records), self._vectors[: self._n], self._chunks.export(self._row)

    def records(self) -> list[NoteRecord]:
        """Every record (a snapshot, in row order)."""
        with self._lock:
            return list(self._records)

    def __iter__(self) -> Iterator[NoteRecord]:
        return iter(self.records())

    def ids_for_paths(self, paths: Iterable[str]) -> list[str]:
        """Ids of the notes stored under any of ``paths``."""
        with self._lock:
            return sorted({i for p in paths for i in self._by_path.get(p)})

    def path_hashes(self, paths: Iterable[str] | None = None) -> dict[str, str]:
        """``{path: content_hash}`` of every note, or of those under ``paths``."""
        with self._lock:
            if paths is None:
                return {r.path: r.content_hash for r in self._records}
            return {
                self._records[self._row[i]].path: self._records[self._row[i]].content_hash
                for p in paths
                for i in self._by_path.get(p)
            }

    # ----------------------------------------------------------------- filters and scans

    def _mask_locked(self, filters: SearchFilters) -> npt.NDArray[np.bool_] | None:
        """Rows inside ``filters`` (None: every row), with the semantics of ``filters.to_sql()``."""
        n = self._n
        mask: npt.NDArray[np.bool_] | None = None

        def narrow(more: npt.NDArray[np.bool_]) -> None:
            nonlocal mask
            mask = more if mask is None else mask & more

        if filters.statuses is not None:
            allowed = set(filters.statuses) | ({"deleted"} if filters.include_deleted else set())
            if not allowed:
                raise InvalidInput("statuses must name at least one status, or be None for any")
            codes = [self._status_codes.lookup(s) for s in allowed]
            narrow(np.isin(self._status[:n], codes))
        elif not filters.include_deleted:
            narrow(self._status[:n] != self._status_codes.lookup("deleted"))
        if filters.project is not None:
            narrow(self._project[:n] == self._project_codes.lookup(filters.project))
        if filters.kind is not None:
            narrow(self._kind[:n] == self._kind_codes.lookup(filters.kind))
        if filters.tags:
            wanted = filters.tags
            narrow(np.fromiter((wanted.issubset(r.tags) for r in self._records), dtype=np.bool_, count=n))
        return mask

    def _searchable_locked(self, filters: SearchFilters) -> npt.NDArray[np.bool_] | None:
        """Rows inside ``filters`` that a search may return: a note with a blank body is none."""
        mask = self._mask_locked(filters)
        if not self._blank:
            return mask
        mask = np.ones(self._n, dtype=np.bool_) if mask is None else mask.copy()
        mask[[self._row[i] for i in self._blank]] = False
        return mask

    def in_scope(self, ids: Iterable[str], filters: SearchFilters) -> set[str]:
        """The ids among ``ids`` that exist and are inside ``filters``."""
        with self._lock:
            mask = self._mask_locked(filters)
            rows = [(i, self._row[i]) for i in ids if i in self._row]
            return {i for i, row in rows if mask is None or mask[row]}

    def lexical(self, query: str, filters: SearchFilters, n: int) -> list[tuple[str, float]]:
        """The ``n`` notes inside ``filters`` with the best BM25F scores for ``query`` (the lexical
        leg, :mod:`~vaultmem.index.lexical`): ``(id, score)``, best first, ties by id."""
        with self._lock:
            rows, scores = self._lexical.scores(query)
            mask = self._searchable_locked(filters)
            if mask is not None:
                inside = mask[rows]
                rows, scores = rows[inside], scores[inside]
            if len(scores) > n:  # the n best, and the notes tied with the last (ties go by id)
                cut = np.partition(scores, len(scores) - n)[len(scores) - n]
                above, tied = np.flatnonzero(scores > cut), np.flatnonzero(scores == cut)
                if len(tied) > 4 * n:  # a common word in notes alike: ids sorted for so many cost ms
                    tied = tied[np.argsort(rows[tied], kind="stable")[: n - len(above)]]
                top = np.concatenate([above, tied])
            else:
                top = np.arange(len(scores))
            found = [(self._ids[int(rows[t])], float(scores[t])) for t in top]
        found.sort(key=lambda pair: (-pair[1], pair[0]))
        return found[:n]

    def nearest(self, query: Vector, filters: SearchFilters, n: int) -> list[tuple[str, float]]:
        """The ``n`` notes inside ``filters`` most similar to ``query``: ``(id, cosine)``, best first.

        Exact (a full scan, as LanceDB's flat search without a vector index); ties by id.
        """
        query = np.asarray(query, dtype=np.float32)
        with self._lock:
            mask = self._searchable_locked(filters)
            rows: npt.NDArray[np.intp] | None = None
            if len(self._chunks):  # a note scores its best window's cosine
                every = self._vectors[: self._n] @ query
                self._chunks.raise_scores(every, query, mask)
                rows = None if mask is None else np.flatnonzero(mask)
                scores = every if rows is None else every[rows]
            elif mask is None:
                scores = self._vectors[: self._n] @ query
            else:
                rows = np.flatnonzero(mask)
                if len(rows) * 8 < self._n:  # a narrow scope: gather its rows (a copy) and scan them
                    scores = self._vectors[rows] @ query
                else:  # a wide scope: scan everything in place, then keep the scope's scores
                    scores = (self._vectors[: self._n] @ query)[rows]
            top = np.argpartition(-scores, n - 1)[:n] if len(scores) > n else np.arange(len(scores))
            found = [(self._ids[int(t) if rows is None else int(rows[t])], float(scores[t])) for t in top]
        found.sort(key=lambda pair: (-pair[1], pair[0]))
        return found

    def similarities(self, ids: Iterable[str], query: Vector, filters: SearchFilters) -> dict[str, float]:
        """Cosine of ``query`` with each note among ``ids`` that exists and is inside ``filters``."""
        query = np.asarray(query, dtype=np.float32)
        with self._lock:
            mask = self._searchable_locked(filters)
            rows = [(i, self._row[i]) for i in ids if i in self._row]
            rows = [(i, row) for i, row in rows if mask is None or mask[row]]
            if not rows:
                return {}
            scores = self._vectors[[row for _, row in rows]] @ query
            out = {i: float(s) for (i, _), s in zip(rows, scores, strict=True)}
            for i in out:
                best = self._chunks.best_of(i, query)
                if best is not None and best > out[i]:
                    out[i] = best
            return out
