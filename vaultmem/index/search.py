"""The two search legs and their fusion.

Both legs, the context step's neighbour cosines and the records of the hits come from the
index's in-memory :class:`~vaultmem.index.mirror.NoteMirror`: the lexical leg is its BM25F over
titles and bodies (:mod:`~vaultmem.index.lexical`), the vector leg its matrix scan, each with the
caller's :class:`SearchFilters` applied on the mirror's columns, so a scoped search ranks only
rows inside the scope.

The searcher is given what it reads (the mirror, the timeline, the embedder) and two questions it
asks the index first: wait for the writes queued before this
read, and whether the stored vectors belong to another model.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from vaultmem.errors import IndexError_
from vaultmem.index.calibration import ScoreCalibration, confidence, passage_coverage, scaled_scores
from vaultmem.index.embedder import Embedder
from vaultmem.index.episodes import Episodes
from vaultmem.index.fusion import (
    FusionConfig,
    RelevanceCalibration,
    calibrate_relevance,
    fuse,
    propagate_context,
)
from vaultmem.index.mirror import NoteMirror
from vaultmem.index.records import NoteRecord, SearchFilters, SearchHit, SearchResult, check_search
from vaultmem.index.timeline import Timeline

__all__ = ["HybridSearcher", "LegHit"]

#: Distinct query texts whose vectors are kept (an agent often repeats a query within a task).
QUERY_CACHE_SIZE = 256


@dataclass(frozen=True)
class LegHit:
    """One candidate of one leg: the note and that leg's raw score (BM25 or cosine)."""

    record: NoteRecord
    score: float


class HybridSearcher:
    """Runs the BM25 and vector legs over one index's notes and fuses them."""

    def __init__(
        self,
        *,
        mirror: NoteMirror,
        timeline: Timeline,
        episodes: Episodes,
        embedder: Embedder,
        ready: Callable[[], None],
        stale: Callable[[], bool],
        fusion: FusionConfig,
        calibration: RelevanceCalibration,
    ) -> None:
        self.mirror = mirror
        self.timeline = timeline
        self.episodes = episodes
        self.embedder = embedder
        self._ready = ready  # waits for the writes queued before the read
        self._stale = stale  # the stored vectors belong to another embedding model
        self.fusion = fusion
        self.calibration = calibration
        self.score_calibration = ScoreCalibration(calibration)
        self._query_vectors: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._query_lock = threading.Lock()
        #: Embeds a search's query beside its lexical leg (one idle thread, started on first use).
        self._embedder_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vaultmem-query")

    # ----------------------------------------------------------------- legs

    def bm25_candidates(self, query: str, filters: SearchFilters, n: int) -> list[LegHit]:
        """Top ``n`` notes by the lexical leg's BM25F (:mod:`~vaultmem.index.lexical`), inside ``filters``."""
        self._ready()
        return self._leg_hits(self.mirror.lexical(query, filters, n))

    def embed_query(self, query: str) -> npt.NDArray[np.float32]:
        """The query's vector (recently asked queries are answered from a small cache)."""
        with self._query_lock:
            cached = self._query_vectors.get(query)
            if cached is not None:
                self._query_vectors.move_to_end(query)
                return cached
        vector: npt.NDArray[np.float32] = self.embedder.embed([query])[0]
        with self._query_lock:
            self._query_vectors[query] = vector
            while len(self._query_vectors) > QUERY_CACHE_SIZE:
                self._query_vectors.popitem(last=False)
        return vector

    def vector_candidates(
        self, vector: npt.NDArray[np.float32], filters: SearchFilters, n: int
    ) -> list[LegHit]:
        """Top ``n`` notes by cosine similarity to ``vector``, inside ``filters``."""
        self._ready()
        return self._leg_hits(self.mirror.nearest(vector, filters, n))

    def _leg_hits(self, ranked: list[tuple[str, float]]) -> list[LegHit]:
        records = self.mirror.get_many(i for i, _ in ranked)
        return [LegHit(records[i], s) for i, s in ranked if i in records]

    # ----------------------------------------------------------------- public searches

    def search_bm25(self, query: str, filters: SearchFilters, k: int) -> SearchResult:
        """BM25 leg only."""
        check_search(query, k)
        hits = self.bm25_candidates(query, filters, k)
        return SearchResult(
            hits=[SearchHit(h.record, h.score, ("bm25",), bm25_score=h.score) for h in hits], total=len(hits)
        )

    def search_vector(
        self, query: str | npt.NDArray[np.float32], filters: SearchFilters, k: int
    ) -> SearchResult:
        """Vector leg only (``query`` may be a text or a vector)."""
        if isinstance(query, str):
            check_search(query, k)
            vector = self.embed_query(query)
        else:
            vector = np.asarray(query, dtype=np.float32)
        if self._stale():
            raise IndexError_("the stored vectors belong to another embedding model; run `vaultmem reindex`")
        hits = self.vector_candidates(vector, filters, k)
        spans = self.mirror.best_spans((h.record.id for h in hits), vector)
        return SearchResult(
            hits=[
                SearchHit(
                    h.record,
                    h.score,
                    ("embedding",),
                    similarity=h.score,
                    relevance=calibrate_relevance(h.score, self.calibration),
                    low_confidence=h.score < self.calibration.vector_floor,
                    span=spans.get(h.record.id),
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
        check_search(query, k)
        gate = self.calibration.min_relevance if min_relevance is None else min_relevance
        pool = max(self.fusion.pool, k)
        self._ready()
        mirror = self.mirror
        warnings: list[str] = []
        vector_ranked: list[tuple[str, float]] = []
        query_vector: npt.NDArray[np.float32] | None = None
        degraded = False
        # The query is embedded on the searcher's thread (the model releases the GIL) while the
        # lexical leg scores on this one.
        embedding = None if self._stale() else self._embedder_thread.submit(self.embed_query, query)
        bm25_ranked = mirror.lexical(query, filters, pool)
        try:
            if embedding is None:
                raise IndexError_(
                    "the stored vectors belong to another embedding model; run `vaultmem reindex`"
                )
            query_vector = embedding.result()
        except IndexError_ as exc:
            degraded = True
            warnings.append(f"vector search unavailable: {exc}")
        if query_vector is not None:
            vector_ranked = mirror.nearest(query_vector, filters, pool)
        fused = fuse(bm25_ranked, vector_ranked, self.fusion)
        if self.fusion.context_weight > 0 and fused:
            extra = self._context_neighbours(fused, filters, query_vector)
            if extra:
                fused = fuse(bm25_ranked, vector_ranked, self.fusion, extra_similarities=extra)
            adjacency = self._adjacency(f.id for f in fused)
            fused = propagate_context(fused, adjacency, self.fusion.context_weight, self.fusion.context_decay)
        records = mirror.get_many(f.id for f in fused)
        fused = [f for f in fused if f.id in records]
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
            hits=self._finish(query, hits[:k], query_vector, filters),
            total=len(fused),
            filtered_out=filtered_out,
            degraded=degraded,
            warnings=tuple(warnings),
        )

    def _finish(
        self,
        query: str,
        hits: list[SearchHit],
        query_vector: npt.NDArray[np.float32] | None,
        filters: SearchFilters,
    ) -> list[SearchHit]:
        """The hits with the span of each long note's best window and the cross-query score
        (:mod:`vaultmem.index.calibration`): the best hit's confidence, the others in proportion."""
        if not hits:
            return hits
        spans: dict[str, tuple[int, int]] = {}
        best = hits[0]
        similarity = best.similarity
        if query_vector is not None:
            spans = self.mirror.best_spans((h.record.id for h in hits), query_vector)
            if similarity is None:  # a BM25-only best hit: its cosine still counts as evidence
                similarity = self.mirror.similarities([best.record.id], query_vector, filters).get(
                    best.record.id
                )
        coverage = passage_coverage(query, best.record.title, best.record.text)
        sure = confidence(similarity, coverage, self.score_calibration)
        scaled = scaled_scores([h.score for h in hits], sure)
        return [
            replace(h, span=spans.get(h.record.id), calibrated=c) for h, c in zip(hits, scaled, strict=True)
        ]

    def _context_neighbours(
        self,
        fused: list[Any],
        filters: SearchFilters,
        query_vector: npt.NDArray[np.float32] | None,
    ) -> dict[str, float]:
        """Cosines of the episode neighbours (inside ``filters``) of the top hits no leg returned."""
        candidates = {f.id for f in fused}
        near = self._adjacency(f.id for f in fused[: self.fusion.context_expand])
        wanted = {n for pairs in near.values() for _, n in pairs if n not in candidates}
        if not wanted or query_vector is None:
            return {}
        return self.mirror.similarities(sorted(wanted), query_vector, filters)

    def _adjacency(self, ids: Iterable[str]) -> dict[str, list[tuple[int, str]]]:
        f = self.fusion
        return self.episodes.adjacency(ids, f.context_window_s, f.context_radius, f.coherence_floor)
