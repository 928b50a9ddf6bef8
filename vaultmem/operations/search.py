"""The one search entry point, and ``memory_search`` shaped from it.

:meth:`Search.hits` is how every tool searches the index (``memory_search``, and ``memory_recall``'s
search, clusters and context, which shape their answers in :mod:`vaultmem.operations.recall`);
:meth:`Search.ids_with_prefix` resolves an id prefix for both. ``memory_search`` looks an id up
first, then runs the hybrid search.

Scopes (the ``scope`` argument):

- ``all`` (default): every project and notes with no project.
- ``project``: only the notes of ``project`` (which is then required).
- ``global``: only notes with no project (conventions, preferences, personal notes).

``project`` given with scope ``all`` restricts to that project too: naming a project always scopes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from typing_extensions import TypedDict

from vaultmem.errors import ContractError, IndexError_, InvalidInput
from vaultmem.index import records
from vaultmem.index.records import DEFAULT_STATUSES, NoteRecord, SearchFilters
from vaultmem.notes.ids import canonical_id, compact_hex, is_full_id, is_id_prefix
from vaultmem.notes.model import parse_time
from vaultmem.operations.context import Context
from vaultmem.operations.results import visible_tags
from vaultmem.vault.reading import file_hash

SCOPES = ("all", "project", "global")
SNIPPET_CHARS = 200
MAX_LIMIT = 100
ID_PREFIX_HARD_CAP = 100
#: A query is words to look for, not a document: longer ones cost seconds and hundreds of MB in BM25.
MAX_QUERY_CHARS = 4000


class SearchHit(TypedDict):
    id: str
    slug: str
    score: float
    status: str
    kind: str
    tags: list[str]
    snippet: str


class SearchResult(TypedDict):
    results: list[SearchHit]
    total: int
    cursor: None


@dataclass(frozen=True)
class SearchRequest:
    query: str
    scope: str = "all"
    project: str | None = None
    kind: str | None = None
    limit: int = 20
    include_deleted: bool = False
    #: The memory as it was then (an ISO date-time or a commit id): :mod:`vaultmem.operations.as_of`.
    as_of: str | None = None

    def validated(self) -> SearchRequest:
        if not isinstance(self.query, str) or not self.query.strip():
            raise InvalidInput("query is empty; pass the words or the id to search for")
        if len(self.query) > MAX_QUERY_CHARS:
            raise InvalidInput(
                f"query is {len(self.query):,} characters; the most is {MAX_QUERY_CHARS:,}: "
                "search for the key words or a short passage"
            )
        if self.scope not in SCOPES:
            raise InvalidInput(f"scope {self.scope!r} is not one of {', '.join(SCOPES)}")
        if self.scope == "project" and not self.project:
            raise InvalidInput("scope 'project' needs a project name in `project`")
        if (
            isinstance(self.limit, bool)
            or not isinstance(self.limit, int)
            or not 1 <= self.limit <= MAX_LIMIT
        ):
            raise InvalidInput(f"limit must be a whole number from 1 to {MAX_LIMIT}")
        return self


class NoteReader(Protocol):
    """What a search reads: the index, or the memory as it was at one moment (``as_of``)."""

    def get(self, note_id: str) -> NoteRecord | None: ...
    def get_many(self, ids: Sequence[str]) -> dict[str, NoteRecord]: ...
    def ids_with_prefix(self, hexprefix: str, limit: int = 100) -> list[str]: ...
    def search(
        self, query: str, filters: SearchFilters, k: int, *, min_relevance: float | None = None
    ) -> records.SearchResult: ...
    def search_vector(self, query: str, filters: SearchFilters, k: int) -> records.SearchResult: ...


class Search:
    """Searching the index: the one entry point every tool's search goes through."""

    def __init__(self, ctx: Context, reader: NoteReader | None = None) -> None:
        self.ctx = ctx
        self._reader = reader  # None: the index as it is now

    @property
    def index(self) -> NoteReader:
        """What this search reads: the index, or the past it was given."""
        return self.ctx.index if self._reader is None else self._reader

    def at(self, as_of: str) -> Search:
        """The same search over the memory as it was at ``as_of`` (a date-time or a commit)."""
        return Search(self.ctx, self.ctx.past.view(as_of))

    def hits(
        self,
        query: str,
        filters: SearchFilters,
        limit: int,
        *,
        hybrid: bool = True,
        min_relevance: float | None = None,
    ) -> records.SearchResult:
        """The index's ranked hits: hybrid (BM25 + vector, fused, gated at ``min_relevance``, the
        calibration's gate by default), or the vector leg alone; a vector leg that is down makes
        the answer ``degraded`` with a warning, never an error."""
        index = self.index
        if hybrid:
            return index.search(query, filters, limit, min_relevance=min_relevance)
        try:
            return index.search_vector(query, filters, limit)
        except IndexError_ as exc:  # the vector leg is down: say so, answer nothing rather than fail
            return records.SearchResult(
                hits=[], total=0, degraded=True, warnings=(f"vector search unavailable: {exc}",)
            )

    def ids_with_prefix(self, query: str) -> list[str]:
        """The ids an id prefix of 13+ hex digits names (a timestamp window), at most
        :data:`ID_PREFIX_HARD_CAP`, in id order."""
        return self.index.ids_with_prefix(compact_hex(query), limit=ID_PREFIX_HARD_CAP)

    def memory_search(self, req: SearchRequest) -> SearchResult:
        """Answer ``memory_search``: ``{results, total, cursor: null}``.

        A full UUID returns that note whatever its status or project (an explicit reference),
        except a forgotten one without ``include_deleted``; a hex prefix of at least 13 digits is a
        timestamp window that honours the scope; an id-shaped query that addresses nothing falls
        back to the ordinary search for the same text.
        """
        self.check_kind_filter(req.kind)
        req = req.validated()
        if req.as_of is not None:  # the same search over the memory as it was then
            return self.at(req.as_of).memory_search(dataclasses.replace(req, as_of=None))
        filters = filters_for(req)
        query = req.query.strip()
        index = self.index
        if is_full_id(query):
            record = index.get(canonical_id(query))
            # Any status, but a forgotten memory only with include_deleted ("The server excludes
            # the entry from all tool responses. You must pass include_deleted: true ... to see it").
            if record is not None and (req.include_deleted or record.status != "deleted"):
                return SearchResult(results=[shape(record, 1.0)], total=1, cursor=None)
        elif is_id_prefix(query):
            found = index.get_many(self.ids_with_prefix(query))
            matched = [found[i] for i in sorted(found) if _in_scope(found[i], req, filters)]
            if matched:
                shaped = [shape(r, 1.0) for r in matched[: req.limit]]
                return SearchResult(results=shaped, total=len(matched), cursor=None)
        result = self.hits(query, filters, req.limit * 3 if req.scope == "global" else req.limit)
        hits = [h for h in result.hits if req.scope != "global" or not h.record.project]
        # total: the matches found (after the relevance gate), which may exceed what `limit` returns.
        total = max(len(hits), result.total - result.filtered_out) if req.scope != "global" else len(hits)
        return SearchResult(
            results=[shape(h.record, _score(h), h.span) for h in hits[: req.limit]], total=total, cursor=None
        )

    def before_start(self, req: SearchRequest) -> SearchResult | None:
        """``memory_search`` answered while a server's start still scans the vault, if the index
        alone answers it and every hit it shows is its file as it is on disk (the sha256 of its
        bytes the index recorded); None otherwise (then wait for the start). It may miss a note
        written while vaultmem was stopped, never show one as it no longer is."""
        if req.kind is not None or req.as_of is not None:  # the catalog's kinds, the history
            return None
        result = self.memory_search(req)
        records = self.index.get_many([hit["id"] for hit in result["results"]])
        for hit in result["results"]:
            record = records.get(hit["id"])
            if record is None or self._file_hash(record.path) != record.content_hash:
                return None
        return result

    def _file_hash(self, rel: str) -> str | None:
        """The sha256 of the note file at ``rel`` as the scan reads it: None for a symlink out of
        the vault, which the scan never follows (so the start drops the note), even with the same bytes."""
        try:
            return file_hash(self.ctx.layout.resolve(rel))
        except InvalidInput:
            return None

    def check_kind_filter(self, kind: str | None) -> None:
        """Refuse a ``kind`` filter no note can match: neither a kind (or alias) of the filing
        contract nor the kind of any note in the vault (a person's notes may carry kinds of their
        own). Reads work without a valid contract; the kind is not checked then."""
        if kind is None:
            return
        try:
            contract = self.ctx.contract()
        except ContractError:
            return
        known = {*contract.kinds, *contract.aliases}
        if kind in known or any(e.kind == kind for e in self.ctx.catalog.entries()):
            return
        raise InvalidInput(
            f"kind {kind!r} is no kind of the filing contract ({contract.path}) nor of any note, so "
            f"nothing can match; use one of {', '.join(sorted(known))}"
        )


def snippet(body: str, span: tuple[int, int] | None = None) -> str:
    """200 characters of the body, whitespace collapsed: from its start, or from the start of the
    window of a long note that matched (``span``)."""
    start = 0 if span is None else max(0, min(span[0], len(body)))
    return " ".join(body[start:].split())[:SNIPPET_CHARS]


def shape(record: NoteRecord, score: float, span: tuple[int, int] | None = None) -> SearchHit:
    return SearchHit(
        id=record.id,
        slug=record.slug,
        score=round(float(score), 4),
        status=record.status,
        kind=record.kind,
        tags=visible_tags(record.tags),
        snippet=snippet(record.text, span),
    )


def _score(hit: records.SearchHit) -> float:
    """``memory_search``'s score: the cross-query one (what 0.5 means: docs/tools.md)."""
    return hit.score if hit.calibrated is None else hit.calibrated


def filters_for(req: SearchRequest) -> SearchFilters:
    statuses = None if req.include_deleted else DEFAULT_STATUSES
    return SearchFilters(
        statuses=statuses,
        project=req.project if req.scope != "global" else None,
        kind=req.kind,
        include_deleted=req.include_deleted,
    )


def _in_scope(record: NoteRecord, req: SearchRequest, filters: SearchFilters) -> bool:
    if filters.statuses is not None and record.status not in filters.statuses:
        return False
    if req.scope == "global" and record.project:
        return False
    if filters.project is not None and record.project != filters.project:
        return False
    return filters.kind is None or record.kind == filters.kind


def recency_score(updated: str, now: dt.datetime, half_life_days: float) -> float:
    """1.0 for a note updated now, 0.5 one half-life ago, ... (0 when the date is unreadable)."""
    when = parse_time(updated)
    if when is None or half_life_days <= 0:
        return 0.0
    age_days = max(0.0, (now - when).total_seconds() / 86400)
    return float(0.5 ** (age_days / half_life_days))
