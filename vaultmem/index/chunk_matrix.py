"""The chunk vectors of long notes, held in memory beside the notes' own (issue 15, long notes).

A note longer than one window (:mod:`vaultmem.index.chunking`) has one vector per window; its
first window's vector is the note's own vector (the mirror's row), the others live here: one row
per chunk, its owner's mirror row and the character span of the body it covers. Rows are
appended; a note's rows are marked dead when it changes or goes, and the matrix is compacted
once a quarter of it is dead. The mirror tells it when a note's row moves.

Memory: ``dim`` float32 values and three int32s per chunk beyond the first (1.5 kB at 384-d):
short notes cost nothing, a 2,000-word page ~18 rows (~28 kB).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["ChunkMatrix"]

Vector = npt.NDArray[np.float32]
Spans = npt.NDArray[np.int32]
_DEAD = -1


class ChunkMatrix:
    """Chunk rows of the mirror's notes (not thread-safe on its own: the mirror's lock guards it)."""

    def __init__(self, dim: int, capacity: int = 256) -> None:
        self.dim = dim
        self._reset(capacity)

    def _reset(self, capacity: int) -> None:
        self._n = 0
        self._dead = 0
        self._vectors: Vector = np.zeros((capacity, self.dim), dtype=np.float32)
        self._owner = np.full(capacity, _DEAD, dtype=np.int32)
        self._spans: Spans = np.zeros((capacity, 2), dtype=np.int32)
        self._rows_of: dict[str, list[int]] = {}

    def __len__(self) -> int:
        """Live chunk rows."""
        return self._n - self._dead

    def set(self, note_id: str, row: int, spans: Spans, vectors: Vector) -> None:
        """Hold exactly these chunks for the note at mirror row ``row`` (none: forget them)."""
        self.drop(note_id)
        if not len(vectors):
            return
        self._reserve(self._n + len(vectors))
        at = np.arange(self._n, self._n + len(vectors))
        self._vectors[at] = vectors
        self._spans[at] = spans
        self._owner[at] = row
        self._rows_of[note_id] = at.tolist()
        self._n += len(vectors)

    def drop(self, note_id: str) -> None:
        """Forget the note's chunks."""
        rows = self._rows_of.pop(note_id, None)
        if rows:
            self._owner[rows] = _DEAD
            self._dead += len(rows)
            if self._dead * 4 > self._n and self._dead > 256:
                self._compact()

    def moved(self, note_id: str, row: int) -> None:
        """The note's mirror row is now ``row``."""
        rows = self._rows_of.get(note_id)
        if rows:
            self._owner[rows] = row

    def of(self, note_id: str) -> tuple[Spans, Vector]:
        """The note's chunk spans and vectors (copies; empty for a short note)."""
        rows = self._rows_of.get(note_id, [])
        return self._spans[rows].copy(), self._vectors[rows].copy()

    def raise_scores(
        self, scores: npt.NDArray[np.float32], query: Vector, allowed: npt.NDArray[np.bool_] | None
    ) -> None:
        """``scores[row] = max(scores[row], best chunk cosine)`` for every note row with chunks
        (``scores`` indexed by mirror row; ``allowed``: the rows inside the search's scope)."""
        if self._n == self._dead:
            return
        owners = self._owner[: self._n]
        live = owners >= 0
        if allowed is not None:
            live &= allowed[np.where(live, owners, 0)]
        rows = np.flatnonzero(live)
        if not len(rows):
            return
        if len(rows) * 8 < self._n:  # a narrow scope: gather its chunks
            sims = self._vectors[rows] @ query
        else:  # a wide one: scan in place, keep the scope's
            sims = (self._vectors[: self._n] @ query)[rows]
        np.maximum.at(scores, owners[rows], sims)

    def clear(self) -> None:
        """Forget every chunk."""
        self._reset(256)

    def export(self, row_of: dict[str, int]) -> tuple[list[tuple[int, int]], Spans, Vector]:
        """Every note's chunks, for a snapshot: ``(mirror row, chunk count)`` per long note (rows
        by ``row_of``, the mirror's id -> row), then all their spans and vectors in that order."""
        owners: list[tuple[int, int]] = []
        at: list[int] = []
        for note_id, rows in self._rows_of.items():
            owners.append((row_of[note_id], len(rows)))
            at.extend(rows)
        index = np.asarray(at, dtype=np.intp)
        return owners, self._spans[index], self._vectors[index]

    def best_span(self, note_id: str, query: Vector, own: float) -> tuple[int, int] | None:
        """The body span of the note's chunk most similar to ``query``, or None when no chunk
        beats ``own`` (the note's own vector: its first window)."""
        rows = self._rows_of.get(note_id)
        if not rows:
            return None
        sims = self._vectors[rows] @ query
        best = int(np.argmax(sims))
        if float(sims[best]) <= own:
            return None
        start, end = self._spans[rows[best]]
        return int(start), int(end)

    def best_of(self, note_id: str, query: Vector) -> float | None:
        """The note's best chunk cosine with ``query`` (None for a note without chunks)."""
        rows = self._rows_of.get(note_id)
        return None if not rows else float(np.max(self._vectors[rows] @ query))

    def _reserve(self, rows: int) -> None:
        capacity = len(self._vectors)
        if rows <= capacity:
            return
        while capacity < rows:
            capacity *= 2
        for name, fill in (("_vectors", 0), ("_owner", _DEAD), ("_spans", 0)):
            old = getattr(self, name)
            grown = np.full((capacity, *old.shape[1:]), fill, dtype=old.dtype)
            grown[: self._n] = old[: self._n]
            setattr(self, name, grown)

    def _compact(self) -> None:
        keep = np.flatnonzero(self._owner[: self._n] >= 0)
        remap = np.full(self._n, -1, dtype=np.int64)
        remap[keep] = np.arange(len(keep))
        self._vectors[: len(keep)] = self._vectors[keep]
        self._spans[: len(keep)] = self._spans[keep]
        self._owner[: len(keep)] = self._owner[keep]
        self._owner[len(keep) : self._n] = _DEAD
        self._n, self._dead = len(keep), 0
        self._rows_of = {i: remap[rows].tolist() for i, rows in self._rows_of.items()}
