"""Pure ranking math: per-query score normalisation, hybrid fusion and calibrated relevance.

Everything here works on plain ``(id, score)`` lists so it is unit-tested without a database.
The defaults are the configuration measured best in ``docs/benchmarks.md``; a settings object
may override any of them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "FusedScore",
    "FusionConfig",
    "RelevanceCalibration",
    "calibrate_relevance",
    "clamp01",
    "fuse",
    "minmax",
    "propagate_context",
    "rrf",
]

Ranked = Sequence[tuple[str, float]]


@dataclass(frozen=True)
class FusionConfig:
    """How the BM25 and vector legs are combined.

    Each leg returns its top ``pool`` candidates; scores are min-max normalised per query and
    combined as ``bm25_weight * bm25 + vector_weight * cosine`` (a leg that missed a note adds 0).
    Then each note gains ``context_weight`` times the best score of the notes of its episode
    (up to ``context_radius`` steps away in a coherent order, a step further lending
    ``context_decay`` as much; see :func:`propagate_context` and :mod:`vaultmem.index.episodes`).
    """

    bm25_weight: float = 0.6
    vector_weight: float = 0.4
    pool: int = 50
    #: Share of a time-adjacent note's score a note inherits (0 turns context off).
    context_weight: float = 0.5
    #: An episode's consecutive notes are at most this far apart in ``created`` (s).
    context_window_s: float = 600.0
    #: Notes up to this many steps away in an order lend score; each step further lends
    #: ``context_decay`` times as much.
    context_radius: int = 2
    context_decay: float = 0.7
    #: An order is used while its consecutive notes are this much more alike (mean cosine) than
    #: the project's notes in general.
    coherence_floor: float = 0.02
    #: The neighbours of this many top fused hits join the candidates even if no leg found them.
    context_expand: int = 20


@dataclass(frozen=True)
class FusedScore:
    """A fused candidate: its final score and what each leg said about it."""

    id: str
    score: float
    bm25: float | None
    similarity: float | None
    context: float = 0.0


@dataclass(frozen=True)
class RelevanceCalibration:
    """Maps a raw cosine to ``relevance`` in [0, 1] and gates weak vector-only hits.

    ``unrelated_floor`` is the cosine unrelated texts reach (relevance 0), ``vector_floor`` a strong
    match (relevance 1). ``min_relevance`` is the default noise gate on the calibrated scale.
    Measured for all-MiniLM-L6-v2 by ``benchmarks/calibrate.py`` (docs/benchmarks.md): unrelated
    pairs reach p95 0.099 and at most 0.202, so the default gate (raw cosine 0.22) clears them all.
    """

    unrelated_floor: float = 0.10
    vector_floor: float = 0.40
    min_relevance: float = 0.4


def clamp01(value: float) -> float:
    """Clamp to [0, 1] (NaN becomes 0)."""
    if math.isnan(value):
        return 0.0
    return min(1.0, max(0.0, value))


def calibrate_relevance(similarity: float, calibration: RelevanceCalibration) -> float:
    """``clamp01((similarity - unrelated_floor) / (vector_floor - unrelated_floor))``."""
    span = calibration.vector_floor - calibration.unrelated_floor
    if span <= 0:
        raise ValueError("vector_floor must be greater than unrelated_floor")
    return clamp01((similarity - calibration.unrelated_floor) / span)


def minmax(scores: Ranked) -> dict[str, float]:
    """Min-max normalise one leg's scores to [0, 1]; a single or all-equal list maps to 1."""
    if not scores:
        return {}
    values = [s for _, s in scores]
    low, high = min(values), max(values)
    if high - low <= 1e-12:
        return {doc: 1.0 for doc, _ in scores}
    return {doc: (s - low) / (high - low) for doc, s in scores}


def rrf(legs: Sequence[Ranked], weights: Sequence[float], k: int = 60) -> dict[str, float]:
    """Weighted reciprocal-rank fusion: ``sum(w / (k + rank))`` with ranks from 1."""
    fused: dict[str, float] = {}
    for leg, weight in zip(legs, weights, strict=True):
        for rank, (doc, _) in enumerate(leg, start=1):
            fused[doc] = fused.get(doc, 0.0) + weight / (k + rank)
    return fused


def fuse(
    bm25: Ranked,
    vector: Ranked,
    config: FusionConfig,
    extra_similarities: Mapping[str, float] | None = None,
) -> list[FusedScore]:
    """Combine the legs into one ranking (best first, ties broken by id for determinism).

    ``extra_similarities`` are cosines of notes neither leg returned (context neighbours); they
    are normalised on the vector leg's scale and clamped to [0, 1].
    """
    bm25 = list(bm25)[: config.pool]
    vector = list(vector)[: config.pool]
    raw_bm25: Mapping[str, float] = dict(bm25)
    raw_sim: dict[str, float] = dict(vector)
    norm_bm25 = minmax(bm25)
    norm_vec = minmax(vector)
    if extra_similarities and vector:
        low, high = min(s for _, s in vector), max(s for _, s in vector)
        for doc, sim in extra_similarities.items():
            if doc not in raw_sim:
                raw_sim[doc] = sim
                norm_vec[doc] = clamp01((sim - low) / (high - low)) if high > low else 0.0
    fused = [
        FusedScore(
            id=doc,
            score=config.bm25_weight * norm_bm25.get(doc, 0.0)
            + config.vector_weight * norm_vec.get(doc, 0.0),
            bm25=raw_bm25.get(doc),
            similarity=raw_sim.get(doc),
        )
        for doc in {**raw_bm25, **raw_sim}
    ]
    fused.sort(key=lambda f: (-f.score, f.id))
    return fused


def propagate_context(
    fused: Sequence[FusedScore],
    adjacency: Mapping[str, Sequence[tuple[int, str]]],
    weight: float,
    decay: float = 1.0,
) -> list[FusedScore]:
    """Add ``weight`` x the best ``decay ** (d - 1)`` x own score among each note's neighbours
    (``adjacency``: ``(distance, id)`` pairs), then re-rank.

    A memory written during a conversation is often the answer to, or the question before, the
    note a query matches: the turn "what got you into running?" is next to "it has been great
    for my mental health". Adjacency is computed by the caller (:mod:`vaultmem.index.episodes`);
    only notes present in ``fused`` lend score, so the result depends on the candidates alone.
    """
    if weight <= 0:
        return list(fused)
    own = {f.id: f.score for f in fused}
    out = []
    for f in fused:
        near = adjacency.get(f.id, ())
        lent = max((own[n] * decay ** (d - 1) for d, n in near if n in own), default=0.0)
        out.append(
            FusedScore(
                id=f.id, score=f.score + weight * lent, bm25=f.bm25, similarity=f.similarity, context=lent
            )
        )
    out.sort(key=lambda f: (-f.score, f.id))
    return out
