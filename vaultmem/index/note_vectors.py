"""What the vector leg holds for each note, and how the index writer gets it.

A note is embedded as its windows (:func:`~vaultmem.index.chunking.chunk_texts`): a short note
as one text (title and body), a long one as overlapping windows of its body, each under the
title. The first window's vector is the note's own (the mirror's row, what clustering and the
context step compare), the others are its chunks (:mod:`~vaultmem.index.chunk_matrix`). Every
text's vector comes from the embedding cache, keyed by (model, sha256 of the text): a reindex
embeds nothing whose text did not change, and an edit to a long note re-embeds only the windows
it touched (the windows before the edit keep their text).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from vaultmem.index.cache import EmbeddingCache
from vaultmem.index.chunk_matrix import Spans
from vaultmem.index.chunking import chunk_texts
from vaultmem.index.mirror import NoteMirror
from vaultmem.index.records import NoteRecord

__all__ = ["NoteVectors", "VectorMaker", "windows_of"]

Vector = npt.NDArray[np.float32]
_NO_SPANS: Spans = np.zeros((0, 2), dtype=np.int32)


def windows_of(record: NoteRecord) -> tuple[list[str], Spans]:
    """The texts a note is embedded as, and the body spans of all windows but the first."""
    chunks = chunk_texts(record.title, record.text)
    spans = np.array([(c.start, c.end) for c in chunks[1:]], dtype=np.int32).reshape(-1, 2)
    return [c.text for c in chunks], spans


@dataclass
class NoteVectors:
    """The vectors of a batch of notes: one row each, and each note's further chunks."""

    vectors: Vector
    chunks: list[tuple[Spans, Vector]] = field(default_factory=list)

    def subset(self, rows: Sequence[int]) -> NoteVectors:
        """The vectors of ``rows`` (positions in this batch), in that order."""
        return NoteVectors(self.vectors[list(rows)], [self.chunks[i] for i in rows])


@dataclass
class VectorMaker:
    """Vectors for the notes the writer stores: the mirror's when a note's texts did not change,
    else the cache's (which embeds what it has never seen)."""

    cache: EmbeddingCache
    mirror: NoteMirror

    def for_records(self, records: Sequence[NoteRecord], *, reuse: bool = True) -> NoteVectors:
        """One row (and the chunk list) per record, in order; ``reuse``: take the mirror's vectors
        of a note whose embedded texts are unchanged."""
        dim = self.cache.embedder.dim
        empty: tuple[Spans, Vector] = (_NO_SPANS, np.zeros((0, dim), dtype=np.float32))
        out = NoteVectors(np.zeros((len(records), dim), dtype=np.float32), [empty] * len(records))
        todo: list[tuple[int, list[str], Spans]] = []
        for i, record in enumerate(records):
            texts, spans = windows_of(record)
            old = self.mirror.get(record.id) if reuse else None
            vector = None
            if old is not None and windows_of(old)[0] == texts:
                vector = self.mirror.vector(record.id)
            if vector is None:
                todo.append((i, texts, spans))
            else:
                out.vectors[i] = vector
                out.chunks[i] = self.mirror.chunks(record.id)
        if todo:
            found = self.cache.vectors_for([t for _, texts, _ in todo for t in texts])
            at = 0
            for i, texts, spans in todo:
                out.vectors[i] = found[at]
                out.chunks[i] = (spans, found[at + 1 : at + len(texts)])
                at += len(texts)
        return out
