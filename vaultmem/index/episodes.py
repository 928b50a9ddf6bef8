"""Which notes form an episode with a hit: the context step's neighbours, in the orders that hold.

A memory written in the same episode as a hit is often its answer, or the question before it:
the turn "what got you into running?" and the reply "it has been great for my mental health".
The timeline knows two orders (:mod:`vaultmem.index.timeline`): a note's writer's sequence (its
session's notes in its project) and its project's sequence (everything in time order). Neither
can be trusted blindly: four agents writing into one project at once interleave the project's
sequence, and a bulk import writes unrelated notes one after the other into one session. So an
order is used for a note only while it is **coherent**: consecutive notes of the sequence are
more alike than two notes of the same sequence taken at random, by at least ``coherence_floor``
in mean cosine (docs/benchmarks.md: a conversation's consecutive turns gain ~0.1, an import's
notes and a project's interleaved writers ~0). The baseline is the sequence's own, so a writer's
coherence does not depend on what other writers put into the project.

The statistics are computed from the index's vectors over at most :data:`SAMPLE` notes of a
sequence (its latest pairs, and a sample spread over it for the baseline), and cached until the
sequence changes; a sequence too short to judge counts as coherent (one writer's few notes are
an episode until shown otherwise).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import numpy as np

from vaultmem.index.mirror import NoteMirror
from vaultmem.index.timeline import SequenceKey, Timeline

__all__ = ["SAMPLE", "Episodes"]

#: Notes a coherence estimate looks at, per sequence and per project baseline.
SAMPLE = 256
#: Consecutive pairs below which a sequence is not judged (taken as coherent).
MIN_PAIRS = 3


class Episodes:
    """Neighbour lookups over the coherent orders of each note (thread-safe, cached)."""

    def __init__(self, timeline: Timeline, mirror: NoteMirror) -> None:
        self.timeline = timeline
        self.mirror = mirror
        self._lock = threading.Lock()
        self._mean: dict[SequenceKey, tuple[int, float | None]] = {}
        self._baseline: dict[SequenceKey, tuple[int, float]] = {}

    def neighbours(self, note_id: str, window_s: float, radius: int, floor: float) -> list[tuple[int, str]]:
        """``(distance, id)`` of the notes near ``note_id`` in each of its coherent orders (the
        smaller distance when both orders hold a note)."""
        keys = self.timeline.keys_of(note_id)
        if keys is None:
            return []
        near: dict[str, int] = {}
        for order, key in zip(("session", "project"), keys, strict=True):
            if not self.coherent(key, floor):
                continue
            for d, other in self.timeline.neighbours(note_id, window_s, radius, order):
                near[other] = min(d, near.get(other, d))
        return [(d, other) for other, d in near.items()]

    def adjacency(
        self, ids: Iterable[str], window_s: float, radius: int, floor: float
    ) -> dict[str, list[tuple[int, str]]]:
        """:meth:`neighbours` of each id."""
        return {i: self.neighbours(i, window_s, radius, floor) for i in ids}

    def coherent(self, key: SequenceKey, floor: float) -> bool:
        """Whether consecutive notes of ``key`` are more alike than its notes in general."""
        mean = self._consecutive_mean(key)
        if mean is None:
            return True
        return mean - self._baseline_of(key) >= floor

    def _consecutive_mean(self, key: SequenceKey) -> float | None:
        generation = self.timeline.generation(key)
        with self._lock:
            cached = self._mean.get(key)
        if cached is not None and cached[0] == generation:
            return cached[1]
        ids, vectors = self.mirror.vectors_of(self.timeline.tail(key, SAMPLE + 1))
        mean: float | None = None
        if len(ids) > MIN_PAIRS:
            mean = float(np.einsum("ij,ij->i", vectors[:-1], vectors[1:]).mean())
        with self._lock:
            self._mean[key] = (generation, mean)
        return mean

    def _baseline_of(self, key: SequenceKey) -> float:
        """The mean cosine of two distinct notes of the sequence (from a sample spread over it)."""
        generation = self.timeline.generation(key)
        with self._lock:
            cached = self._baseline.get(key)
        if cached is not None and cached[0] == generation:
            return cached[1]
        _, vectors = self.mirror.vectors_of(self.timeline.spread(key, SAMPLE))
        k = len(vectors)
        baseline = 0.0
        if k > 1:
            total = vectors.sum(axis=0)
            squares = float(np.einsum("ij,ij->", vectors, vectors))
            baseline = float((total @ total - squares) / (k * (k - 1)))
        with self._lock:
            self._baseline[key] = (generation, baseline)
        return baseline
