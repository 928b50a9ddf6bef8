"""The graph tools ``edge_review``, ``retention_review`` and ``memory_crystallize``: parse the
arguments, call :class:`vaultmem.memory.Memory`, answer in the same response and wire envelopes as
the other graph tools (:mod:`vaultmem.mcp.envelope`)."""

# No `from __future__ import annotations`: the SDK reads these signatures.
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer

from vaultmem.limits import (
    DEFAULT_GRAPH_LIMIT,
    DEFAULT_MAX_PROPOSALS,
    MAX_GRAPH_LIMIT,
    MAX_MEMBERS,
    MAX_PROPOSAL_BATCH,
    MAX_PROPOSALS,
    MAX_QUEUE_LIMIT,
    MAX_RETENTION_LIMIT,
    MAX_SOURCES,
)
from vaultmem.mcp.annotations import TOOL_ANNOTATIONS
from vaultmem.mcp.envelope import FULL, envelope, reject_retired, shaping_for, success
from vaultmem.mcp.params import DeleteToken, Output, PreviewToken, StatusFilter, tombstone
from vaultmem.mcp.params import describe as _d
from vaultmem.memory import Memory

REVIEW_TOOL_NAMES = ("edge_review", "retention_review", "memory_crystallize")
REVIEW_RETIRED: dict[str, str | None] = {"max_items": "max_proposals"}
CRYSTALLIZE_RETIRED: dict[str, str | None] = {"dry_run": "confirm"}


def register_review_tools(server: MCPServer[Any], memory: Memory) -> None:
    """Add ``edge_review``, ``retention_review`` and ``memory_crystallize`` to ``server``."""

    @server.tool(name="edge_review", annotations=TOOL_ANNOTATIONS["edge_review"])
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
            list[str] | None, _d(f"apply_batch/rollback: 1-{MAX_PROPOSAL_BATCH} proposal ids.")
        ] = None,
        status: Annotated[
            Literal["pending", "applied", "rejected", "rolled_back", "stale", "all"] | None,
            _d("list: proposals with this status (default pending)."),
        ] = None,
        include_retired: Annotated[
            bool,
            _d("list: also show proposals of retired kinds (hidden by default, counted in retired_count)."),
        ] = False,
        limit: Annotated[int | None, _d(f"list: page size 1-{MAX_QUEUE_LIMIT} (default 20).")] = None,
        offset: Annotated[int, _d("list: skip this many proposals.")] = 0,
        reason: Annotated[str | None, _d("reject: why (kept with the proposal).")] = None,
        confirm: Annotated[
            bool,
            _d("apply/apply_batch/rollback: false (default) previews; true executes (needs preview_token)."),
        ] = False,
        preview_token: PreviewToken = None,
        max_items: Annotated[Any, tombstone("use max_proposals")] = None,
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
        reject_retired({"max_items": max_items}, REVIEW_RETIRED)
        if action == "list":
            answer = memory.list_proposals(status, thought_id, cwd, include_retired, limit, offset)
        elif action == "enqueue":
            answer = memory.enqueue_proposals(thought_id, max_proposals, cwd)
        elif action == "apply":
            answer = memory.apply_proposal(proposal_id, confirm, preview_token)
        elif action == "apply_batch":
            answer = memory.apply_proposals(proposal_ids, confirm, preview_token)
        elif action == "rollback":
            ids = proposal_ids if proposal_ids is not None else proposal_id
            answer = memory.rollback_proposals(ids, confirm, preview_token)
        else:
            answer = memory.reject_proposal(proposal_id, reason)
        return success(envelope(answer, FULL))

    @server.tool(name="retention_review", annotations=TOOL_ANNOTATIONS["retention_review"])
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
        limit: Annotated[int | None, _d(f"list: page size 1-{MAX_RETENTION_LIMIT} (default 20).")] = None,
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
        preview_token: DeleteToken = None,
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
        if action == "list":
            answer = memory.retention_candidates(min_age_days, importance_floor, limit, offset)
            return success(envelope(answer, shaping_for(compact, fields, False, compact_default=False)))
        if action == "protect":
            answer = memory.protect(thought_id)
        elif action == "delete":
            answer = memory.retention_delete(thought_id, confirm, preview_token)
        else:
            answer = memory.compact(source_ids, summary, confirm)
        return success(envelope(answer, FULL))

    @server.tool(name="memory_crystallize", annotations=TOOL_ANNOTATIONS["memory_crystallize"])
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
        status: Annotated[StatusFilter | None, _d("graph: node status (default all).")] = None,
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
        dry_run: Annotated[Any, tombstone("use confirm")] = None,
    ) -> Output:
        """Visualise and reorganise clusters; a cluster is a vault note with 'cluster' links to its members.

        graph: nodes (thoughts) in items and the edges between two of them in a separate 'edges' field;
        meta.counts.total/returned/filtered_out count nodes, meta.counts.edges the edges. cluster:
        creates a cluster thought from thought_ids with a 'cluster' edge to each (one commit); answers
        {cluster, edges, members}. auto_cluster: groups active and draft thoughts not yet clustered by
        vector distance (Union-Find; min_similarity is a maximum distance); previews the groups with a
        preview_token, then confirm: true writes one cluster per group (one commit).
        """
        reject_retired({"dry_run": dry_run}, CRYSTALLIZE_RETIRED)
        shaping = shaping_for(compact, fields, False, compact_default=False)
        if action == "graph":
            limit = DEFAULT_GRAPH_LIMIT if limit is None else limit
            answer = memory.graph(cwd, status, limit, offset)
        elif action == "cluster":
            answer = memory.cluster(thought_ids, title, tags, cwd)
        else:
            answer = memory.auto_cluster(
                min_similarity, min_cluster_size, max_clusters, confirm, preview_token
            )
        return success(envelope(answer, shaping))


__all__ = ["REVIEW_TOOL_NAMES", "register_review_tools"]
