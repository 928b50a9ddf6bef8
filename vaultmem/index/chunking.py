"""Long notes embedded in overlapping chunks, aggregated back to the note (issue 15, prototype).

The model sees at most ``max_tokens`` word pieces (256 for MiniLM); what a long note says after
that is invisible to the vector leg. A note whose text is longer than one window is split into
overlapping windows of words, each embedded with the note's title as a contextual header, and a
query's cosine with the note is the best of its chunks' (:func:`aggregate_max`) or a mix of the
best few (:func:`aggregate_topk`). The chunk that matched is what a snippet should show.

Everything here is pure (texts in, texts and numbers out) so the seam onto the index is small:
the index embeds :func:`chunk_texts` of a note through its content-hash keyed embedding cache
(a re-index embeds nothing unchanged) and keeps one vector per chunk beside the note's.
Words stand in for word pieces at :data:`PIECES_PER_WORD` (measured with the MiniLM tokenizer on
5,183 scientific abstracts: 1.57; chat turns run lower), so a window of :data:`WINDOW_WORDS` and a title
stay under the model's limit; a window that runs over loses a few words the overlap repeats.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "OVERLAP_WORDS",
    "PIECES_PER_WORD",
    "WINDOW_WORDS",
    "Chunk",
    "aggregate_max",
    "aggregate_topk",
    "chunk_texts",
    "split_windows",
]

#: Word pieces per whitespace word (MiniLM's tokenizer on scientific abstracts: 1.57).
PIECES_PER_WORD = 1.6
#: Words per window: ~225 word pieces, leaving room for the title header under 256.
WINDOW_WORDS = 140
#: Words two consecutive windows share, so a fact cut by a boundary is whole in one of them.
OVERLAP_WORDS = 35

_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Chunk:
    """One window of a note: its text to embed and the character span of the body it covers."""

    text: str
    start: int
    end: int


def split_windows(
    body: str, window: int = WINDOW_WORDS, overlap: int = OVERLAP_WORDS
) -> list[tuple[int, int]]:
    """Character spans of overlapping windows of ``window`` words, ``overlap`` shared.

    A body of at most ``window`` words is one span (the whole text). The last window is moved
    back to end on the last word, so no window is a short tail.
    """
    if window < 1 or not 0 <= overlap < window:
        raise ValueError("window must be >= 1 and 0 <= overlap < window")
    words = [(m.start(), m.end()) for m in _WORD.finditer(body)]
    if len(words) <= window:
        return [(0, len(body))] if words else []
    step = window - overlap
    starts = list(range(0, len(words) - window + 1, step))
    if starts[-1] + window < len(words):
        starts.append(len(words) - window)
    return [(words[s][0], words[s + window - 1][1]) for s in starts]


def chunk_texts(
    title: str, body: str, window: int = WINDOW_WORDS, overlap: int = OVERLAP_WORDS
) -> list[Chunk]:
    """The chunks of a note: the title, as a header, and one window of the body each.

    A note that fits one window gives one chunk whose text is what the index embeds today
    (title and body), so short notes embed exactly as before.
    """
    spans = split_windows(body, window, overlap)
    if len(spans) <= 1:
        text = "\n".join(p for p in (title, body) if p)
        return [Chunk(text, 0, len(body))]
    return [Chunk("\n".join(p for p in (title, body[s:e]) if p), s, e) for s, e in spans]


def aggregate_max(similarities: npt.NDArray[np.float32]) -> float:
    """A note's cosine with a query: its best chunk's."""
    return float(np.max(similarities)) if similarities.size else 0.0


def aggregate_topk(
    similarities: Sequence[float] | npt.NDArray[np.float32], k: int = 2, mix: float = 0.8
) -> float:
    """``mix`` x the best chunk's cosine + (1 - ``mix``) x the mean of the best ``k``: a note
    that matches in several places edges out one that matches once, at equal best."""
    values = np.sort(np.asarray(similarities, dtype=np.float32))[::-1]
    if not values.size:
        return 0.0
    return float(mix * values[0] + (1 - mix) * values[:k].mean())
