"""The lexical analysis and BM25F scoring shared by the present's search and the past's.

A note is two fields: its **title**, and its **body** with its tags (:func:`vaultmem.index.records.
lexical_fields`); the present's leg gives a short note written in a session a third, its
**context** (:data:`CONTEXT_WEIGHT`, :mod:`vaultmem.index.lexical`). A term's frequency in each
is normalised by that field's length against the field's average, weighted, the fields summed
and saturated once (BM25F: Robertson and Zaragoza, "The Probabilistic Relevance Framework",
2009, section 3.5). The present's leg keeps its postings in :mod:`vaultmem.index.lexical`;
:class:`Bm25Corpus` here keeps the past's, over many documents and scored over whichever subset
a query names: a search into the past
(``as_of``, :mod:`vaultmem.index.versions`) ranks the notes as they were at one moment, a
different subset of every version for every moment, so its statistics (document frequencies,
*N*, average field lengths) are computed per query over the documents the caller says are in the
corpus *then* (a count per document: two notes may share one text).

Words are runs of letters and digits, lower-cased, folded to ASCII, at most 40 characters,
English stop words dropped (the Snowball list: function words say nothing about which note
answers), Snowball-stemmed (``snowballstemmer``, pure Python).
"""

from __future__ import annotations

import functools
import hashlib
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

__all__ = [
    "Analyzer",
    "Bm25Corpus",
    "analysis_fingerprint",
    "append_postings",
    "context_counts",
    "field_counts",
    "field_norms",
    "saturated",
    "term_scores",
    "weighted_tf",
]

_WORD = re.compile(r"[^\W_]+")
#: Longer runs are ids, hashes or pasted blobs, never words someone searches for.
MAX_TERM_CHARS = 40
#: English stop words: the classic information-retrieval list, then (below) the Snowball project's.
_CLASSIC_STOP_WORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
        "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
        "they", "this", "to", "was", "will", "with",
    }
)  # fmt: skip
#: The Snowball project's English stop words (function words: pronouns, auxiliaries, articles,
#: prepositions, conjunctions), with the pieces the tokenizer cuts contractions into ("don't" ->
#: "don", "t"): a question's "what did she ... about" says nothing about which note answers it.
STOP_WORDS = _CLASSIC_STOP_WORDS | frozenset(
    """i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
    she her hers herself its itself them theirs themselves what which who whom those am were been
    being have has had having do does did doing would should could ought because until while about
    against between through during before after above below from up down out off over under again
    further once here when where why how all any both each few more most other some nor only own
    same so than too very s t d ll m re ve don didn doesn isn aren wasn weren hasn haven hadn wouldn
    shouldn couldn mustn shan""".split()  # noqa: SIM905 - a list of 120 words reads better as text
)
#: Term-frequency saturation (below the classic 1.2: a word said twice in a note is rarely twice
#: as telling). Measured with the length normalisations and the title's weight on two corpora of
#: very different notes (docs/benchmarks.md, "The lexical leg in memory"): the figures are flat
#: around these values, which are the best of the grid on both, not a fit to either.
K1 = 0.9
#: Length normalisation of the title and of the body (light: a long note is not less about a word
#: for saying more besides).
B_TITLE = 0.3
B_BODY = 0.3
#: A title word's weight against a body word's.
TITLE_WEIGHT = 2.0
#: The present's third field, a short note's **context** (the words of the note its session wrote
#: just before it, :mod:`vaultmem.index.lexical`): a context word's weight against a body word's,
#: and the field's length normalisation. Measured in docs/benchmarks.md ("The context field").
CONTEXT_WEIGHT = 0.3
B_CONTEXT = 0.3
#: Packed frequencies: the title's in the high 15 bits, the body's in the low 16.
_BODY_MASK = 0xFFFF


#: How a word that is not ASCII is folded (part of :func:`analysis_fingerprint`): case folded (``ß`` ->
#: ``ss``), then accents dropped.
FOLDING = "casefold+nfkd"


@functools.cache
def analysis_fingerprint() -> str:
    """What postings saved under one analysis must match to be read under another: the stop words,
    the longest term and the stemmer's release (a state saved under another is built again)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        stemmer = version("snowballstemmer")
    except PackageNotFoundError:  # a vendored or unpackaged copy: the analysis alone
        stemmer = "?"
    words = " ".join(sorted(STOP_WORDS))
    return hashlib.sha256(f"{words}|{MAX_TERM_CHARS}|{stemmer}|{FOLDING}".encode()).hexdigest()[:16]


class Analyzer:
    """Text to index terms; stems are memoised (a vault's vocabulary is small, its texts many)."""

    def __init__(self) -> None:
        import snowballstemmer

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
    """``café`` -> ``cafe``, ``weiß`` -> ``weiss``: case folded and accents dropped (letters with no
    ASCII form are kept as they are)."""
    return "".join(c for c in unicodedata.normalize("NFKD", word.casefold()) if not unicodedata.combining(c))


def field_counts(analyzer: Analyzer, title: str, body: str) -> tuple[dict[str, int], int, int]:
    """Each term of the two fields with its packed frequencies, and the fields' lengths in terms."""
    title_terms, body_terms = analyzer.terms(title), analyzer.terms(body)
    counts = {t: min(c, 0x7FFF) << 16 for t, c in Counter(title_terms).items()}
    for term, count in Counter(body_terms).items():
        counts[term] = counts.get(term, 0) + min(count, _BODY_MASK)
    return counts, len(title_terms), len(body_terms)


def append_postings(
    terms: dict[str, int], docs: list[array[int]], tfs: list[array[int]], doc: int, counts: dict[str, int]
) -> None:
    """Add document ``doc`` with its packed ``counts`` to the postings (``terms``: term -> its
    number; ``docs`` and ``tfs``: per number, the documents holding the term and its counts)."""
    for term, packed in counts.items():
        number = terms.get(term)
        if number is None:
            number = terms[term] = len(docs)
            docs.append(array("i"))
            tfs.append(array("i"))
        docs[number].append(doc)
        tfs[number].append(packed)


def field_norms(
    title_len: npt.NDArray[np.float32], body_len: npt.NDArray[np.float32], title_avg: float, body_avg: float
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Each document's length normalisation of its title and of its body."""
    return (
        (1.0 - B_TITLE) + B_TITLE * title_len / max(title_avg, 1e-6),
        (1.0 - B_BODY) + B_BODY * body_len / max(body_avg, 1e-6),
    )


def term_scores(
    df: int,
    population: int,
    packed: npt.NDArray[np.int32],
    title_norm: npt.NDArray[np.float32],
    body_norm: npt.NDArray[np.float32],
) -> npt.NDArray[np.float32]:
    """One term's BM25F score in each document holding it (``packed`` and the norms: theirs)."""
    return saturated(df, population, weighted_tf(packed, title_norm, body_norm))


def weighted_tf(
    packed: npt.NDArray[np.int32], title_norm: npt.NDArray[np.float32], body_norm: npt.NDArray[np.float32]
) -> npt.NDArray[np.float64]:
    """A term's frequencies in the title and the body, each normalised and weighted, summed."""
    tf = TITLE_WEIGHT * (packed >> 16) / title_norm + (packed & _BODY_MASK) / body_norm
    return tf.astype(np.float64, copy=False)


def saturated(df: int, population: int, tf: npt.NDArray[np.float64]) -> npt.NDArray[np.float32]:
    """BM25's score of a term held by ``df`` of ``population`` documents, from its summed ``tf``."""
    idf = math.log(1.0 + (population - df + 0.5) / (df + 0.5))
    return (idf * tf / (K1 + tf)).astype(np.float32)


def context_counts(analyzer: Analyzer, context: str) -> tuple[dict[str, int], int]:
    """Each term of a context field with its frequency, and the field's length in terms."""
    terms = analyzer.terms(context) if context else []
    return {t: min(c, _BODY_MASK) for t, c in Counter(terms).items()}, len(terms)


class Bm25Corpus:
    """Documents added once, each a title and a body; postings kept per term (appendable arrays)."""

    def __init__(self, analyzer: Analyzer) -> None:
        self.analyzer = analyzer
        self._terms: dict[str, int] = {}
        self._docs: list[array[int]] = []  # per term: the documents holding it
        self._tfs: list[array[int]] = []  # per term: its packed frequencies in each
        self._title_len = array("i")  # per document: its title's number of terms
        self._body_len = array("i")  # and its body's

    def __len__(self) -> int:
        return len(self._title_len)

    def add(self, title: str, body: str) -> int:
        """Index one document; returns its number."""
        doc = len(self._title_len)
        counts, title_len, body_len = field_counts(self.analyzer, title, body)
        append_postings(self._terms, self._docs, self._tfs, doc, counts)
        self._title_len.append(title_len)
        self._body_len.append(body_len)
        return doc

    def frozen(self) -> tuple[list[list[int]], list[tuple[str, array[int], array[int]]]]:
        """A copy of the postings (each document's ``[title length, body length]``, and each term's
        documents and packed counts) that later additions leave alone: a snapshot is written from
        it outside the store's lock."""
        terms = list(self._terms)
        lengths = [list(pair) for pair in zip(self._title_len, self._body_len, strict=True)]
        return lengths, [
            (term, array("i", self._docs[i]), array("i", self._tfs[i])) for i, term in enumerate(terms)
        ]

    def restore(self, lengths: list[list[int]], postings: Iterable[list[Any]]) -> None:
        """Hold the postings :meth:`frozen` gave, read back as ``[term, docs, counts]`` lists (a
        ValueError or TypeError when they are not)."""
        self._title_len = array("i", (int(t) for t, _ in lengths))
        self._body_len = array("i", (int(b) for _, b in lengths))
        for term, docs, tfs in postings:
            if len(docs) != len(tfs) or str(term) in self._terms:
                raise ValueError("a posting list is not one")
            self._terms[str(term)] = len(self._docs)
            self._docs.append(array("i", docs))
            self._tfs.append(array("i", tfs))

    def scores(self, query: str, present: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """BM25F of every document for ``query``, over the corpus ``present`` describes: for each
        document, how many of the searched items hold it (0: not in the corpus now). A document
        outside it scores 0."""
        n_docs = len(present)
        out = np.zeros(n_docs, dtype=np.float32)
        population = int(present.sum())
        if population == 0:
            return out
        title_len = np.asarray(self._title_len[:n_docs], dtype=np.float32)
        body_len = np.asarray(self._body_len[:n_docs], dtype=np.float32)
        title_norm, body_norm = field_norms(
            title_len,
            body_len,
            float((title_len * present).sum()) / population,
            float((body_len * present).sum()) / population,
        )
        for term in dict.fromkeys(self.analyzer.terms(query)):
            number = self._terms.get(term)
            if number is None:
                continue
            docs = np.asarray(self._docs[number], dtype=np.intp)
            packed = np.asarray(self._tfs[number], dtype=np.int32)
            inside = docs < n_docs  # documents added after ``present`` was counted
            docs, packed = docs[inside], packed[inside]
            held = present[docs] > 0
            df = int(present[docs].sum())
            if df == 0:
                continue
            docs, packed = docs[held], packed[held]
            out[docs] += term_scores(df, population, packed, title_norm[docs], body_norm[docs])
        return out
