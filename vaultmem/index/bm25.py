"""An in-memory BM25 over many documents, scored over whichever subset a query names.

The present search's full-text leg is LanceDB's native index over the notes table. A search into
the past (``as_of``, :mod:`vaultmem.index.versions`) ranks the notes as they were at one moment, a
different subset of every version for every moment, so its term statistics cannot be precomputed:
here the postings are kept per document, and :meth:`Bm25Corpus.scores` computes document
frequencies, the average length and the scores over the documents the caller says are in the
corpus *then* (a count per document: two notes may share one text). At 30k documents that is a
few NumPy operations per query term.

The analyzer mirrors the notes table's full-text configuration (``index/_schema.py: fts_config``):
words are runs of letters and digits, lower-cased, folded to ASCII, at most 40 characters,
English stop words dropped, Snowball-stemmed. Okapi BM25 with ``k1 = 1.2``, ``b = 0.75``.
"""

from __future__ import annotations

import math
import re
import threading
import unicodedata
from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["Analyzer", "Bm25Corpus"]

_WORD = re.compile(r"[^\W_]+")
#: Longer runs are ids, hashes or pasted blobs, never words someone searches for.
MAX_TERM_CHARS = 40
#: English stop words (the classic information-retrieval list).
STOP_WORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
        "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
        "they", "this", "to", "was", "will", "with",
    }
)  # fmt: skip
K1 = 1.2
B = 0.75


class Analyzer:
    """Text to index terms; stems are memoised (a vault's vocabulary is small, its texts many)."""

    def __init__(self) -> None:
        import snowballstemmer  # only a search into the past needs it

        self._stem: Callable[[str], str] = snowballstemmer.stemmer("english").stemWord
        self._memo: dict[str, str] = {}
        self._lock = threading.Lock()  # the Snowball stemmer object keeps state while it stems

    def terms(self, text: str) -> list[str]:
        memo = self._memo
        words = _WORD.findall(text.lower())
        try:
            found = [memo[w] for w in words]  # the common case: every word seen before
        except KeyError:
            found = [memo[w] if w in memo else self._learn(w) for w in words]
        return [t for t in found if t]

    def _learn(self, word: str) -> str:
        """The term a new word indexes as ("" for none: a stop word, an over-long run)."""
        if len(word) > MAX_TERM_CHARS:
            return ""  # not remembered: pasted ids and hashes would fill the memo
        folded = word if word.isascii() else _ascii_folded(word)
        if folded in STOP_WORDS:
            term = ""
        else:
            with self._lock:
                term = self._stem(folded)
        self._memo[word] = term
        return term


def _ascii_folded(word: str) -> str:
    """``café`` -> ``cafe``: accents dropped (letters with no ASCII form are kept as they are)."""
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


class Bm25Corpus:
    """Documents added once, each a text; postings kept per term (appendable, compact arrays)."""

    def __init__(self, analyzer: Analyzer) -> None:
        self.analyzer = analyzer
        self._terms: dict[str, int] = {}
        self._docs: list[array[int]] = []  # per term: the documents holding it
        self._tfs: list[array[int]] = []  # per term: how often each holds it
        self._lengths = array("i")  # per document: its number of terms

    def __len__(self) -> int:
        return len(self._lengths)

    def add(self, text: str) -> int:
        """Index one document; returns its number."""
        doc = len(self._lengths)
        terms = self.analyzer.terms(text)
        for term, count in Counter(terms).items():
            number = self._terms.get(term)
            if number is None:
                number = self._terms[term] = len(self._docs)
                self._docs.append(array("i"))
                self._tfs.append(array("i"))
            self._docs[number].append(doc)
            self._tfs[number].append(count)
        self._lengths.append(len(terms))
        return doc

    def frozen(self) -> tuple[list[int], list[tuple[str, array[int], array[int]]]]:
        """A copy of the postings (the lengths, and each term's documents and counts) that later
        additions leave alone: a snapshot is written from it outside the store's lock."""
        terms = list(self._terms)
        return self._lengths.tolist(), [
            (term, array("i", self._docs[i]), array("i", self._tfs[i])) for i, term in enumerate(terms)
        ]

    def restore(self, lengths: list[int], postings: Iterable[list[Any]]) -> None:
        """Hold the postings :meth:`frozen` gave, read back as ``[term, docs, counts]`` lists (a
        ValueError or TypeError when they are not)."""
        self._lengths = array("i", lengths)
        for term, docs, tfs in postings:
            if len(docs) != len(tfs) or str(term) in self._terms:
                raise ValueError("a posting list is not one")
            self._terms[str(term)] = len(self._docs)
            self._docs.append(array("i", docs))
            self._tfs.append(array("i", tfs))

    def scores(self, query: str, present: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """BM25 of every document for ``query``, over the corpus ``present`` describes: for each
        document, how many of the searched items hold it (0: not in the corpus now). A document
        outside it scores 0."""
        n_docs = len(present)
        out = np.zeros(n_docs, dtype=np.float32)
        population = int(present.sum())
        if population == 0:
            return out
        lengths = np.asarray(self._lengths[:n_docs], dtype=np.float32)
        average = float((lengths * present).sum()) / population or 1.0
        for term in dict.fromkeys(self.analyzer.terms(query)):
            number = self._terms.get(term)
            if number is None:
                continue
            docs = np.asarray(self._docs[number], dtype=np.intp)
            tfs = np.asarray(self._tfs[number], dtype=np.float32)
            inside = docs < n_docs  # documents added after ``present`` was counted
            docs, tfs = docs[inside], tfs[inside]
            held = present[docs]
            df = int(held.sum())
            if df == 0:
                continue
            idf = math.log(1.0 + (population - df + 0.5) / (df + 0.5))
            norm = K1 * (1.0 - B + B * lengths[docs] / average)
            out[docs] += np.where(held > 0, idf * tfs * (K1 + 1.0) / (tfs + norm), 0.0)
        return out
