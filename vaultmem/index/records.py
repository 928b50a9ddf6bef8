"""Value types of the index and the SQL filter they compile to.

A :class:`NoteRecord` is what the vault core hands the index; :class:`SearchFilters` is pushed down
into both search legs as a LanceDB ``where`` prefilter, so scoping happens before ranking.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, NamedTuple

from vaultmem.errors import InvalidInput

__all__ = [
    "DEFAULT_STATUSES",
    "NoteRecord",
    "SearchFilters",
    "SearchHit",
    "SearchResult",
    "embedding_text",
    "is_blank",
    "lexical_fields",
    "sql_literal",
    "text_hash",
]

#: Statuses searched when a caller names none: live notes, i.e. filed and awaiting review.
DEFAULT_STATUSES: frozenset[str] = frozenset({"active", "unfiled"})


class NoteRecord(NamedTuple):
    """One note as the index stores it. ``path`` is vault-relative POSIX; dates are ISO strings.
    A named tuple: a start builds one per note (docs/architecture.md, "Starting fast")."""

    id: str
    path: str
    slug: str
    title: str
    kind: str
    status: str
    project: str | None
    tags: tuple[str, ...]
    text: str
    content_hash: str
    created: str
    updated: str
    #: The writing session (``source.session``: the MCP session that wrote the note), None for
    #: notes written by hand or at the CLI; the context step links a session's notes in order.
    session: str | None = None

    @classmethod
    def all_from_columns(cls, columns: Sequence[Sequence[Any]]) -> list[NoteRecord]:
        """The records of these columns, one per field in field order, of one length each (a
        snapshot's): made by ``tuple.__new__`` in C, not by the named tuple's ``__new__`` in Python
        once per record (0.16 s at 100k notes, profiled)."""
        if len(columns) != len(cls._fields):
            raise ValueError(f"{len(columns)} columns for the {len(cls._fields)} fields of a record")
        made: list[NoteRecord] = list(map(tuple.__new__, repeat(cls), zip(*columns, strict=True)))
        return made

    def but(self, **changes: Any) -> NoteRecord:
        """This record with ``changes`` (field name -> value) made."""
        return self._replace(**changes)


@dataclass(frozen=True)
class SearchFilters:
    """Scope of a search, applied inside both legs before ranking.

    ``statuses`` defaults to the live statuses (``active`` and ``unfiled``); ``None`` means any
    status. ``deleted`` notes are excluded unless ``include_deleted`` is set or ``deleted`` is
    named in ``statuses``. ``project`` and ``kind`` match exactly; every tag in ``tags`` must be
    on the note.
    """

    statuses: frozenset[str] | None = DEFAULT_STATUSES
    project: str | None = None
    kind: str | None = None
    tags: frozenset[str] = field(default_factory=frozenset)
    include_deleted: bool = False

    def to_sql(self) -> str | None:
        """The LanceDB ``where`` clause for these filters (``None`` when nothing is filtered)."""
        clauses: list[str] = []
        if self.statuses is not None:
            statuses = set(self.statuses)
            if self.include_deleted:
                statuses.add("deleted")
            if not statuses:
                raise InvalidInput("statuses must name at least one status, or be None for any")
            clauses.append(f"status IN ({', '.join(sql_literal(s) for s in sorted(statuses))})")
        elif not self.include_deleted:
            clauses.append("status <> 'deleted'")
        if self.project is not None:
            clauses.append(f"project = {sql_literal(self.project)}")
        if self.kind is not None:
            clauses.append(f"kind = {sql_literal(self.kind)}")
        for tag in sorted(self.tags):
            clauses.append(f"array_has(tags, {sql_literal(tag)})")
        return " AND ".join(clauses) if clauses else None


@dataclass(frozen=True)
class SearchHit:
    """A ranked note with the scores that placed it.

    ``match_source`` lists the legs that found it (``bm25``, ``embedding``). ``similarity`` is the
    cosine of the vector leg, ``relevance`` its calibrated value in [0, 1]; ``low_confidence``
    marks a vector-only hit below the strong-match floor.
    """

    record: NoteRecord
    score: float
    match_source: tuple[str, ...]
    bm25_score: float | None = None
    similarity: float | None = None
    relevance: float | None = None
    low_confidence: bool = False
    #: The body span of the long note's window that matched best (None: its start, or a short
    #: note): where a snippet should come from.
    span: tuple[int, int] | None = None
    #: The score on the cross-query scale (:mod:`vaultmem.index.calibration`): a strong match near
    #: 1, the best hit of an unrelated query low; None for a single leg's answer.
    calibrated: float | None = None


@dataclass(frozen=True)
class SearchResult:
    """Hits in rank order plus what the service reports in ``meta``."""

    hits: list[SearchHit]
    total: int
    filtered_out: int = 0
    degraded: bool = False
    warnings: tuple[str, ...] = ()


def sql_literal(value: str) -> str:
    """Quote ``value`` as a SQL string literal (single quotes doubled; NUL refused)."""
    if "\x00" in value:
        raise InvalidInput("a filter value may not contain a NUL character")
    return "'" + value.replace("'", "''") + "'"


def sql_in(column: str, values: Iterable[str]) -> str:
    """``column IN ('a', 'b')`` with escaped literals."""
    return f"{column} IN ({', '.join(sql_literal(v) for v in values)})"


def lexical_fields(record: NoteRecord) -> tuple[str, str]:
    """The two fields the lexical (BM25F) leg indexes: the title, and the body followed by the tags."""
    body = record.text if not record.tags else f"{record.text}\n{' '.join(record.tags)}"
    return record.title, body


def embedding_text(record: NoteRecord) -> str:
    """The text the vector leg embeds: title and body."""
    return "\n".join(p for p in (record.title, record.text) if p)


#: A letter or a digit: a body without one (empty, whitespace, a bare ``#`` or ``- [ ]``) says nothing.
_CONTENT = re.compile(r"[^\W_]")


def is_blank(record: NoteRecord) -> bool:
    """Whether a note's body holds no word (an empty ``Untitled.md``, frontmatter alone, blank
    lines, list markers): such a note is never a search hit. Its title alone is not searched,
    since an empty note's vector is the title's (or the empty text's), which sits near every short
    query (the empty text's cosine with "banana" is 0.31 under MiniLM, above the 0.22 gate)."""
    return _CONTENT.search(record.text) is None


def text_hash(text: str) -> str:
    """Key of a text in the embedding cache (together with the model id)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_search(query: str, k: int) -> None:
    """Refuse a search with no words or asking for no results (the present's and the past's alike)."""
    if not query.strip():
        raise InvalidInput("the search query is empty; pass some words to search for")
    if k < 1:
        raise InvalidInput("k (the number of results) must be at least 1")
