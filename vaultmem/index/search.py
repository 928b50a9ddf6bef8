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
from vaultmem.index.fusion import FusionConfig, RelevanceCalibration, calibrate_relevance, fuse
from vaultmem.index.records import NoteRecord, SearchFilters, SearchHit, SearchResult

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

    def search_vector(self, query: str | npt.NDArray[np.float32], filters: SearchFilters, k: int) -> SearchResult:
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
        whose calibrated relevance is below it; a hit with a BM25 anchor is never gated. If the
        vector leg is unavailable the answer is the BM25 leg with ``degraded=True``.
        """
        _check(query, k)
        gate = self.calibration.min_relevance if min_relevance is None else min_relevance
        pool = max(self.fusion.pool, k)
        bm25_future = self._executor().submit(self.bm25_candidates, query, filters, pool)
        warnings: list[str] = []
        vector_hits: list[LegHit] = []
        degraded = False
        try:
            if self._index.needs_rebuild():
                raise IndexError_("the stored vectors belong to another embedding model; run `vaultmem reindex`")
            vector_hits = self.vector_candidates(self.embed_query(query), filters, pool)
        except IndexError_ as exc:
            degraded = True
            warnings.append(f"vector search unavailable: {exc}")
        bm25_hits = _result(bm25_future)
        records = {h.record.id: h.record for h in (*bm25_hits, *vector_hits)}
        fused = fuse(
            [(h.record.id, h.score) for h in bm25_hits],
            [(h.record.id, h.score) for h in vector_hits],
            self.fusion,
        )
        hits: list[SearchHit] = []
        filtered_out = 0
        for f in fused:
            relevance = None if f.similarity is None else calibrate_relevance(f.similarity, self.calibration)
            if f.bm25 is None and relevance is not None and relevance < gate:
                filtered_out += 1
                continue
            sources = tuple(s for s, v in (("bm25", f.bm25), ("embedding", f.similarity)) if v is not None)
            hits.append(
                SearchHit(
                    records[f.id],
                    f.score,
                    sources,
                    bm25_score=f.bm25,
                    similarity=f.similarity,
                    relevance=relevance,
                    low_confidence=f.bm25 is None
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
