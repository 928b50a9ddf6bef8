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

``confidence`` (:func:`confidence`) of the best hit; a hit's score is
``confidence * fused / best fused`` (the best hit scores its confidence, the order is the
ranking's). What the floors are and what a score of 0.5 means is measured by
``benchmarks/calibrate.py`` and written in ``docs/benchmarks.md``.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from vaultmem.index.chunking import WINDOW_WORDS
from vaultmem.index.fusion import RelevanceCalibration, calibrate_relevance, clamp01

__all__ = [
    "ScoreCalibration",
    "confidence",
    "content_terms",
    "lexical_coverage",
    "passage_coverage",
    "scaled_scores",
]

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


def _stem(word: str) -> str:
    """A light English stem: plural and -ing/-ed endings and a final e go (``certificates`` and
    ``certificate``, ``rotated`` and ``rotate`` meet); enough to match a query word to a note's."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 4 and word.endswith("es") and word[:-2].endswith(("s", "x", "z", "ch", "sh")):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def folded(text: str) -> str:
    """``Günter Weiß`` -> ``gunter weiss``: case folded and accents dropped, so that a query typed
    without them (``Chloe``) covers a note written with them (``Chloé``), as the BM25 terms do."""
    low = text.casefold()
    if low.isascii():
        return low
    return "".join(c for c in unicodedata.normalize("NFKD", low) if not unicodedata.combining(c))


def content_terms(text: str) -> set[str]:
    """Folded, stemmed words of ``text`` that are not stop words."""
    words = set(_WORD.findall(folded(text)))  # each distinct word stemmed once (long notes repeat)
    return {_stem(w) for w in words if w not in STOP_WORDS and len(w) > 1}


def lexical_coverage(query: str, text: str) -> float:
    """Share of the query's content terms found in ``text``, each weighted by its length
    (longer words are rarer: a crude, corpus-free stand-in for idf). 0 when the query has none."""
    wanted = content_terms(query)
    if not wanted:
        return 0.0
    have = content_terms(text)
    total = sum(len(t) for t in wanted)
    return sum(len(t) for t in wanted if t in have) / total


def passage_coverage(query: str, title: str, body: str, window: int = WINDOW_WORDS) -> float:
    """:func:`lexical_coverage` of the title and the passage of ``window`` words of the body that
    holds the most of the query's terms (a short body is one passage: the share as before).

    "The share of the query's words the note holds" says nothing of a journal of 20,000 words,
    which holds nearly every word of any query: a long note at the top of a search made any query
    look answered (1.0 for two words written pages apart; a helper's 1.9 MB note topped most
    queries of its vault at the top of the scale). The words must meet in one passage, as they do
    in a short note; the title's count in every passage. One pass over the body's words."""
    wanted = content_terms(query)
    if not wanted:
        return 0.0
    words = _WORD.findall(folded(body))
    if len(words) <= window:
        return lexical_coverage(query, f"{title}\n{body}")
    in_title = wanted & content_terms(title)
    stems: dict[str, str] = {}
    found: list[tuple[int, str]] = []  # (word position, query term) of the body's query terms
    for at, word in enumerate(words):
        term = stems.get(word)
        if term is None:
            term = stems[word] = _stem(word) if word not in STOP_WORDS and len(word) > 1 else ""
        if term in wanted and term not in in_title:
            found.append((at, term))
    held: Counter[str] = Counter()
    weight = best = 0
    first = 0
    for at, term in found:  # the window of ``window`` words ending at each found term
        if not held[term]:
            weight += len(term)
        held[term] += 1
        while at - found[first][0] >= window:
            gone = found[first][1]
            held[gone] -= 1
            if not held[gone]:
                weight -= len(gone)
            first += 1
        best = max(best, weight)
    return (best + sum(len(t) for t in in_title)) / sum(len(t) for t in wanted)


@dataclass(frozen=True)
class ScoreCalibration:
    """The floors of the cross-query score (measured by ``benchmarks/calibrate.py``)."""

    semantic: RelevanceCalibration = field(default_factory=RelevanceCalibration)
    #: Coverage an unrelated query's best hit reaches (0 below it); full coverage is 1.
    lexical_floor: float = 0.5


def confidence(similarity: float | None, coverage: float, calibration: ScoreCalibration) -> float:
    """How sure the best hit is a match, in [0, 1].

    Lexical evidence counts on its own (a query whose words a note holds, weighted by length,
    past ``lexical_floor``); semantic evidence counts half when the note shares none of the
    query's words and fully when it shares them all (``semantic * (1 + coverage) / 2``): a short
    query reaches a calibrated cosine of ~0.4 against an unrelated note ("when do deploys happen"
    against a note about booked train tickets), a paraphrase of a note's fact reaches 1.
    """
    semantic = 0.0 if similarity is None else calibrate_relevance(similarity, calibration.semantic)
    span = 1.0 - calibration.lexical_floor
    lexical = clamp01((coverage - calibration.lexical_floor) / span) if span > 0 else 0.0
    return max(lexical, semantic * (1.0 + clamp01(coverage)) / 2.0)


def scaled_scores(fused: Sequence[float], best_confidence: float) -> list[float]:
    """Scores in rank order: the best hit gets ``best_confidence``, the others in proportion."""
    if not fused:
        return []
    top = max(fused[0], 1e-12)
    return [round(clamp01(best_confidence * max(0.0, f) / top), 4) for f in fused]
