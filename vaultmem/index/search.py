"""The two search legs over the notes table and their fusion.

Both legs push the caller's :class:`SearchFilters` down as a LanceDB prefilter, so a project- or
status-scoped search ranks only rows inside the scope. The BM25 leg runs on a worker thread while
the query is embedded and the vector leg runs, which keeps a hybrid search close to the cost of
its slower leg.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from vaultmem.errors import IndexError_, InvalidInput
from vaultmem.index import _schema
from vaultmem.index.fusion import (
    FusionConfig,
    RelevanceCalibration,
    calibrate_relevance,
    fuse,
    propagate_context,
)
from vaultmem.index.records import NoteRecord, SearchFilters, SearchHit, SearchResult, sql_in

if TYPE_CHECKING:
    from vaultmem.index.store import NoteIndex

__all__ = ["HybridSearcher", "LegHit"]

_SELECT = [*_schema.RECORD_COLUMNS]


@dataclass(frozen=True)
class LegHit:
    """One candidate of one leg: the note and that leg's raw score (BM25 or cosine)."""

    record: NoteRecord
    score: float


class HybridSearcher:
    """Runs the BM25 and vector legs of a :class:`NoteIndex` and fuses them."""

    def __init__(self, index: NoteIndex, *, fusion: FusionConfig, calibration: RelevanceCalibration) -> None:
        self._index = index
        self.fusion = fusion
        self.calibration = calibration
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    # ----------------------------------------------------------------- legs

    def bm25_candidates(self, query: str, filters: SearchFilters, n: int) -> list[LegHit]:
        """Top ``n`` notes by LanceDB's native BM25 over ``search_text``, inside ``filters``."""
        where = filters.to_sql()
        try:
            q = self._index.notes_table.search(query, query_type="fts", fts_columns="search_text")
            if where:
                q = q.where(where, prefilter=True)
            rows = q.select([*_SELECT, "_score"]).limit(n).to_arrow().to_pylist()
        except Exception as exc:  # LanceDB raises untyped errors
            raise IndexError_(f"the full-text search failed: {exc}; try `vaultmem reindex`") from exc
        return [LegHit(_schema.record_from_row(r), float(r["_score"])) for r in rows]

    def embed_query(self, query: str) -> npt.NDArray[np.float32]:
        """The query's vector."""
        vector: npt.NDArray[np.float32] = self._index.embedder.embed([query])[0]
        return vector

    def vector_candidates(
        self, vector: npt.NDArray[np.float32], filters: SearchFilters, n: int
    ) -> list[LegHit]:
        """Top ``n`` notes by cosine similarity to ``vector``, inside ``filters``."""
        where = filters.to_sql()
        try:
            q = self._index.notes_table.search(vector, vector_column_name="vector").distance_type("cosine")
            if where:
                q = q.where(where, prefilter=True)
            rows = q.select([*_SELECT, "_distance"]).limit(n).to_arrow().to_pylist()
        except Exception as exc:
            raise IndexError_(f"the vector search failed: {exc}; try `vaultmem reindex`") from exc
        return [LegHit(_schema.record_from_row(r), 1.0 - float(r["_distance"])) for r in rows]

    # ----------------------------------------------------------------- public searches

    def search_bm25(self, query: str, filters: SearchFilters, k: int) -> SearchResult:
        """BM25 leg only."""
        _check(query, k)
        hits = self.bm25_candidates(query, filters, k)
        return SearchResult(
            hits=[SearchHit(h.record, h.score, ("bm25",), bm25_score=h.score) for h in hits], total=len(hits)
        )

    def search_vector(
        self, query: str | npt.NDArray[np.float32], filters: SearchFilters, k: int
    ) -> SearchResult:
        """Vector leg only (``query`` may be a text or a vector)."""
        if isinstance(query, str):
            _check(query, k)
            vector = self.embed_query(query)
        else:
            vector = np.asarray(query, dtype=np.float32)
        if self._index.needs_rebuild():
            raise IndexError_("the stored vectors belong to another embedding model; run `vaultmem reindex`")
        hits = self.vector_candidates(vector, filters, k)
        return SearchResult(
            hits=[
                SearchHit(
                    h.record,
                    h.score,
                    ("embedding",),
                    similarity=h.score,
                    relevance=calibrate_relevance(h.score, self.calibration),
                    low_confidence=h.score < self.calibration.vector_floor,
                )
                for h in hits
            ],
            total=len(hits),
        )

    def search(
        self, query: str, filters: SearchFilters, k: int, *, min_relevance: float | None = None
    ) -> SearchResult:
        """Hybrid search: both legs on a pool of candidates, fused, gated, cut to ``k``.

        ``min_relevance`` (default: the calibration's gate; 0 turns it off) drops vector-only hits
        whose calibrated relevance is below it; a hit with a BM25 anchor, or lent score by a
        time-adjacent hit (``match_source`` ``context``), is never gated. If the
        vector leg is unavailable the answer is the BM25 leg with ``degraded=True``.
        """
        _check(query, k)
        gate = self.calibration.min_relevance if min_relevance is None else min_relevance
        pool = max(self.fusion.pool, k)
        bm25_future = self._executor().submit(self.bm25_candidates, query, filters, pool)
        warnings: list[str] = []
        vector_hits: list[LegHit] = []
        query_vector: npt.NDArray[np.float32] | None = None
        degraded = False
        try:
            if self._index.needs_rebuild():
                raise IndexError_(
                    "the stored vectors belong to another embedding model; run `vaultmem reindex`"
                )
            query_vector = self.embed_query(query)
            vector_hits = self.vector_candidates(query_vector, filters, pool)
        except IndexError_ as exc:
            degraded = True
            warnings.append(f"vector search unavailable: {exc}")
        bm25_hits = _result(bm25_future)
        records = {h.record.id: h.record for h in (*bm25_hits, *vector_hits)}
        bm25_ranked = [(h.record.id, h.score) for h in bm25_hits]
        vector_ranked = [(h.record.id, h.score) for h in vector_hits]
        fused = fuse(bm25_ranked, vector_ranked, self.fusion)
        if self.fusion.context_weight > 0 and fused:
            extra = self._context_neighbours(fused, records, filters, query_vector)
            if extra:
                fused = fuse(bm25_ranked, vector_ranked, self.fusion, extra_similarities=extra)
            window = self.fusion.context_window_s
            adjacency = {f.id: self._index.timeline.neighbours(f.id, window) for f in fused}
            fused = propagate_context(fused, adjacency, self.fusion.context_weight)
        hits: list[SearchHit] = []
        filtered_out = 0
        for f in fused:
            relevance = None if f.similarity is None else calibrate_relevance(f.similarity, self.calibration)
            anchored = f.bm25 is not None or f.context > 0
            if not anchored and relevance is not None and relevance < gate:
                filtered_out += 1
                continue
            sources = tuple(s for s, v in (("bm25", f.bm25), ("embedding", f.similarity)) if v is not None)
            if f.context > 0:
                sources = (*sources, "context")
            hits.append(
                SearchHit(
                    records[f.id],
                    f.score,
                    sources,
                    bm25_score=f.bm25,
                    similarity=f.similarity,
                    relevance=relevance,
                    low_confidence=not anchored
                    and f.similarity is not None
                    and f.similarity < self.calibration.vector_floor,
                )
            )
        return SearchResult(
            hits=hits[:k],
            total=len(fused),
            filtered_out=filtered_out,
            degraded=degraded,
            warnings=tuple(warnings),
        )

    def _context_neighbours(
        self,
        fused: list[Any],
        records: dict[str, NoteRecord],
        filters: SearchFilters,
        query_vector: npt.NDArray[np.float32] | None,
    ) -> dict[str, float]:
        """Cosines of the time-adjacent notes of the top hits that no leg returned.

        Their rows are fetched (inside ``filters``) and added to ``records``.
        """
        window = self.fusion.context_window_s
        wanted = {
            n
            for f in fused[: self.fusion.context_expand]
            for n in self._index.timeline.neighbours(f.id, window)
            if n not in records
        }
        if not wanted or query_vector is None:
            return {}
        where = sql_in("id", sorted(wanted))
        scope = filters.to_sql()
        if scope:
            where = f"({where}) AND {scope}"
        try:
            rows = self._index.notes_table.search().where(where).select([*_SELECT, "vector"]).to_arrow()
        except Exception as exc:
            raise IndexError_(f"the context lookup failed: {exc}; try `vaultmem reindex`") from exc
        sims: dict[str, float] = {}
        vectors = rows["vector"].to_numpy(zero_copy_only=False)
        for row, vector in zip(rows.select(list(_SELECT)).to_pylist(), vectors, strict=True):
            record = _schema.record_from_row(row)
            records[record.id] = record
            sims[record.id] = float(np.dot(np.asarray(vector, dtype=np.float32), query_vector))
        return sims

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="vaultmem-search")
            return self._pool


def _result(future: Future[Any]) -> list[LegHit]:
    result: list[LegHit] = future.result()
    return result


def _check(query: str, k: int) -> None:
    if not query.strip():
        raise InvalidInput("the search query is empty; pass some words to search for")
    if k < 1:
        raise InvalidInput("k (the number of results) must be at least 1")
