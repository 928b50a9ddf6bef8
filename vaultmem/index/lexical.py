"""The lexical leg: BM25F over the notes' titles and bodies, held in memory beside the mirror.

The analysis and the formula are :mod:`vaultmem.index.bm25`'s (the past's search scores the same
way). Document frequencies, the number of notes and the average field lengths are over every note
the index holds, whatever a search's scope.

Notes are known by the owner's row numbers (the mirror's). Each indexed text takes a *slot*; an
edit or a removal retires the slot (its postings stay until a compaction drops them), so a write
appends and never rewrites a posting list. The owner says when its rows move, so a search's scope
(a mask over the mirror's rows) applies to the lexical scores with one gather.

Not thread-safe on its own: the mirror calls it under its lock.
"""

from __future__ import annotations

from array import array

import numpy as np
import numpy.typing as npt

from vaultmem.index.bm25 import Analyzer, field_counts, field_norms, term_scores
from vaultmem.index.records import NoteRecord, lexical_fields

__all__ = ["LexicalIndex"]

#: Retired slots beyond which (and beyond half the slots) the postings are rewritten without them.
COMPACT_AT = 4096


class LexicalIndex:
    """BM25F postings of the notes' fields, by slot; see the module's docstring."""

    def __init__(self, analyzer: Analyzer | None = None) -> None:
        self.analyzer = analyzer or Analyzer()
        self._terms: dict[str, int] = {}
        self._docs: list[array[int]] = []  # per term: the slots holding it
        self._tfs: list[array[int]] = []  # per term: title tf << 16 | body tf, per slot
        self._title_len = array("f")
        self._body_len = array("f")
        self._row = array("i")  # per slot: the owner's row, -1 once retired
        self._slot = array("i")  # per owner's row: its slot, -1 for none
        self._live = 0
        self._title_total = 0.0
        self._body_total = 0.0

    def __len__(self) -> int:
        """Notes held (live slots)."""
        return self._live

    # ----------------------------------------------------------------- writes

    def add(self, record: NoteRecord, row: int) -> None:
        """Index ``record`` as the owner's ``row`` (replacing what that row held)."""
        self.remove(row)
        counts, title_len, body_len = field_counts(self.analyzer, *lexical_fields(record))
        slot = len(self._row)
        for term, packed in counts.items():
            number = self._terms.get(term)
            if number is None:
                number = self._terms[term] = len(self._docs)
                self._docs.append(array("i"))
                self._tfs.append(array("i"))
            self._docs[number].append(slot)
            self._tfs[number].append(packed)
        self._title_len.append(title_len)
        self._body_len.append(body_len)
        self._row.append(row)
        if row >= len(self._slot):
            self._slot.extend([-1] * (row + 1 - len(self._slot)))
        self._slot[row] = slot
        self._live += 1
        self._title_total += title_len
        self._body_total += body_len
        self._compact()

    def remove(self, row: int) -> None:
        """Forget what the owner's ``row`` held (nothing happens for a row never added)."""
        slot = self._slot[row] if row < len(self._slot) else -1
        if slot < 0:
            return
        self._slot[row] = -1
        self._row[slot] = -1
        self._live -= 1
        self._title_total -= self._title_len[slot]
        self._body_total -= self._body_len[slot]

    def move(self, source: int, target: int) -> None:
        """What the owner's row ``source`` held is now its row ``target`` (``target`` held nothing)."""
        slot = self._slot[source]
        self._slot[source] = -1
        if slot >= 0:
            self._slot[target] = slot
            self._row[slot] = target

    def _compact(self) -> None:
        """Drop retired slots once they are many (:data:`COMPACT_AT`, and more than half the slots)."""
        retired = len(self._row) - self._live
        if retired < COMPACT_AT or retired * 2 < len(self._row):
            return
        rows = np.frombuffer(self._row, dtype=np.int32).copy()
        live = rows >= 0
        new_slot = (np.cumsum(live, dtype=np.int64) - 1).astype(np.int32)
        for number in range(len(self._docs)):
            docs = np.frombuffer(self._docs[number], dtype=np.int32).copy()
            tfs = np.frombuffer(self._tfs[number], dtype=np.int32).copy()
            keep = live[docs]
            self._docs[number] = array("i", new_slot[docs[keep]].tobytes())
            self._tfs[number] = array("i", tfs[keep].tobytes())
        kept = np.flatnonzero(live)
        self._title_len = array("f", np.frombuffer(self._title_len, dtype=np.float32)[kept].tobytes())
        self._body_len = array("f", np.frombuffer(self._body_len, dtype=np.float32)[kept].tobytes())
        self._row = array("i", rows[kept].tobytes())
        slot_of = np.full(len(self._slot), -1, dtype=np.int32)
        slot_of[rows[kept]] = np.arange(len(kept), dtype=np.int32)
        self._slot = array("i", slot_of.tobytes())

    # ----------------------------------------------------------------- scores

    def scores(self, query: str) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]:
        """The owner's rows of every live note that holds a term of ``query``, and their BM25F scores."""
        slots = len(self._row)
        if not self._live:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
        rows = np.frombuffer(self._row, dtype=np.int32, count=slots)
        title_len = np.frombuffer(self._title_len, dtype=np.float32, count=slots)
        body_len = np.frombuffer(self._body_len, dtype=np.float32, count=slots)
        title_norm, body_norm = field_norms(
            title_len, body_len, self._title_total / self._live, self._body_total / self._live
        )
        total = np.zeros(slots, dtype=np.float32)
        for term in dict.fromkeys(self.analyzer.terms(query)):
            number = self._terms.get(term)
            if number is None:
                continue
            docs = np.frombuffer(self._docs[number], dtype=np.int32)
            packed = np.frombuffer(self._tfs[number], dtype=np.int32)
            alive = rows[docs] >= 0
            df = int(np.count_nonzero(alive))
            if df == 0:
                continue
            docs, packed = docs[alive], packed[alive]
            total[docs] += term_scores(df, self._live, packed, title_norm[docs], body_norm[docs])
        hit = np.flatnonzero(total > 0)
        return rows[hit].copy(), total[hit]
