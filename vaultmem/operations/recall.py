"""``memory_recall``: search, get, context, chain, clusters and list over the vault's thoughts.

``memory_search`` and ``memory_recall`` read the same index. The order of a search is the graph
document's: candidates inside the scope (status, project, tag, cluster shape, importance) →
standing annotated (and suppressed on request) → the relevance gate → the ``limit`` slice. The pool
is over-fetched so gated and filtered rows are backfilled.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from vaultmem.errors import InvalidInput
from vaultmem.index.records import SearchFilters, SearchHit, SearchResult
from vaultmem.notes.ids import canonical_id, is_full_id, is_id_prefix
from vaultmem.notes.links import TEXT_LINK, Edge
from vaultmem.operations.as_of import PastLookup, refuse_edges
from vaultmem.operations.context import Context
from vaultmem.operations.lookup import Lookup
from vaultmem.operations.results import (
    STATUS_FILTERS,
    Answer,
    Json,
    Payload,
    Row,
    Scope,
    Thought,
    WithColumns,
    status_filter,
)
from vaultmem.operations.search import Search, recency_score
from vaultmem.vault.entry import Entry

MAX_SEARCH_LIMIT = 100
MAX_LIST_LIMIT = 500
DEFAULT_SEARCH_LIMIT = 10
MODES = ("flag", "suppress")
#: What ``chain`` walks: the lineage edges, and the links written in a note's text (in a person's
#: notes a body link is the only way lineage is written down; docs/architecture.md says why).
CHAIN_TYPES = frozenset({"parent", "develops", TEXT_LINK})
MAX_DEGREE = 10
#: Largest candidate pool one search asks the index for while backfilling.
MAX_POOL = 2000


#: Neighbours per direction in one answer of get (include_edges), context and chain.
DEFAULT_NEIGHBOURS = 50
MAX_NEIGHBOURS = 500


@dataclass(frozen=True)
class NeighbourPage:
    """Which of a thought's neighbours one answer carries, per direction (checked)."""

    limit: int
    offset: int

    @staticmethod
    def of(limit: int | None = None, offset: int = 0) -> NeighbourPage:
        size = check_int("limit", DEFAULT_NEIGHBOURS if limit is None else limit, 1, MAX_NEIGHBOURS)
        return NeighbourPage(size, check_offset(offset))


def _in_order(edges: Iterable[Edge]) -> list[Edge]:
    """Edges oldest first (ties by id): the same order on every call, so pages do not overlap."""
    return sorted(edges, key=lambda e: (e.created_at, e.id))


@dataclass(frozen=True)
class SearchSpec:
    """A search (``search``, ``clusters``, the query path of ``context``), arguments checked."""

    query: str
    statuses: frozenset[str]
    project: str | None = None
    tag: str | None = None
    is_cluster: bool | None = None
    min_importance: float | None = None
    limit: int = 10
    hybrid: bool = True
    min_relevance: float | None = None
    recency_weight: float = 0.0
    recency_half_life_days: float = 30.0
    supersession_mode: str = "flag"
    contradiction_mode: str = "flag"
    group_by_cluster: bool = False
    verbose: bool = False  # compact: false: ranking metadata on every item
    #: The memory as it was then (an ISO date-time or a commit id): :mod:`vaultmem.operations.as_of`.
    as_of: str | None = None

    def scoped(self, scope: Scope) -> SearchSpec:
        """The same search, filtered on the project ``scope`` names."""
        return dataclasses.replace(self, project=scope.project)

    def with_status(self, status: str | None) -> SearchSpec:
        """The same search over the statuses a graph tool's ``status`` names (default: active)."""
        return dataclasses.replace(self, statuses=status_filter(status, "active"))

    def checked(self) -> SearchSpec:
        if not isinstance(self.query, str) or not self.query.strip():
            raise InvalidInput("query is required: pass the words (or the id) to search for")
        check_int("limit", self.limit, 1, MAX_SEARCH_LIMIT)
        for name in ("supersession_mode", "contradiction_mode"):
            if getattr(self, name) not in MODES:
                raise InvalidInput(f"{name} must be one of {', '.join(MODES)}")
        if self.min_relevance is not None and not 0 <= self.min_relevance <= 1:
            raise InvalidInput("min_relevance is on the calibrated 0-1 scale; 0 turns the gate off")
        if self.min_importance is not None and not 0 <= self.min_importance <= 1:
            raise InvalidInput("min_importance must be between 0 and 1 (importance is a 0-1 score)")
        if not 0 <= self.recency_weight <= 1:
            raise InvalidInput("recency_weight must be between 0 and 1")
        if self.recency_half_life_days <= 0:
            raise InvalidInput("recency_half_life_days must be more than 0")
        return self


def check_int(name: str, value: Json, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{name} must be a whole number from {low} to {high}")
    return value


def check_offset(value: Json) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput("offset must be a whole number, 0 or more")
    return value


@dataclass
class _Candidate:
    entry: Entry
    hit: SearchHit | None  # None for an id hit
    score: float
    recency: float | None = None


class Recall:
    """The read actions of the graph tools."""

    def __init__(self, ctx: Context, search: Search, lookup: Lookup | None = None) -> None:
        self.ctx = ctx
        self.lookup = ctx.lookup if lookup is None else lookup
        self.finder = search

    def at(self, as_of: str) -> Recall:
        """The same reads over the memory as it was at ``as_of`` (a date-time or a commit)."""
        view = self.ctx.past.view(as_of)
        return Recall(self.ctx, Search(self.ctx, view), PastLookup(self.ctx, view))

    # -- search / clusters ------------------------------------------------------------------------
    def search(self, spec: SearchSpec, action: str = "search") -> Answer:
        spec = spec.checked()
        if spec.as_of is not None:  # the same search over the memory as it was then
            if spec.group_by_cluster:
                raise refuse_edges("group_by_cluster")
            return self.at(spec.as_of).search(dataclasses.replace(spec, as_of=None), action)
        query = spec.query.strip()
        warnings: list[str] = []
        if is_full_id(query) or is_id_prefix(query):
            answer = self._id_lookup(query, spec, action)
            if answer is not None:
                return answer
            warnings.append(
                f'id_not_found: "{query}" is id-shaped but no thought carries it — the answer is a normal '
                "search for that text"
            )
        answer = self._text_search(query, spec, action)
        answer.warnings[:0] = warnings
        if warnings and answer.counts["total"] == 0:
            answer.reason = "id_not_found"
        return answer

    def _fits(self, entry: Entry, spec: SearchSpec, *, scoped: bool) -> bool:
        if spec.is_cluster is not None and entry.is_cluster != spec.is_cluster:
            return False  # the cluster shape applies to every form, a full id included
        if not scoped:
            return True
        if entry.status not in spec.statuses:
            return False
        if spec.project is not None and entry.project != spec.project:
            return False
        if spec.tag is not None and spec.tag not in entry.all_tags:  # body #tags count too
            return False
        return spec.min_importance is None or (entry.importance or 0.0) >= spec.min_importance

    def _id_lookup(self, query: str, spec: SearchSpec, action: str) -> Answer | None:
        if is_full_id(query):
            # An explicit reference: status, project, tag and importance do not apply; the gate never
            # runs. A forgotten memory is left out of every tool all the same (memory-tools document).
            entry = self.lookup.entry(canonical_id(query))
            matched = (
                [entry]
                if entry is not None and entry.status != "deleted" and self._fits(entry, spec, scoped=False)
                else []
            )
        else:
            # A timestamp window, not a reference: it honours the call's status and project scope.
            ids = self.finder.ids_with_prefix(query)
            found = [self.lookup.entry(i) for i in ids]
            matched = [
                e for e in found
                if e is not None and e.status in spec.statuses
                and (spec.project is None or e.project == spec.project) and self._fits(e, spec, scoped=False)
            ]  # fmt: skip
        if not matched:
            return None
        candidates = [_Candidate(e, None, 1.0) for e in matched]
        items = self._items(candidates[: spec.limit], spec, id_hits=True)
        answer = Answer.many(action, items, total=len(matched))
        if len(matched) > 1:
            answer.reason = "ambiguous_id"
        return answer

    def _text_search(self, query: str, spec: SearchSpec, action: str) -> Answer:
        filters = SearchFilters(
            statuses=spec.statuses,
            project=spec.project,
            tags=frozenset([spec.tag]) if spec.tag else frozenset(),
        )
        pool = max(50, spec.limit * 4)
        while True:
            result = self.finder.hits(query, filters, pool, hybrid=spec.hybrid, min_relevance=0.0)
            candidates, kept = self._candidates(result, spec)
            exhausted = len(result.hits) < pool or pool >= MAX_POOL
            if exhausted or len(kept) >= spec.limit:
                break
            pool = min(MAX_POOL, pool * 4)
        filtered_out = len(candidates) - len(kept)
        items = self._items(kept[: spec.limit], spec, id_hits=False)
        answer = Answer.many(action, items, total=len(candidates), filtered_out=filtered_out)
        answer.degraded = result.degraded
        answer.warnings = list(result.warnings)
        if not candidates:
            answer.reason = "no_match"
        return answer

    def _candidates(
        self, result: SearchResult, spec: SearchSpec
    ) -> tuple[list[_Candidate], list[_Candidate]]:
        """(candidates after scope and standing filters, those that also pass the gate), ranked."""
        gate = self.ctx.calibration.min_relevance if spec.min_relevance is None else spec.min_relevance
        entries = {h.record.id: self.lookup.entry(h.record.id) for h in result.hits}
        now = self.ctx.now()
        candidates: list[_Candidate] = []
        for hit in result.hits:
            entry = entries.get(hit.record.id)
            if entry is None or not self._fits(entry, spec, scoped=True):
                continue
            standing = self.lookup.edges.standing(hit.record.id, entry.status, self.lookup.is_live)
            if spec.supersession_mode == "suppress" and standing.standing == "superseded":
                continue
            if spec.contradiction_mode == "suppress" and standing.standing == "contradicted":
                continue
            candidate = _Candidate(entry, hit, hit.score)
            if spec.recency_weight > 0:
                candidate.recency = recency_score(hit.record.updated, now, spec.recency_half_life_days)
            candidates.append(candidate)
        if spec.recency_weight > 0 and candidates:
            top = max(c.score for c in candidates) or 1.0
            for c in candidates:
                c.score = (1 - spec.recency_weight) * (c.score / top) + spec.recency_weight * (
                    c.recency or 0.0
                )
            candidates.sort(key=lambda c: c.score, reverse=True)
        kept = [c for c in candidates if not _gated(c.hit, gate)]
        return candidates, kept

    def _items(self, candidates: list[_Candidate], spec: SearchSpec, *, id_hits: bool) -> list[Payload]:
        thoughts = self.lookup.thoughts(c.entry for c in candidates)
        items: list[Row] = []
        for c in candidates:
            note_id = self.lookup.id_of(c.entry)
            standing = self.lookup.edges.standing(note_id, c.entry.status, self.lookup.is_live)
            item: Row = {"thought": thoughts[note_id]}
            if standing.standing != "current" or spec.verbose:
                item["standing"] = standing.standing
            if standing.superseded_by:
                item["superseded_by"] = list(standing.superseded_by)
            if standing.contradicted_by:
                item["contradicted_by"] = list(standing.contradicted_by)
            low = bool(c.hit is not None and c.hit.low_confidence)
            if low or spec.verbose:
                item["low_confidence"] = low
            if spec.verbose:
                item["scores"] = _scores(c)
                item["match_source"] = ["id"] if id_hits or c.hit is None else list(c.hit.match_source)
            items.append(item)
        return self._grouped(items) if spec.group_by_cluster else list[Payload](items)

    def _grouped(self, items: list[Row]) -> list[Payload]:
        """Fold hits that belong to a cluster under that cluster, at its best member's rank."""
        out: list[Payload] = []
        groups: dict[str, list[Payload]] = {}
        for item in items:
            thought = item["thought"]
            assert isinstance(thought, Thought)
            clusters = sorted(
                e.source_id for e in self.lookup.edges.incoming(thought.id) if e.type == "cluster"
            )
            if not clusters:
                out.append(item)
                continue
            members = groups.get(clusters[0])
            if members is None:
                cluster = self.lookup.thought_by_id(clusters[0])
                if cluster is None:
                    out.append(item)
                    continue
                members = groups[clusters[0]] = []
                out.append({"thought": cluster, "members": members})
            members.append(item)
        return out

    # -- get ----------------------------------------------------------------------------------------
    def get(
        self,
        thought_id: str | None,
        include_edges: bool,
        as_of: str | None = None,
        page: NeighbourPage | None = None,
    ) -> Answer:
        if as_of is not None:  # the thought as it was then
            if include_edges:
                raise refuse_edges("include_edges")
            return self.at(as_of).get(thought_id, False)
        page = page or NeighbourPage.of()
        entry = self.lookup.require(thought_id)
        thought = self.lookup.thought(entry)
        if not include_edges:
            return Answer.one("get", thought)
        found = {
            "upstream": self._alive(
                (e, e.target_id, 1) for e in _in_order(self.lookup.edges.outgoing(thought.id))
            ),
            "downstream": self._alive(
                (e, e.source_id, 1) for e in _in_order(self.lookup.edges.incoming(thought.id))
            ),
        }
        neighbours, counts, warnings = self._paged(found, page, with_degree=False)
        answer = Answer.one("get", WithColumns(thought, neighbours), **counts)
        answer.warnings.extend(warnings)
        return answer

    def _alive(self, edges: Iterable[tuple[Edge, str, int]]) -> list[tuple[Edge, Entry, int]]:
        """The edges whose other end is a thought (not forgotten), with its entry; no body read."""
        out = []
        for edge, other_id, degree in edges:
            other = self.lookup.entry(other_id)
            if other is not None and other.status != "deleted":
                out.append((edge, other, degree))
        return out

    def _paged(
        self, found: dict[str, list[tuple[Edge, Entry, int]]], page: NeighbourPage, with_degree: bool
    ) -> tuple[Row, dict[str, int], list[str]]:
        """One page of each direction's neighbours, as rows ``{edge, thought[, degree]}``, with the
        counts of the page and of each direction, and a warning for each direction the page cut.

        A note a person made into a map of content links to thousands: every neighbour with its
        text would make an answer of megabytes no agent can read, so the neighbours are paged like
        a list (``limit``/``offset``), and the bodies are read for the page only."""
        rows: Row = {}
        counts = {"limit": page.limit, "offset": page.offset}
        warnings: list[str] = []
        for direction, every in found.items():
            shown = every[page.offset : page.offset + page.limit]
            thoughts = self.lookup.thoughts(entry for _e, entry, _d in shown)
            listed: list[Payload] = []
            for edge, entry, degree in shown:
                row: Row = {"edge": edge.to_dict(), "thought": thoughts[self.lookup.id_of(entry)]}
                if with_degree:
                    row["degree"] = degree
                listed.append(row)
            rows[direction] = listed
            counts[f"{direction}_total"], counts[f"{direction}_returned"] = len(every), len(shown)
            if shown and len(shown) < len(every):
                after = page.offset + len(shown)
                more = f"; the next page: offset {after}" if after < len(every) else ""
                warnings.append(
                    f"{direction}: neighbours {page.offset + 1}-{after} of {len(every)} "
                    f"(limit {page.limit}){more}"
                )
            elif every and not shown:
                warnings.append(
                    f"{direction}: no neighbours from offset {page.offset}; there are {len(every)}"
                )
        return rows, counts, warnings

    # -- chain / context ------------------------------------------------------------------------------
    def walk(
        self, start: str, max_degree: int, types: frozenset[str] | None
    ) -> dict[str, list[tuple[Edge, Entry, int]]]:
        """Breadth-first from ``start``: ``upstream`` follows the links a thought declares (what it
        builds on), ``downstream`` the links declared towards it; each thought once, nearest first."""
        out: dict[str, list[tuple[Edge, Entry, int]]] = {}
        for direction in ("upstream", "downstream"):
            seen = {start}
            frontier = [start]
            found: list[tuple[Edge, Entry, int]] = []
            for degree in range(1, max_degree + 1):
                nxt: list[str] = []
                for node in frontier:
                    edges = (
                        self.lookup.edges.outgoing(node)
                        if direction == "upstream"
                        else self.lookup.edges.incoming(node)
                    )
                    for e in _in_order(edges):
                        if types is not None and e.type not in types:
                            continue
                        other = e.target_id if direction == "upstream" else e.source_id
                        if other in seen:
                            continue
                        seen.add(other)
                        alive = self._alive([(e, other, degree)])
                        if alive:
                            found.extend(alive)
                            nxt.append(other)
                frontier = nxt
                if not frontier:
                    break
            out[direction] = found
        return out

    def _walked(
        self,
        action: str,
        thought: Thought,
        max_degree: int,
        types: frozenset[str] | None,
        page: NeighbourPage,
    ) -> Answer:
        rows, counts, warnings = self._paged(self.walk(thought.id, max_degree, types), page, with_degree=True)
        item: Row = {"thought": thought, **rows} if action == "chain" else {"thought": thought, "chain": rows}
        answer = Answer.one(action, item, **counts)
        answer.warnings.extend(warnings)
        return answer

    def chain(self, thought_id: str | None, max_degree: int, page: NeighbourPage | None = None) -> Answer:
        check_int("max_degree", max_degree, 1, MAX_DEGREE)
        entry = self.lookup.require(thought_id)
        thought = self.lookup.thought(entry)
        return self._walked("chain", thought, max_degree, CHAIN_TYPES, page or NeighbourPage.of())

    def context(
        self,
        spec: SearchSpec | None,
        thought_id: str | None,
        max_degree: int,
        page: NeighbourPage | None = None,
    ) -> Answer:
        """A thought (by id, or the best match of a query) and its neighbourhood. The query asks
        for the single best match, so the noise gate stays off."""
        check_int("max_degree", max_degree, 1, MAX_DEGREE)
        page = page or NeighbourPage.of()
        if thought_id:
            thought = self.lookup.thought(self.lookup.require(thought_id))
            return self._walked("context", thought, max_degree, None, page)
        if spec is None or not spec.query:
            raise InvalidInput("context needs a query (best match + its neighbourhood) or a thought_id")
        spec = dataclasses.replace(spec, min_relevance=0.0, limit=DEFAULT_SEARCH_LIMIT)
        found = self.search(spec, action="context")
        best = next((t for i in found.items if isinstance(t := _head(i), Thought)), None)
        if best is None:
            answer = Answer.one("context", None)
            answer.reason = "no_match"
            answer.degraded, answer.warnings = found.degraded, found.warnings
            return answer
        answer = self._walked("context", best, max_degree, None, page)
        answer.degraded, answer.warnings = found.degraded, [*found.warnings, *answer.warnings]
        return answer

    # -- list -----------------------------------------------------------------------------------------
    def list(
        self,
        statuses: frozenset[str],
        project: str | None,
        tag: str | None,
        is_cluster: bool | None,
        limit: int,
        offset: int,
    ) -> Answer:
        check_int("limit", limit, 1, MAX_LIST_LIMIT)
        check_offset(offset)
        rows = [
            e for e in self.ctx.catalog.entries()
            if e.status in statuses
            and (project is None or e.project == project)
            and (tag is None or tag in e.all_tags)
            and (is_cluster is None or e.is_cluster == is_cluster)
        ]  # fmt: skip
        # Newest first; the id breaks ties, so a page is stable while nothing is written.
        rows.sort(key=lambda e: (e.created or "", self.lookup.id_of(e)), reverse=True)
        page = rows[offset : offset + limit]
        thoughts = self.lookup.thoughts(page)
        items = [thoughts[self.lookup.id_of(e)] for e in page]
        return Answer.many(
            "list", items, total=len(rows), filtered_out=len(rows) - len(items), limit=limit, offset=offset
        )


def _head(item: Payload) -> Payload:
    """The ``thought`` of a search row (a group's cluster for a folded one)."""
    return item.get("thought") if isinstance(item, dict) else None


def _gated(hit: SearchHit | None, gate: float) -> bool:
    """A cosine-only hit below the gate; a BM25 anchor, a context lift or an id is never gated."""
    if hit is None or gate <= 0:
        return False
    anchored = hit.bm25_score is not None or "context" in hit.match_source
    return not anchored and hit.relevance is not None and hit.relevance < gate


def _scores(c: _Candidate) -> dict[str, float]:
    scores: dict[str, float] = {}
    hit = c.hit
    if hit is not None:
        if hit.similarity is not None:
            scores["similarity"] = round(hit.similarity, 6)
            scores["distance"] = round(1.0 - hit.similarity, 6)
        if hit.bm25_score is not None:
            scores["bm25_score"] = round(hit.bm25_score, 6)
        # The cross-query score of the hybrid (docs/tools.md), else the calibrated cosine.
        relevance = hit.calibrated if hit.calibrated is not None else hit.relevance
        if relevance is not None:
            scores["relevance"] = round(relevance, 6)
    if c.recency is not None:
        scores["recency_score"] = round(c.recency, 6)
    scores["final_score"] = round(c.score, 6)
    return scores


__all__ = ["MAX_LIST_LIMIT", "MAX_SEARCH_LIMIT", "STATUS_FILTERS", "Recall", "SearchSpec"]
