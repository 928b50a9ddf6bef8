"""A search score that means the same across queries (issue 15, prototype).

The hybrid ranks by per-query min-max normalised legs, so its fused score says where a hit
stands among this query's candidates, not whether anything matched: the best hit of an
unrelated query scores near the top of the scale too. Here the ranking is kept and the score is
scaled by how strong the query's best evidence is, measured on scales that do not depend on the
other candidates:

- **semantic evidence**: the best hit's cosine, calibrated between the model's measured floors
  (:func:`~vaultmem.index.fusion.calibrate_relevance`: an unrelated pair 0, a strong match 1);
- **lexical evidence**: the share of the query's content words (stop words dropped, a light
  suffix stem) that the hit contains, weighted by word length as a stand-in for rarity
  (:func:`lexical_coverage`), calibrated between ``lexical_floor`` and 1.

``confidence = max(semantic, lexical)`` of the best hit; a hit's score is
``confidence * fused / best fused`` (the best hit scores its confidence, the order is the
ranking's). What the floors are and what a score of 0.5 means is measured by
``benchmarks/calibrate.py`` and written in ``docs/benchmarks.md``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from vaultmem.index.fusion import RelevanceCalibration, calibrate_relevance, clamp01

__all__ = ["ScoreCalibration", "confidence", "content_terms", "lexical_coverage", "scaled_scores"]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
#: Words that carry no topic (English function words and question words).
STOP_WORDS = frozenset(
    (  # noqa: SIM905 - one readable block
        "a about after again all also am an and any are as at be been before being but by can "
        "could did do does doing done for from get got had has have he her here hers him his how "
        "i if in into is it its just me more most my no not now of on or our ours out over she "
        "should so some such than that the their theirs them then there these they this those "
        "to too up us very was we were what when where which while who whom why will with would "
        "you your yours"
    ).split()
)
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "edly", "ed", "es", "ly", "s")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_terms(text: str) -> set[str]:
    """Lower-cased, stemmed words of ``text`` that are not stop words."""
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in STOP_WORDS and len(w) > 1}


def lexical_coverage(query: str, text: str) -> float:
    """Share of the query's content terms found in ``text``, each weighted by its length
    (longer words are rarer: a crude, corpus-free stand-in for idf). 0 when the query has none."""
    wanted = content_terms(query)
    if not wanted:
        return 0.0
    have = content_terms(text)
    total = sum(len(t) for t in wanted)
    return sum(len(t) for t in wanted if t in have) / total


@dataclass(frozen=True)
class ScoreCalibration:
    """The floors of the cross-query score (measured by ``benchmarks/calibrate.py``)."""

    semantic: RelevanceCalibration = field(default_factory=RelevanceCalibration)
    #: Coverage an unrelated query's best hit reaches (0 below it); full coverage is 1.
    lexical_floor: float = 0.5


def confidence(similarity: float | None, coverage: float, calibration: ScoreCalibration) -> float:
    """How sure the best hit is a match, in [0, 1]: the stronger of its two kinds of evidence."""
    semantic = 0.0 if similarity is None else calibrate_relevance(similarity, calibration.semantic)
    span = 1.0 - calibration.lexical_floor
    lexical = clamp01((coverage - calibration.lexical_floor) / span) if span > 0 else 0.0
    return max(semantic, lexical)


def scaled_scores(fused: Sequence[float], best_confidence: float) -> list[float]:
    """Scores in rank order: the best hit gets ``best_confidence``, the others in proportion."""
    if not fused:
        return []
    top = max(fused[0], 1e-12)
    return [round(clamp01(best_confidence * max(0.0, f) / top), 4) for f in fused]
