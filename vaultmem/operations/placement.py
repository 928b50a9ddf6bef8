"""Placement: where a thought belongs — its project, the edges it should carry, its lifecycle.

One engine serves ``memory_status action=propose`` (a read-only plan) and ``edge_review action=enqueue``
(the same plan's edges queued for review). The plan never leaves one project: the pool is the
project ``cwd`` names, else the project of the addressed thought, else — for draft content — the
default project, which in vaultmem is *no project* (a write without ``cwd`` lands in none).

Scoring: the cosine between the subject's vector (its stored vector from the index's in-memory
matrix; draft content is embedded) and each active thought of the pool, calibrated onto the 0–1
relevance scale of ``memory_recall``; a neighbour below the noise gate is not proposed. A neighbour
that is a cluster thought is proposed as a ``cluster`` edge from the cluster to the subject, any other
as ``related`` from the subject (the placeholder type ``memory_store`` upgrades in place). When the
vector leg is down the plan falls back to BM25 and says ``degraded``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vaultmem.errors import IndexError_, InvalidInput
from vaultmem.index.fusion import calibrate_relevance
from vaultmem.index.records import SearchFilters
from vaultmem.operations import projects
from vaultmem.operations.context import Context
from vaultmem.operations.recall import check_int
from vaultmem.operations.results import Answer, Json, Row, Scope, graph_status
from vaultmem.vault.entry import Entry

#: Edges a plan holds at most (the slim answer shows the first SLIM_EDGES).
MAX_PLANNED_EDGES = 20
SLIM_EDGES = 3
#: A neighbour at least this similar (cosine) is a near duplicate: the lifecycle suggests a merge.
DUPLICATE_SIMILARITY = 0.95
POOL_STATUSES = frozenset({"active"})
PINNED_TO_THOUGHT = "the plan is restricted to the project the addressed thought (thought_id) belongs to"
PINNED_TO_DEFAULT = "the plan is restricted to the default project (draft content)"


@dataclass(frozen=True)
class Subject:
    """What a plan is for: a persisted thought, or draft content that is not stored yet."""

    entry: Entry | None
    content: str

    @property
    def is_draft_content(self) -> bool:
        return self.entry is None


@dataclass(frozen=True)
class PlannedEdge:
    """One proposed edge: the endpoints (``None`` stands for draft content), its type and score."""

    source_id: str | None
    target_id: str | None
    type: str
    score: float
    neighbour: Entry
    signals: Row

    def to_dict(self, include_signals: bool) -> Row:
        out: Row = {
            "source_id": self.source_id,
            "target_id": self.target_id,
            "type": self.type,
            "score": self.score,
            "neighbour": {"id": self.signals["neighbour_id"], "title": self.neighbour.title},
        }
        if include_signals:
            out["signals"] = dict(self.signals)
        return out


@dataclass
class PlacementPlan:
    """The plan: project, edges best first, lifecycle, and how it was reached."""

    subject_id: str | None
    project: str | None
    project_id: str | None
    edges: list[PlannedEdge]
    lifecycle: Row
    degraded: bool
    signals: Row = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self, max_edges: int, include_signals: bool) -> Row:
        best_cluster = next((e for e in self.edges if e.type == "cluster"), None)
        out: Row = {
            "thought_id": self.subject_id,
            "placement": {
                "project": self.project,
                "project_id": self.project_id,
                "cluster": (
                    {
                        "id": best_cluster.signals["neighbour_id"],
                        "title": best_cluster.neighbour.title,
                        "score": best_cluster.score,
                    }
                    if best_cluster is not None
                    else None
                ),
            },
            "edges": [e.to_dict(include_signals) for e in self.edges[:max_edges]],
            "lifecycle": dict(self.lifecycle),
            "degraded": self.degraded,
        }
        if include_signals:
            out["signals"] = dict(self.signals)
        return out


class Placement:
    """Plans placements over the vault's catalog, edge graph and vectors."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.lookup = ctx.lookup

    def subject(self, thought_id: Json, content: Json) -> Subject:
        if thought_id is not None and content is not None:
            raise InvalidInput("pass either thought_id (a stored thought) or content (a draft), not both")
        if thought_id is not None:
            entry = self.lookup.require(thought_id)  # a forgotten thought is a 404
            return Subject(entry, self.lookup.thought(entry).content)
        if not isinstance(content, str) or not content.strip():
            raise InvalidInput("propose needs a thought_id or draft content to plan for")
        return Subject(None, content)

    def propose(
        self,
        thought_id: str | None,
        content: str | None,
        cwd: str | None,
        *,
        max_edges: int | None = None,
        include_signals: bool | None = None,
        compact: bool | None = None,
    ) -> Answer:
        """``memory_status action=propose``: a read-only plan, pinned to one project, slim unless
        asked otherwise.

        The project is ``cwd``'s, else the addressed thought's, else (draft content) the default
        project, which is no project. Slim (the default): the top 3 edges, no signals.
        ``compact: false`` or ``include_signals: true`` give the full plan (every planned edge, the
        signals); ``max_edges`` caps the edges either way. ``counts.total`` is the number of planned
        edges, ``returned`` those in the item and ``filtered_out`` those the slim answer left out.
        """
        scope = projects.scope_for(self.ctx, cwd, reader=False)
        subject = self.subject(thought_id, content)
        project: str | None
        project_id: str | None
        if scope.project is not None:
            project = scope.project
            found = scope.payload.get("project") if scope.payload is not None else None
            project_id = found if isinstance(found, str) else None
        elif subject.entry is not None:
            project = subject.entry.project
            project_id = projects.project_id(self.ctx, project)
        else:
            project, project_id = None, None  # the default project: vaultmem files drafts in no project
        full = compact is False or include_signals is True
        signals = full if include_signals is None else include_signals
        if max_edges is not None:
            shown = check_int("max_edges", max_edges, 1, MAX_PLANNED_EDGES)
        else:
            shown = MAX_PLANNED_EDGES if full else SLIM_EDGES
        plan = self.plan(subject, project, project_id)
        item = plan.to_dict(shown, signals)
        returned = len(plan.edges[:shown])
        answer = Answer.one("propose", item)
        answer.counts = {
            "total": len(plan.edges),
            "returned": returned,
            "filtered_out": len(plan.edges) - returned,
        }
        answer.degraded = plan.degraded
        answer.warnings = list(plan.warnings)
        clause = PINNED_TO_DEFAULT if subject.is_draft_content else PINNED_TO_THOUGHT
        if not scope.given:
            pinned = [f"no cwd — propose is not cross-project: {clause}"]
        elif scope.project is None:
            unknown = f'cwd "{cwd}" matches no known project {projects.RESOLVE_HINT}'
            pinned = [f"{unknown} — propose is not cross-project: {clause}"]
        else:
            pinned = []
        answer.scope = Scope(scope.payload, scope.project, pinned, scope.given)
        return answer

    def plan(
        self, subject: Subject, project: str | None, project_id: str | None, limit: int = MAX_PLANNED_EDGES
    ) -> PlacementPlan:
        """The plan for ``subject`` inside ``project`` (``None``: the thoughts filed in no project)."""
        subject_id = self.lookup.id_of(subject.entry) if subject.entry is not None else None
        linked = self._linked(subject_id)
        pool = [
            e
            for e in self.ctx.catalog.entries()
            if e.status in POOL_STATUSES
            and e.project == project
            and (note_id := self.lookup.id_of(e)) != subject_id
            and note_id not in linked
        ]
        by_id = {self.lookup.id_of(e): e for e in pool}
        degraded = False
        warnings: list[str] = []
        leg = "vector"
        try:
            scored = self._cosines(subject, subject_id, by_id)
        except IndexError_ as exc:
            degraded, leg = True, "bm25"
            warnings.append(f"vector search unavailable ({exc}); the plan uses BM25 only")
            scored = self._bm25(subject, by_id, project)
        gate = self.ctx.calibration.min_relevance
        ranked = sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))
        edges: list[PlannedEdge] = []
        for neighbour_id, similarity in ranked:
            relevance = (
                calibrate_relevance(similarity, self.ctx.calibration) if leg == "vector" else similarity
            )
            if relevance < gate:
                break
            neighbour = by_id[neighbour_id]
            edges.append(self._edge(subject, subject_id, neighbour, neighbour_id, similarity, relevance, leg))
            if len(edges) >= limit:
                break
        plan = PlacementPlan(
            subject_id=subject_id,
            project=project,
            project_id=project_id,
            edges=edges,
            lifecycle=self._lifecycle(subject, ranked[0] if ranked and leg == "vector" else None, edges),
            degraded=degraded,
            signals={
                "pool_size": len(pool),
                "scored": len(scored),
                "leg": leg,
                "min_relevance": gate,
                "already_linked": len(linked),
                "duplicate_similarity": DUPLICATE_SIMILARITY,
            },
            warnings=warnings,
        )
        return plan

    def _linked(self, subject_id: str | None) -> set[str]:
        if subject_id is None:
            return set()
        out: set[str] = set()
        for record in self.lookup.edges.edges_of(subject_id):
            out.add(record.target_id if record.source_id == subject_id else record.source_id)
        return out

    def _cosines(self, subject: Subject, subject_id: str | None, pool: dict[str, Entry]) -> dict[str, float]:
        index = self.ctx.index
        index.wait_for_writes()  # read your writes: the mirror holds every acknowledged note
        mirror = index.mirror
        vector = mirror.vector(subject_id) if subject_id is not None else None
        record = index.get(subject_id) if subject_id is not None else None
        entry = subject.entry
        if vector is None or record is None or entry is None or record.content_hash != entry.content_hash:
            import numpy as np  # only to embed a draft: the facade loads without NumPy

            vector = np.asarray(index.embedder.embed([subject.content])[0], dtype=np.float32)
        return mirror.similarities(pool, vector, SearchFilters(statuses=None))

    def _bm25(self, subject: Subject, pool: dict[str, Entry], project: str | None) -> dict[str, float]:
        result = self.ctx.index.search_bm25(
            subject.content, SearchFilters(statuses=POOL_STATUSES, project=project), 4 * MAX_PLANNED_EDGES
        )
        hits = [(h.record.id, h.bm25_score or h.score) for h in result.hits if h.record.id in pool]
        top = max((s for _, s in hits), default=0.0) or 1.0
        return {note_id: score / top for note_id, score in hits}

    def _edge(
        self,
        subject: Subject,
        subject_id: str | None,
        neighbour: Entry,
        neighbour_id: str,
        similarity: float,
        relevance: float,
        leg: str,
    ) -> PlannedEdge:
        subject_tags = set(subject.entry.tags) if subject.entry is not None else set()
        shared = sorted(subject_tags & set(neighbour.tags))
        subject_is_cluster = subject.entry is not None and subject.entry.is_cluster
        source: str | None
        target: str | None
        if neighbour.is_cluster:
            source, target, edge_type = neighbour_id, subject_id, "cluster"
        elif subject_is_cluster:
            source, target, edge_type = subject_id, neighbour_id, "cluster"
        else:
            source, target, edge_type = subject_id, neighbour_id, "related"
        signals: Row = {
            "neighbour_id": neighbour_id,
            "leg": leg,
            "relevance": round(relevance, 4),
            "shared_tags": shared,
            "neighbour_status": graph_status(neighbour.status),
            "neighbour_is_cluster": neighbour.is_cluster,
        }
        if leg == "vector":
            signals["similarity"] = round(similarity, 4)
            signals["distance"] = round(1.0 - similarity, 4)
        return PlannedEdge(source, target, edge_type, round(relevance, 4), neighbour, signals)

    def _lifecycle(
        self, subject: Subject, nearest: tuple[str, float] | None, edges: list[PlannedEdge]
    ) -> Row:
        current = "draft" if subject.entry is None else graph_status(subject.entry.status)
        if nearest is not None and nearest[1] >= DUPLICATE_SIMILARITY:
            return {
                "current": current,
                "suggested": "merge",
                "merge_target": nearest[0],
                "reason": f"a near duplicate of {nearest[0]} (cosine {nearest[1]:.3f}): merge it with "
                "memory_supersede action=merge instead of keeping both",
            }
        if current == "draft":
            if edges:
                return {
                    "current": current,
                    "suggested": "active",
                    "reason": f"it has {len(edges)} related thought(s) in the project: store it active "
                    "and link it",
                }
            return {
                "current": current,
                "suggested": "draft",
                "reason": "nothing in the project relates to it yet: keep it a draft until reviewed",
            }
        if current == "active":
            return {"current": current, "suggested": "active", "reason": "in place: keep it active"}
        return {
            "current": current,
            "suggested": current,
            "reason": f"it is {current}: placement proposes edges but no status change",
        }
