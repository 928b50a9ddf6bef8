"""What the vector leg holds for each note, and how the index writer gets it.

A note is embedded as its windows (:func:`~vaultmem.index.chunking.chunk_texts`): a short note
as one text (title and body), a long one as overlapping windows of its body, each under the
title. The first window's vector is the note's own (the mirror's row, what clustering and the
context step compare), the others are its chunks (:mod:`~vaultmem.index.chunk_matrix`). Every
text's vector comes from the embedding cache, keyed by (model, sha256 of the text): a reindex
embeds nothing whose text did not change, and an edit to a long note re-embeds only the windows
it touched (the windows before the edit keep their text).

A **short note written in a session** (fewer than :data:`SHORT_WORDS` words) is often the answer to
the note its session wrote just before ("Yes, every Sunday!" after "Do you still run?"), which
is what a query asks about. Such a note is embedded with that predecessor's first
:data:`HEADER_WORDS` words after its own text (a contextual header), when the two are alike
(plain cosine at least :data:`HEADER_FLOOR`): measured in docs/benchmarks.md, never built from
time neighbours (another writer's note would poison it) nor for a note without a session. When a
note is added, edited or deleted, the short note its session wrote next is embedded again, so a
note's vector depends on the vault alone, not on the order its notes were indexed in (a rebuild
gives the same vectors; the session's coherence is not asked, since it changes as the session
grows and would make the vector depend on when the note was embedded).
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
from vaultmem.index.records import NoteRecord, embedding_text
from vaultmem.index.timeline import Timeline

__all__ = ["HEADER_FLOOR", "HEADER_WORDS", "SHORT_WORDS", "NoteVectors", "VectorMaker", "windows_of"]

Vector = npt.NDArray[np.float32]
_NO_SPANS: Spans = np.zeros((0, 2), dtype=np.int32)
#: A note of fewer words than this may get its predecessor's words as a header.
SHORT_WORDS = 100
#: How many of the predecessor's words the header holds.
HEADER_WORDS = 60
#: The plain cosine a note and its predecessor need for the header.
HEADER_FLOOR = 0.3


def is_short(record: NoteRecord) -> bool:
    """Whether a note may get a header: short, and written in a session."""
    return record.session is not None and len(record.text.split()) < SHORT_WORDS


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
    timeline: Timeline
    #: An episode's consecutive notes are at most this far apart (s): the predecessor's window.
    window_s: float

    def predecessor(self, record: NoteRecord, batch: dict[str, NoteRecord]) -> NoteRecord | None:
        """The note ``record``'s session wrote just before it (the timeline holds the batch)."""
        if not is_short(record):
            return None
        before = self.timeline.in_session(record.id, self.window_s, -1)
        return None if before is None else batch.get(before) or self.mirror.get(before)

    def contexts(
        self, records: Sequence[NoteRecord], batch: dict[str, NoteRecord] | None = None
    ) -> list[NoteRecord | None]:
        """Each record's context for the lexical leg (:func:`vaultmem.index.lexical.context_text`):
        the predecessor its header comes from, whether or not the two are alike enough for the
        header (a word of the question the note answers is worth a little wherever it is)."""
        batch = {r.id: r for r in records} if batch is None else batch
        return [self.predecessor(r, batch) for r in records]

    def followers(self, records: Sequence[NoteRecord], batch: dict[str, NoteRecord]) -> list[NoteRecord]:
        """The short notes outside ``batch`` whose predecessor is among ``records`` (new or with a
        changed text): their header must be made again."""
        out: dict[str, NoteRecord] = {}
        for record in records:
            after = self.timeline.in_session(record.id, self.window_s, 1)
            follower = None if after is None or after in batch else self.mirror.get(after)
            if follower is not None and is_short(follower):
                out[follower.id] = follower
        return list(out.values())

    def for_records(self, records: Sequence[NoteRecord], *, reuse: bool = True) -> NoteVectors:
        """One row (and the chunk list) per record, in order; ``reuse``: take the mirror's vectors
        of a note whose embedded texts are unchanged (a note that may have a header always asks
        the cache: its header depends on another note)."""
        dim = self.cache.embedder.dim
        empty: tuple[Spans, Vector] = (_NO_SPANS, np.zeros((0, dim), dtype=np.float32))
        out = NoteVectors(np.zeros((len(records), dim), dtype=np.float32), [empty] * len(records))
        batch = {r.id: r for r in records}
        headed = self._headers(records, batch)
        todo: list[tuple[int, list[str], Spans]] = []
        for i, record in enumerate(records):
            texts, spans = windows_of(record)
            if record.id in headed:
                texts = [headed[record.id]]
            old = self.mirror.get(record.id) if reuse and not is_short(record) else None
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

    def _headers(self, records: Sequence[NoteRecord], batch: dict[str, NoteRecord]) -> dict[str, str]:
        """``{id: text with header}`` for the short notes of ``records`` whose predecessor is alike."""
        pairs = [(r, p) for r in records if (p := self.predecessor(r, batch)) is not None]
        if not pairs:
            return {}
        plain = self.cache.vectors_for([embedding_text(x) for pair in pairs for x in pair])
        out: dict[str, str] = {}
        for n, (record, before) in enumerate(pairs):
            if float(plain[2 * n] @ plain[2 * n + 1]) >= HEADER_FLOOR:
                header = " ".join(before.text.split()[:HEADER_WORDS])
                out[record.id] = f"{embedding_text(record)}\n{header}"
        return out
