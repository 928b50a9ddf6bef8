"""The graph tools ``edge_review``, ``retention_review`` and ``memory_crystallize``, and the
``propose`` action of ``memory_status``: parse the arguments, call the graph layer
(:class:`vaultmem.graph.review.Review`), answer in the same response and wire envelopes as the other
graph tools (:mod:`vaultmem.mcp.envelope`)."""

# No `from __future__ import annotations`: the SDK reads these signatures.
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer

from vaultmem.errors import VaultmemError
from vaultmem.graph.answer import Answer
from vaultmem.graph.crystallize import DEFAULT_GRAPH_LIMIT, MAX_GRAPH_LIMIT, MAX_MEMBERS
from vaultmem.graph.edge_review import DEFAULT_MAX_PROPOSALS, MAX_BATCH, MAX_LIST_LIMIT, MAX_PROPOSALS
from vaultmem.graph.placement import propose
from vaultmem.graph.retention import MAX_LIMIT, MAX_SOURCES
from vaultmem.graph.review import Review
from vaultmem.graph.thoughts import Shaping, status_filter
from vaultmem.mcp.envelope import (
    NO_CWD_WARNING,
    RESOLVE_HINT,
    Scope,
    envelope,
    failure,
    reject_retired,
    resolve_scope,
    shaping_for,
    success,
)
from vaultmem.mcp.graph_tools import Output, _d, _tombstone
from vaultmem.runtime import Runtime

#: Every column of every thought (the write actions' answers).
FULL = Shaping()
REVIEW_TOOL_NAMES = ("edge_review", "retention_review", "memory_crystallize")
PINNED_TO_THOUGHT = "the plan is restricted to the project the addressed thought (thought_id) belongs to"
PINNED_TO_DEFAULT = "the plan is restricted to the default project (draft content)"
REVIEW_RETIRED: dict[str, str | None] = {"max_items": "max_proposals"}
CRYSTALLIZE_RETIRED: dict[str, str | None] = {"dry_run": "confirm"}


def propose_warning(cwd: str | None, scope: Scope, draft: bool) -> list[str]:
    """The pinned-scope note of ``memory_status action=propose`` (never the broadening one)."""
    clause = PINNED_TO_DEFAULT if draft else PINNED_TO_THOUGHT
    if not scope.given:
        return [f"no cwd — propose is not cross-project: {clause}"]
    if scope.project is None:
        return [
            f'cwd "{cwd}" matches no known project {RESOLVE_HINT} — propose is not cross-project: {clause}'
        ]
    return []


def propose_payload(
    runtime: Runtime,
    thought_id: str | None,
    content: str | None,
    cwd: str | None,
    max_edges: int | None,
    include_signals: bool | None,
    compact: bool | None,
) -> dict[str, Any]:
    """``memory_status action=propose``: a read-only placement plan, pinned to one project."""
    review: Review = runtime.review
    scope = resolve_scope(runtime, cwd, reader=False)
    subject = review.placement.subject(thought_id, content)
    project: str | None
    project_id: str | None
    if scope.project is not None:
        project = scope.project
        project_id = scope.payload["project"] if scope.payload else None
    elif subject.entry is not None:
        project = subject.entry.project
        project_id = review.project_id(project)
    else:
        project, project_id = None, None  # the default project: vaultmem files drafts in no project
    answer = propose(
        review.placement,
        subject,
        project,
        project_id,
        max_edges=max_edges,
        include_signals=include_signals,
        compact=compact,
    )
    pinned = Scope(
        scope.payload, scope.project, propose_warning(cwd, scope, subject.is_draft_content), scope.given
    )
    return envelope(answer, pinned, FULL)


def register_review_tools(server: MCPServer[Any], runtime: Runtime) -> None:
    """Add ``edge_review``, ``retention_review`` and ``memory_crystallize`` to ``server``."""

    @server.tool(name="edge_review")
    def edge_review(
        action: Annotated[
            Literal["enqueue", "list", "apply", "apply_batch", "rollback", "reject"],
            _d(
                "enqueue (queue placement proposals for an active thought), list (the queue), apply / "
                "apply_batch (write proposals as edges), rollback (undo applied ones), reject."
            ),
        ],
        thought_id: Annotated[
            str | None, _d("enqueue: the active thought to place; list: only proposals touching it.")
        ] = None,
        max_proposals: Annotated[
            int | None,
            _d(f"enqueue: most proposals to queue, 1-{MAX_PROPOSALS} (default {DEFAULT_MAX_PROPOSALS})."),
        ] = None,
        cwd: Annotated[
            str | None,
            _d(
                "enqueue: your working directory; the proposals stay inside its project (default: the "
                "thought's). list: only that project's proposals (omitted: every project)."
            ),
        ] = None,
        proposal_id: Annotated[str | None, _d("apply/reject/rollback: the proposal.")] = None,
        proposal_ids: Annotated[
            list[str] | None, _d(f"apply_batch/rollback: 1-{MAX_BATCH} proposal ids.")
        ] = None,
        status: Annotated[
            Literal["pending", "applied", "rejected", "rolled_back", "stale", "all"] | None,
            _d("list: proposals with this status (default pending)."),
        ] = None,
        include_retired: Annotated[
            bool,
            _d("list: also show proposals of retired kinds (hidden by default, counted in retired_count)."),
        ] = False,
        limit: Annotated[int | None, _d(f"list: page size 1-{MAX_LIST_LIMIT} (default 20).")] = None,
        offset: Annotated[int, _d("list: skip this many proposals.")] = 0,
        reason: Annotated[str | None, _d("reject: why (kept with the proposal).")] = None,
        confirm: Annotated[
            bool,
            _d("apply/apply_batch/rollback: false (default) previews; true executes (needs preview_token)."),
        ] = False,
        preview_token: Annotated[
            str | None, _d("With confirm: true: the token the preview returned.")
        ] = None,
        max_items: Annotated[Any, _tombstone("use max_proposals")] = None,
    ) -> Output:
        """Review placement proposals: suggested edges between thoughts, applied only after review.

        enqueue (thought_id of an active thought): runs the same engine as memory_status
        action=propose and queues its edges; meta.counts.proposals / skipped. list: the queue, oldest
        first; meta.counts.total (matching rows), retired_count, all_total (the whole queue).
        apply (proposal_id) and apply_batch (proposal_ids) preview first (status dry_run and a
        preview_token); confirm: true with the token writes the edges (one commit) and reports each
        as accepted, stale (the vault changed since), refused (not pending) or failed. rollback
        (proposal_ids) undoes applied proposals the same way (reverted / skipped / refused). reject
        (proposal_id) drops a proposal from review.
        """
        try:
            reject_retired({"max_items": max_items}, REVIEW_RETIRED)
            review: Review = runtime.review
            actions = review.edge_review
            if action == "list":
                scope = resolve_scope(runtime, cwd, reader=True)
                answer = actions.list_queue(status, thought_id, scope.project, include_retired, limit, offset)
                return success(envelope(answer, scope, FULL))
            if action == "enqueue":
                scope = resolve_scope(runtime, cwd, reader=False)
                project_id = scope.payload["project"] if scope.project and scope.payload else None
                answer = actions.enqueue(thought_id, max_proposals, scope.project, project_id)
                return success(envelope(answer, scope, FULL))
            scope = resolve_scope(runtime, None, reader=False)
            if action == "apply":
                answer = actions.apply(proposal_id, confirm, preview_token)
            elif action == "apply_batch":
                answer = actions.apply_batch(proposal_ids, confirm, preview_token)
            elif action == "rollback":
                answer = actions.rollback(
                    proposal_ids if proposal_ids is not None else proposal_id, confirm, preview_token
                )
            else:
                answer = actions.reject(proposal_id, reason)
            return success(envelope(answer, scope, FULL))
        except VaultmemError as exc:
            return failure(exc)

    @server.tool(name="retention_review")
    def retention_review(
        action: Annotated[
            Literal["list", "protect", "delete", "compact"],
            _d(
                "list candidates, protect one, delete one (soft, preview first), compact several into a "
                "summary."
            ),
        ],
        min_age_days: Annotated[
            float | None, _d("list: minimum age in days from the age anchor (default from settings, 30).")
        ] = None,
        importance_floor: Annotated[
            float | None, _d("list: candidates' importance must be below this, 0-1 (default 0.3).")
        ] = None,
        limit: Annotated[int | None, _d(f"list: page size 1-{MAX_LIMIT} (default 20).")] = None,
        offset: Annotated[int, _d("list: skip this many candidates.")] = 0,
        thought_id: Annotated[str | None, _d("protect/delete: the thought.")] = None,
        source_ids: Annotated[
            list[str] | None, _d(f"compact: 1-{MAX_SOURCES} thoughts to merge into the summary.")
        ] = None,
        summary: Annotated[
            dict[str, Any] | None,
            _d(
                "compact: {content, tags?, project_id?} of the summary thought (created active and "
                "protected)."
            ),
        ] = None,
        confirm: Annotated[
            bool, _d("delete/compact: false (default) previews; true executes (delete needs preview_token).")
        ] = False,
        preview_token: Annotated[str | None, _d("delete with confirm: true: the preview's token.")] = None,
        compact: Annotated[
            bool | None, _d("list: true trims each candidate to {id, content, status, tags, project}.")
        ] = None,
        fields: Annotated[
            list[str] | None, _d("list: only these thought columns (wins over compact).")
        ] = None,
    ) -> Output:
        """Review retention candidates and act on them explicitly; nothing is removed on a schedule.

        list: thoughts where every signal holds (archived or draft, older than min_age_days, importance
        below importance_floor, no recall hits, no incoming edge from an active thought, not
        protected, surface_after due, not global), oldest first, content cut to 200 characters, each
        with its signals; spans every project. protect: mark a thought protected (is_protected).
        delete: preview with its dependents and a preview_token, then confirm: true + token
        soft-deletes it (status deleted; the file stays). compact: a protected active summary is
        created and every source merged into it (edges moved, sources archived); its preview has no
        token.
        """
        try:
            review: Review = runtime.review
            actions = review.retention
            scope = resolve_scope(runtime, None, reader=False)
            answer: Answer
            if action == "list":
                answer = actions.candidates(min_age_days, importance_floor, limit, offset)
                return success(
                    envelope(answer, scope, shaping_for(compact, fields, False, compact_default=False))
                )
            if action == "protect":
                answer = actions.protect(thought_id)
            elif action == "delete":
                answer = actions.delete(thought_id, confirm, preview_token)
            else:
                answer = actions.compact(source_ids, summary, confirm)
            return success(envelope(answer, scope, FULL))
        except VaultmemError as exc:
            return failure(exc)

    @server.tool(name="memory_crystallize")
    def memory_crystallize(
        action: Annotated[
            Literal["graph", "cluster", "auto_cluster"],
            _d(
                "graph (nodes and edges), cluster (make a cluster of thought_ids), auto_cluster (find "
                "clusters)."
            ),
        ],
        cwd: Annotated[
            str | None,
            _d(
                "graph: your working directory, narrows to its project (omitted: every project); cluster: "
                "the project of the new cluster thought. Not used by auto_cluster (global)."
            ),
        ] = None,
        status: Annotated[
            Literal["draft", "active", "archived", "all"] | None, _d("graph: node status (default all).")
        ] = None,
        limit: Annotated[
            int | None, _d(f"graph: nodes per page 1-{MAX_GRAPH_LIMIT} (default {DEFAULT_GRAPH_LIMIT}).")
        ] = None,
        offset: Annotated[int, _d("graph: skip this many nodes.")] = 0,
        thought_ids: Annotated[list[str] | None, _d(f"cluster: the 1-{MAX_MEMBERS} member thoughts.")] = None,
        title: Annotated[
            str | None, _d("cluster: the cluster's title (default: suggested from its members).")
        ] = None,
        tags: Annotated[list[str] | None, _d("cluster: tags of the cluster thought.")] = None,
        min_similarity: Annotated[
            float | None,
            _d(
                "auto_cluster: despite the name, a MAXIMUM cosine distance: thoughts closer than this are "
                "grouped; lower is tighter (default from settings)."
            ),
        ] = None,
        min_cluster_size: Annotated[
            int | None, _d("auto_cluster: smallest group proposed (default 3).")
        ] = None,
        max_clusters: Annotated[
            int | None, _d("auto_cluster: most groups proposed, largest first (default 50).")
        ] = None,
        confirm: Annotated[
            bool, _d("auto_cluster: false (default) previews; true executes (needs preview_token).")
        ] = False,
        preview_token: Annotated[
            str | None, _d("auto_cluster with confirm: true: the preview's token.")
        ] = None,
        compact: Annotated[bool | None, _d("graph/cluster: true trims each thought (opt-in).")] = None,
        fields: Annotated[
            list[str] | None, _d("graph/cluster: only these thought columns (wins over compact).")
        ] = None,
        dry_run: Annotated[Any, _tombstone("use confirm")] = None,
    ) -> Output:
        """Visualise and reorganise clusters; a cluster is a vault note with 'cluster' links to its members.

        graph: nodes (thoughts) in items and the edges between two of them in a separate 'edges' field;
        meta.counts.total/returned/filtered_out count nodes, meta.counts.edges the edges. cluster:
        creates a cluster thought from thought_ids with a 'cluster' edge to each (one commit); answers
        {cluster, edges, members}. auto_cluster: groups active and draft thoughts not yet clustered by
        vector distance (Union-Find; min_similarity is a maximum distance); previews the groups with a
        preview_token, then confirm: true writes one cluster per group (one commit).
        """
        try:
            reject_retired({"dry_run": dry_run}, CRYSTALLIZE_RETIRED)
            review: Review = runtime.review
            actions = review.crystallize
            shaping = shaping_for(compact, fields, False, compact_default=False)
            if action == "graph":
                scope = resolve_scope(runtime, cwd, reader=True)
                answer = actions.graph(
                    scope.project,
                    status_filter(status, "all"),
                    DEFAULT_GRAPH_LIMIT if limit is None else limit,
                    offset,
                )
            elif action == "cluster":
                scope = resolve_scope(runtime, cwd, reader=False)
                answer = actions.cluster(thought_ids, title, tags, scope.project)
            else:
                scope = resolve_scope(runtime, None, reader=False)
                answer = actions.auto_cluster(
                    min_similarity, min_cluster_size, max_clusters, confirm, preview_token
                )
            return success(envelope(answer, scope, shaping))
        except VaultmemError as exc:
            return failure(exc)


__all__ = ["NO_CWD_WARNING", "REVIEW_TOOL_NAMES", "propose_payload", "register_review_tools"]
