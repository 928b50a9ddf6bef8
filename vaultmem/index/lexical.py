"""The lexical leg: BM25F over the notes' titles and bodies, held in memory beside the mirror.

The analysis and the formula are :mod:`vaultmem.index.bm25`'s (the past's search scores the same
way). Document frequencies, the number of notes and the average field lengths are over every note
the index holds, whatever a search's scope.

A note may have a third field, its **context**: the body of the note its session wrote just
before it (for a short note; :meth:`vaultmem.index.note_vectors.VectorMaker.contexts` picks it, as
it picks the vector's header). Its words count :data:`~vaultmem.index.bm25.CONTEXT_WEIGHT` of a
body word's, summed with the note's own frequencies before saturation; a term found only there
still counts in its document frequency. The owner says which note a row's context is.

Notes are known by the owner's row numbers (the mirror's). Each indexed text takes a *slot*; an
edit or a removal retires the slot (its postings stay until a compaction drops them), so a write
appends and never rewrites a posting list. The owner says when its rows move, so a search's scope
(a mask over the mirror's rows) applies to the lexical scores with one gather.

A start does not analyse every note again: at close the postings are written to a state file
(:meth:`LexicalIndex.state`, checksummed ``marshal``), each slot with the key of the note text it
holds, and the next open adopts every slot whose key a loaded note still has
(:meth:`LexicalIndex.adopt`), analysing only the notes that changed meanwhile (another process's
writes, a hand edit indexed by a CLI) and retiring the slots no note holds any more.

Not thread-safe on its own: the mirror calls it under its lock.
"""

from __future__ import annotations

import logging
from array import array
from pathlib import Path

import numpy as np
import numpy.typing as npt

from vaultmem.index.bm25 import (
    B_CONTEXT,
    CONTEXT_WEIGHT,
    Analyzer,
    analysis_fingerprint,
    append_postings,
    context_counts,
    field_counts,
    field_norms,
    saturated,
    weighted_tf,
)
from vaultmem.index.records import NoteRecord, lexical_fields
from vaultmem.vault.atomic import atomic_write
from vaultmem.vault.reading import read_regular
from vaultmem.vault.statefile import marshal_state, unmarshal_state

__all__ = ["STATE_FILE", "LexicalIndex", "read_state", "save_state", "state_key"]

log = logging.getLogger(__name__)

#: Retired slots beyond which (and beyond half the slots) the postings are rewritten without them.
COMPACT_AT = 4096
#: The layout of :meth:`LexicalIndex.state` (bump it when the postings change; a change of the
#: analysis is caught by its fingerprint, saved beside it).
STATE_FORMAT = 3  # 2: the context field; 3: its postings kept only for the terms a context holds
#: The state file a closing process leaves in its index folder for the next open.
STATE_FILE = "lexical.state"


def read_state(folder: Path) -> object:
    """The postings an earlier process saved in the index folder ``folder`` (None when there are
    none or they cannot be read: they are then built from the notes)."""
    path = folder / STATE_FILE
    try:
        return unmarshal_state(read_regular(path))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, EOFError, TypeError) as exc:
        log.info("ignoring %s (%s); the lexical postings are built from the notes", path, exc)
        return None


def save_state(folder: Path, state: tuple[object, ...] | None) -> None:
    """Write ``state`` (:meth:`LexicalIndex.state`; None: nothing changed) for the next open;
    atomic, not fsynced (derived), a failure logged."""
    if state is None:
        return
    try:
        atomic_write(folder / STATE_FILE, marshal_state(state), durable=False)
    except OSError as exc:
        log.warning("could not save the lexical postings (%s); the next start builds them", exc)


def state_key(record: NoteRecord, context: NoteRecord | None = None) -> str:
    """What a slot's text is known by in a saved state: the note and everything its fields come
    from, its context's note (:func:`context_text`) included."""
    before = "" if context is None else f"{context.id}\x1f{context.content_hash}"
    return "\x00".join((record.id, record.content_hash, record.title, "\x1f".join(record.tags), before))


def context_text(context: NoteRecord | None) -> str:
    """The context field of a note whose context is the note ``context`` (its session's note
    just before it): that note's body; "" for none."""
    return "" if context is None else context.text


class LexicalIndex:
    """BM25F postings of the notes' fields, by slot; see the module's docstring."""

    def __init__(
        self,
        analyzer: Analyzer | None = None,
        *,
        state: object = None,
        records: list[NoteRecord] | None = None,
        contexts: list[NoteRecord | None] | None = None,
    ) -> None:
        """An empty index, or with ``state`` one adopted for ``records`` (see :meth:`adopt`)."""
        self.analyzer = analyzer or Analyzer()
        self._terms: dict[str, int] = {}
        self._docs: list[array[int]] = []  # per term: the slots holding it
        self._tfs: list[array[int]] = []  # per term: title tf << 16 | body tf, per slot
        # per term number found in a context field: the slots whose context holds it, and its
        # frequency there (a dict: most of a vault's terms are in no context)
        self._ctx: dict[int, tuple[array[int], array[int]]] = {}
        self._title_len = array("f")
        self._body_len = array("f")
        self._ctx_len = array("f")
        self._row = array("i")  # per slot: the owner's row, -1 once retired
        self._slot = array("i")  # per owner's row: its slot, -1 for none
        self._live = 0
        self._title_total = 0.0
        self._body_total = 0.0
        self._ctx_total = 0.0
        #: Whether the postings changed since they were built or adopted (a state worth saving).
        self.changed = False
        if state is not None:
            self._take(state, records or [], contexts)

    def __len__(self) -> int:
        """Notes held (live slots)."""
        return self._live

    # ----------------------------------------------------------------- writes

    def add(self, record: NoteRecord, row: int, context: NoteRecord | None = None) -> None:
        """Index ``record`` as the owner's ``row`` (replacing what that row held), with the note
        ``context`` as its context field (:func:`context_text`)."""
        self.remove(row)
        counts, title_len, body_len = field_counts(self.analyzer, *lexical_fields(record))
        ctx_counts, ctx_len = context_counts(self.analyzer, context_text(context))
        slot = len(self._row)
        append_postings(self._terms, self._docs, self._tfs, slot, counts)
        for term, tf in ctx_counts.items():
            number = self._terms.get(term)
            if number is None:
                number = self._terms[term] = len(self._docs)
                self._docs.append(array("i"))
                self._tfs.append(array("i"))
            held = self._ctx.get(number)
            if held is None:
                held = self._ctx[number] = (array("i"), array("i"))
            held[0].append(slot)
            held[1].append(tf)
        self._title_len.append(title_len)
        self._body_len.append(body_len)
        self._ctx_len.append(ctx_len)
        self._ctx_total += ctx_len
        self._row.append(row)
        if row >= len(self._slot):
            self._slot.extend([-1] * (row + 1 - len(self._slot)))
        self._slot[row] = slot
        self._live += 1
        self._title_total += title_len
        self._body_total += body_len
        self.changed = True
        self._compact()

    def remove(self, row: int) -> None:
        """Forget what the owner's ``row`` held (nothing happens for a row never added)."""
        slot = self._slot[row] if row < len(self._slot) else -1
        if slot < 0:
            return
        self._slot[row] = -1
        self._row[slot] = -1
        self.changed = True
        self._live -= 1
        self._title_total -= self._title_len[slot]
        self._body_total -= self._body_len[slot]
        self._ctx_total -= self._ctx_len[slot]

    def move(self, source: int, target: int) -> None:
        """What the owner's row ``source`` held is now its row ``target`` (``target`` held nothing)."""
        slot = self._slot[source]
        self._slot[source] = -1
        if slot >= 0:
            self._slot[target] = slot
            self._row[slot] = target

    def _compact(self, *, always: bool = False) -> None:
        """Drop retired slots once they are many (:data:`COMPACT_AT`, and more than half the slots),
        or ``always`` when there are any."""
        retired = len(self._row) - self._live
        if not retired or (not always and (retired < COMPACT_AT or retired * 2 < len(self._row))):
            return
        rows = np.frombuffer(self._row, dtype=np.int32).copy()
        live = rows >= 0
        new_slot = (np.cumsum(live, dtype=np.int64) - 1).astype(np.int32)

        def kept_of(docs_of: array[int], tfs_of: array[int]) -> tuple[array[int], array[int]]:
            docs = np.frombuffer(docs_of, dtype=np.int32).copy()
            tfs = np.frombuffer(tfs_of, dtype=np.int32).copy()
            keep = live[docs]
            return array("i", new_slot[docs[keep]].tobytes()), array("i", tfs[keep].tobytes())

        for number in range(len(self._docs)):
            self._docs[number], self._tfs[number] = kept_of(self._docs[number], self._tfs[number])
        self._ctx = {number: kept_of(*held) for number, held in self._ctx.items()}
        kept = np.flatnonzero(live)
        self._title_len = array("f", np.frombuffer(self._title_len, dtype=np.float32)[kept].tobytes())
        self._body_len = array("f", np.frombuffer(self._body_len, dtype=np.float32)[kept].tobytes())
        self._ctx_len = array("f", np.frombuffer(self._ctx_len, dtype=np.float32)[kept].tobytes())
        self._row = array("i", rows[kept].tobytes())
        slot_of = np.full(len(self._slot), -1, dtype=np.int32)
        slot_of[rows[kept]] = np.arange(len(kept), dtype=np.int32)
        self._slot = array("i", slot_of.tobytes())

    # ----------------------------------------------------------------- saved state

    def state(self, keys: list[str]) -> tuple[object, ...]:
        """The postings as plain values for :meth:`adopt` (``keys[row]``: :func:`state_key` of the
        owner's row). Retired slots are dropped first."""
        self._compact(always=True)
        slot_keys = [keys[row] for row in self._row]
        return (
            (STATE_FORMAT, analysis_fingerprint()),
            list(self._terms),
            [d.tobytes() for d in self._docs],
            [t.tobytes() for t in self._tfs],
            self._title_len.tobytes(),
            self._body_len.tobytes(),
            slot_keys,
            list(self._ctx),
            [d.tobytes() for d, _ in self._ctx.values()],
            [t.tobytes() for _, t in self._ctx.values()],
            self._ctx_len.tobytes(),
        )

    @classmethod
    def adopt(
        cls,
        state: object,
        records: list[NoteRecord],
        analyzer: Analyzer,
        contexts: list[NoteRecord | None] | None = None,
    ) -> LexicalIndex:
        """An index of ``records`` (the owner's rows, in order; ``contexts[row]``: that row's
        context note) from a saved :meth:`state`: every slot whose key a record has is kept as
        that record's, the others retired, the records no slot holds analysed. ValueError when
        ``state`` is no state of this layout."""
        return cls(analyzer, state=state, records=records, contexts=contexts)

    def _take(
        self, state: object, records: list[NoteRecord], contexts: list[NoteRecord | None] | None
    ) -> None:
        if not (
            isinstance(state, tuple)
            and len(state) == 11
            and state[0] == (STATE_FORMAT, analysis_fingerprint())
        ):
            raise ValueError("not a lexical index state of this layout")
        _, terms, docs, tfs, title_len, body_len, slot_keys, numbers, ctx_docs, ctx_tfs, ctx_len = state
        lists = (terms, docs, tfs, slot_keys, numbers, ctx_docs, ctx_tfs)
        if not all(isinstance(x, list) for x in lists):
            raise ValueError("a lexical index state without its postings")
        if not (len(terms) == len(docs) == len(tfs) and len(numbers) == len(ctx_docs) == len(ctx_tfs)):
            raise ValueError("a lexical index state whose postings do not match")
        named = all(type(n) is int and 0 <= n < len(terms) for n in numbers)
        if not named or len(set(numbers)) < len(numbers):
            raise ValueError("a lexical index state whose context postings name terms it does not have")
        self._terms = {str(t): i for i, t in enumerate(terms)}
        for d, t in zip(docs, tfs, strict=True):
            self._docs.append(_ints(d))
            self._tfs.append(_ints(t))
        self._ctx = {n: (_ints(d), _ints(t)) for n, d, t in zip(numbers, ctx_docs, ctx_tfs, strict=True)}
        self._title_len.frombytes(title_len)
        self._body_len.frombytes(body_len)
        self._ctx_len.frombytes(ctx_len)
        slots = len(slot_keys)
        if not (len(self._title_len) == len(self._body_len) == len(self._ctx_len) == slots):
            raise ValueError("a lexical index state whose lengths do not match its slots")
        _check_postings(self._docs, self._tfs, slots)
        _check_postings([d for d, _ in self._ctx.values()], [t for _, t in self._ctx.values()], slots)
        around = contexts or [None] * len(records)
        keys = [state_key(r, c) for r, c in zip(records, around, strict=True)]
        if keys == slot_keys:  # the usual start: the same notes in the same order
            rows = np.arange(slots, dtype=np.int32)
            unheld: list[int] = []
        else:
            row_of = dict(zip(keys, range(len(keys)), strict=True))
            rows = np.fromiter((row_of.pop(k, -1) for k in slot_keys), dtype=np.int32, count=slots)
            unheld = sorted(row_of.values())
        slot_of = np.full(len(records), -1, dtype=np.int32)
        held = np.flatnonzero(rows >= 0)
        slot_of[rows[held]] = held.astype(np.int32)
        self._row = array("i", rows.tobytes())
        self._slot = array("i", slot_of.tobytes())
        self._live = len(held)
        self._title_total = float(np.frombuffer(self._title_len, dtype=np.float32)[held].sum())
        self._body_total = float(np.frombuffer(self._body_len, dtype=np.float32)[held].sum())
        self._ctx_total = float(np.frombuffer(self._ctx_len, dtype=np.float32)[held].sum())
        for row in unheld:
            self.add(records[row], row, around[row])
        self.changed = bool(unheld) or self._live != slots

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
        ctx_len = np.frombuffer(self._ctx_len, dtype=np.float32, count=slots)
        ctx_norm = (1.0 - B_CONTEXT) + B_CONTEXT * ctx_len / max(self._ctx_total / self._live, 1e-6)
        total = np.zeros(slots, dtype=np.float32)
        for term in dict.fromkeys(self.analyzer.terms(query)):
            number = self._terms.get(term)
            if number is None:
                continue
            docs = np.frombuffer(self._docs[number], dtype=np.int32)
            packed = np.frombuffer(self._tfs[number], dtype=np.int32)
            docs, packed = docs[rows[docs] >= 0], packed[rows[docs] >= 0]
            tf = weighted_tf(packed, title_norm[docs], body_norm[docs])
            held = self._ctx.get(number)
            if held is not None:  # the term in context fields too: one frequency per note, summed
                ctx_docs = np.frombuffer(held[0], dtype=np.int32)
                ctx_tfs = np.frombuffer(held[1], dtype=np.int32)
                alive = rows[ctx_docs] >= 0
                ctx_docs, ctx_tfs = ctx_docs[alive], ctx_tfs[alive]
                dense = np.zeros(slots, dtype=np.float64)
                dense[docs] = tf
                dense[ctx_docs] += CONTEXT_WEIGHT * ctx_tfs / ctx_norm[ctx_docs]
                docs = np.flatnonzero(dense).astype(np.int32)
                tf = dense[docs]
            if len(docs) == 0:
                continue
            total[docs] += saturated(len(docs), self._live, tf)
        hit = np.flatnonzero(total > 0)
        return rows[hit].copy(), total[hit]


def _check_postings(docs: list[array[int]], tfs: list[array[int]], slots: int) -> None:
    """ValueError unless each term's slots and counts pair up and every slot is one of ``slots``:
    a state that failed this would make every search for one of its terms raise."""
    if any(len(d) != len(t) for d, t in zip(docs, tfs, strict=True)):
        raise ValueError("a lexical index state whose posting lists and counts do not pair up")
    held = np.frombuffer(b"".join(d.tobytes() for d in docs), dtype=np.int32)
    if len(held) and (int(held.min()) < 0 or int(held.max()) >= slots):
        raise ValueError("a lexical index state whose postings name slots it does not have")


def _ints(raw: object) -> array[int]:
    if not isinstance(raw, bytes) or len(raw) % 4:
        raise ValueError("a posting list of a lexical index state is not one")
    out = array("i")
    out.frombytes(raw)
    return out
