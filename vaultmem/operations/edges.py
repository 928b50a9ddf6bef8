"""``memory_store``'s edge actions: link, link_batch, unlink, unlink_batch, retype; and the edge rules.

Edges live in the source note's frontmatter (:mod:`vaultmem.notes.links`), so a batch of links is
a batch of note edits, one git commit per action. Destructive actions (unlink, retype) preview
first and need the preview's token to run.

Rules (graph document, ``memory_store action=link``): the nine edge types only; no self-loops; only
a cluster thought may carry a ``cluster`` edge; a pair of thoughts carries one edge; re-linking a
symmetric pair (``related``, ``contradicts``) is an idempotent replay; a ``related`` placeholder is
upgraded in place to the specific type asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vaultmem.errors import Conflict, InvalidInput, NotFound, VaultmemError
from vaultmem.notes.links import EDGE_TYPES, Edge, LinkTarget, add_link, created_at_of, typed_links
from vaultmem.notes.model import iso
from vaultmem.operations.context import Context
from vaultmem.operations.lookup import Located
from vaultmem.operations.results import Answer, Json, Row
from vaultmem.vault.plan import Draft, Plan

TOOL = "memory_store"
MAX_LINKS = 1000
MAX_UNLINKS = 1000
SYMMETRIC_TYPES = frozenset({"related", "contradicts"})
PLACEHOLDER_TYPE = "related"
SELF_LOOP_MESSAGE = "Edge cannot link a thought to itself (source_id and target_id are the same)"


def check_edge_type(edge_type: Json, argument: str = "edge_type") -> str:
    if not isinstance(edge_type, str) or edge_type not in EDGE_TYPES:
        raise InvalidInput(
            f"{argument} {edge_type!r} is not an edge type; use one of {', '.join(EDGE_TYPES)}"
        )
    return edge_type


def check_endpoints(source_id: str, target_id: str, edge_type: str, source_is_cluster: bool) -> None:
    """The rules that need nothing but the two endpoints."""
    if source_id == target_id:
        raise InvalidInput(SELF_LOOP_MESSAGE)
    if edge_type == "cluster" and not source_is_cluster:
        raise InvalidInput(
            f"only a cluster thought may carry a 'cluster' edge, and {source_id} is not one "
            "(create the cluster with is_cluster: true, or pick another edge type)"
        )


@dataclass(frozen=True)
class LinkDecision:
    """What linking a pair means given the edges already between them."""

    action: str  # "create" | "replay" | "upgrade"
    existing: Edge | None = None


def decide_link(source_id: str, target_id: str, edge_type: str, between: list[Edge]) -> LinkDecision:
    """Apply the one-edge-per-pair rule to the edges already joining the pair (either direction)."""
    if not between:
        return LinkDecision("create")
    existing = between[0]
    same_direction = existing.source_id == source_id
    if existing.type == edge_type:
        if edge_type in SYMMETRIC_TYPES or same_direction:
            if edge_type in SYMMETRIC_TYPES:
                return LinkDecision("replay", existing)
            raise Conflict(
                f"a '{edge_type}' edge from {source_id} to {target_id} already exists (id {existing.id}); "
                "a pair carries one edge"
            )
        raise Conflict(
            f"a '{edge_type}' edge already joins these thoughts in the other direction (id {existing.id}); "
            "a pair carries one edge: unlink it first to reverse it"
        )
    if existing.type == PLACEHOLDER_TYPE:
        return LinkDecision("upgrade", existing)
    raise Conflict(
        f"these thoughts are already joined by a '{existing.type}' edge (id {existing.id}); a pair carries "
        f"one edge: change its type with memory_store action=retype edge_id={existing.id} "
        f"new_type={edge_type}"
    )


class Edges:
    """The edge actions of ``memory_store``."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    # -- link / link_batch -----------------------------------------------------------------------------
    def link(self, source_id: str | None, target_id: str | None, edge_type: str | None) -> Edge:
        edge_type = check_edge_type("related" if edge_type is None else edge_type)

        def decide() -> Plan[Edge]:
            draft = self.ctx.draft()
            edge = self._plan_link(draft, source_id, target_id, edge_type)
            return draft.plan(edge)

        return self.ctx.writer.run(
            decide, tool=TOOL, summary=f"link {edge_type}", subject=self._link_subject
        ).result

    def link_batch(self, links: Sequence[Json] | None) -> Answer:
        if not isinstance(links, list) or not 1 <= len(links) <= MAX_LINKS:
            raise InvalidInput(
                f"links must be a list of 1 to {MAX_LINKS} {{source, target, type?}} items; nothing ran"
            )

        def decide() -> Plan[list[Row]]:
            draft = self.ctx.draft()
            rows: list[Row] = []
            for i, link in enumerate(links):
                source = link.get("source") if isinstance(link, dict) else None
                target = link.get("target") if isinstance(link, dict) else None
                try:
                    if not isinstance(link, dict):
                        raise InvalidInput("each link is an object {source, target, type?}")
                    edge_type = check_edge_type(link.get("type") or "related", "type")
                    self._plan_link(draft, source, target, edge_type)
                    rows.append(
                        {
                            "index": i,
                            "status": "linked",
                            "source": source,
                            "target": target,
                            "type": edge_type,
                        }
                    )
                except VaultmemError as exc:
                    rows.append(
                        {
                            "index": i,
                            "status": "failed",
                            "source": source,
                            "target": target,
                            "error": str(exc),
                        }
                    )
            return draft.plan(rows)

        rows = self.ctx.writer.run(decide, tool=TOOL, summary=f"link_batch {len(links)} links").result
        linked = sum(1 for r in rows if r["status"] == "linked")
        return Answer.many("link_batch", rows, linked=linked, failed=len(rows) - linked)

    def _plan_link(self, draft: Draft, source_id: Json, target_id: Json, edge_type: str) -> Edge:
        if (
            isinstance(source_id, str)
            and isinstance(target_id, str)
            and source_id.strip().lower() == target_id.strip().lower()
        ):
            raise InvalidInput("Edge cannot link a thought to itself (source_id and target_id are the same)")
        source = self.ctx.lookup.require(source_id, "source_id")
        target = self.ctx.lookup.require(target_id, "target_id")
        sid, tid = self.ctx.lookup.id_of(source), self.ctx.lookup.id_of(target)
        check_endpoints(sid, tid, edge_type, source.is_cluster)
        metas = {p: t.meta for p in (source.path, target.path) if (t := draft.edited(p)) is not None}
        between = self.ctx.lookup.links_between(source, target, metas)
        decision = decide_link(sid, tid, edge_type, between)
        now = iso(self.ctx.now())
        if decision.action == "replay":
            assert decision.existing is not None
            return self._with_created(draft, decision.existing)
        created = now
        if decision.action == "upgrade":
            assert decision.existing is not None
            old = self._with_created(draft, decision.existing)
            created = old.created_at or now
            holder = source if old.source_id == sid else target
            other_id = old.target_id
            text, _removed = self.ctx.lookup.without_link(
                draft.text_of(holder.path), holder.path, old.type, other_id
            )
            draft.put(holder.path, text, "upgrade link")
        draft.put(
            source.path,
            add_link(draft.text_of(source.path), edge_type, self.ctx.lookup.link_to(target), created),
            "link",
        )
        return Edge.make(sid, edge_type, tid, created)

    def _link_subject(self, edge: Edge) -> str:
        """``memory_store: link <source> -<type>-> <target>``: the commit subject names both ends."""
        ends = [self.ctx.lookup.entry(i) for i in (edge.source_id, edge.target_id)]
        source, target = (
            e.slug if e is not None else i
            for e, i in zip(ends, (edge.source_id, edge.target_id), strict=True)
        )
        return f"{TOOL}: link {source} -{edge.type}-> {target}"

    def _with_created(self, draft: Draft, edge: Edge) -> Edge:
        if edge.created_at:
            return edge
        source = self.ctx.lookup.entry(edge.source_id)
        target = self.ctx.lookup.entry(edge.target_id)
        stamp = None
        if source is not None and target is not None:
            meta = draft.text_of(source.path).meta
            points_at = self.ctx.lookup.points_at(source.path, meta, edge.type, edge.target_id)
            for edge_type, name in typed_links(meta):
                if edge_type == edge.type and points_at(name):
                    stamp = created_at_of(meta, edge_type, name)
            stamp = stamp or source.updated or source.created
        return Edge(edge.id, edge.source_id, edge.target_id, edge.type, stamp or "")

    # -- unlink / unlink_batch -----------------------------------------------------------------------
    def unlink(self, edge_id: str | None, confirm: bool, token: str | None) -> Answer:
        located = self.ctx.lookup.locate(edge_id)
        assert isinstance(edge_id, str)
        if located is None:
            return Answer.one("unlink", {"status": "not_found", "edge_id": edge_id})
        edge = located.edge
        args = {"edge_id": edge.id}
        if not confirm:
            token = self.ctx.tokens.issue(TOOL, "unlink", args)
            item: Row = {
                "status": "preview",
                "edge_id": edge.id,
                "edge": edge.to_dict(),
                "consequence": _unlink_consequence(edge),
                "preview_token": token,
                "instruction": f"Call memory_store again with action=unlink, edge_id={edge.id}, "
                "confirm=true to proceed.",
            }
            answer = Answer.one("unlink", item)
            answer.preview = {"token": token, "destructive": True}
            return answer
        self.ctx.tokens.redeem(token, TOOL, "unlink", args, f"memory_store action=unlink edge_id={edge.id}")
        deleted = self._delete_edges([edge.id], "unlink")
        status = "deleted" if deleted else "not_found"
        return Answer.one("unlink", {"status": status, "edge_id": edge.id})

    def unlink_batch(self, edge_ids: Sequence[str] | None, confirm: bool) -> Answer:
        if not isinstance(edge_ids, list) or not 1 <= len(edge_ids) <= MAX_UNLINKS:
            raise InvalidInput(f"edge_ids must be a list of 1 to {MAX_UNLINKS} edge ids; nothing ran")
        if not all(isinstance(e, str) and e.strip() for e in edge_ids):
            raise InvalidInput("every edge_ids entry must be an edge id")
        refused = {e: why for e in dict.fromkeys(edge_ids) if (why := self._refusal(e)) is not None}
        if refused and confirm:
            raise InvalidInput(f"unlink_batch deleted nothing: {'; '.join(refused.values())}")
        found = {e: self.ctx.lookup.locate(e) for e in dict.fromkeys(edge_ids) if e not in refused}
        if not confirm:
            items: list[Row] = []
            for e in edge_ids:
                hit = found.get(e)
                if e in refused:
                    items.append({"edge_id": e, "status": "failed", "error": refused[e]})
                elif hit is None:
                    items.append({"edge_id": e, "status": "failed", "error": "Edge not found"})
                else:
                    items.append(
                        {
                            "edge_id": e,
                            "status": "preview",
                            "edge": hit.edge.to_dict(),
                            "consequence": _unlink_consequence(hit.edge),
                        }
                    )
            previewed = sum(1 for i in items if i["status"] == "preview")
            answer = Answer.many(
                "unlink_batch", items, deleted=0, preview=previewed, failed=len(items) - previewed
            )
            answer.preview = {
                "token": None,
                "destructive": True,
                "instruction": "Call memory_store again with action=unlink_batch, edge_ids=[...], "
                "confirm=true to proceed.",
            }
            return answer
        missing = [e for e, hit in found.items() if hit is None]
        if missing:
            raise NotFound(
                f"unlink_batch deleted nothing: {len(missing)} edge id(s) do not exist "
                f"({', '.join(missing[:10])}); remove them from edge_ids and call again"
            )
        self._delete_edges(
            [hit.edge.id for hit in found.values() if hit is not None], "unlink_batch", strict=True
        )
        items = [{"edge_id": e, "status": "deleted"} for e in edge_ids]
        return Answer.many("unlink_batch", items, deleted=len(items), preview=0, failed=0)

    def _refusal(self, edge_id: str) -> str | None:
        """Why ``edge_id`` may not be removed (a link written in a note's text), or None."""
        record = self.ctx.lookup.text_link(edge_id)
        return self.ctx.lookup.text_link_refusal(record) if record is not None else None

    def _delete_edges(self, edge_ids: list[str], action: str, *, strict: bool = False) -> int:
        """Remove edges from their source notes in one write; return how many were still there."""

        def decide() -> Plan[int]:
            draft = self.ctx.draft()
            located: list[Located] = []
            for e in edge_ids:
                hit = self.ctx.lookup.locate(e)
                if hit is None and strict:
                    raise NotFound(f"{action} deleted nothing: edge {e} disappeared meanwhile; preview again")
                if hit is not None:
                    located.append(hit)
            for hit in located:
                edge = hit.edge
                holder = hit.source.path
                text, _removed = self.ctx.lookup.without_link(
                    draft.text_of(holder), holder, edge.type, edge.target_id
                )
                draft.put(holder, text, action)
            return draft.plan(len(located))

        return self.ctx.writer.run(decide, tool=TOOL, summary=f"{action} {len(edge_ids)} edge(s)").result

    # -- retype --------------------------------------------------------------------------------------
    def retype(self, edge_id: str | None, new_type: str | None, confirm: bool, token: str | None) -> Answer:
        if new_type is None:
            raise InvalidInput("new_type is required for retype")
        new_type = check_edge_type(new_type, "new_type")
        located = self.ctx.lookup.locate(edge_id)
        if located is None:
            raise NotFound(f"Edge not found: no edge has id {edge_id}")
        edge = located.edge
        if edge.type == new_type:
            raise InvalidInput(f"edge {edge.id} is already of type '{new_type}'")
        check_endpoints(edge.source_id, edge.target_id, new_type, located.source.is_cluster)
        args = {"edge_id": edge.id, "new_type": new_type}
        if not confirm:
            token = self.ctx.tokens.issue(TOOL, "retype", args)
            item: Row = {
                "status": "preview",
                "edge_id": edge.id,
                "old_edge_id": edge.id,
                "old_type": edge.type,
                "new_type": new_type,
                "source_id": edge.source_id,
                "target_id": edge.target_id,
                "consequence": f"Changes the '{edge.type}' edge between '{edge.source_id}' and "
                f"'{edge.target_id}' to '{new_type}' (the edge gets a new id; created_at is kept).",
                "preview_token": token,
                "instruction": f"Call memory_store again with action=retype, edge_id={edge.id}, "
                f"new_type={new_type}, confirm=true to proceed.",
            }
            answer = Answer.one("retype", item)
            answer.preview = {"token": token, "destructive": True}
            return answer
        self.ctx.tokens.redeem(
            token, TOOL, "retype", args, f"memory_store action=retype edge_id={edge.id} new_type={new_type}"
        )

        def decide() -> Plan[Edge]:
            hit = self.ctx.lookup.locate(edge.id)
            if hit is None:
                raise NotFound(f"Edge not found: edge {edge.id} was removed meanwhile")
            old = self._with_created(self.ctx.draft(), hit.edge)
            draft = self.ctx.draft()
            holder = hit.source.path
            text, removed = self.ctx.lookup.without_link(
                draft.text_of(holder), holder, old.type, old.target_id
            )
            target = self.ctx.lookup.entry(old.target_id)
            assert target is not None
            # The retyped link keeps the name it had (the person may have written a path form).
            link = LinkTarget(removed[0], old.target_id) if removed else self.ctx.lookup.link_to(target)
            draft.put(holder, add_link(text, new_type, link, old.created_at), "retype")
            return draft.plan(Edge.make(old.source_id, new_type, old.target_id, old.created_at))

        new_edge = self.ctx.writer.run(decide, tool=TOOL, summary=f"retype {edge.type} -> {new_type}").result
        item = {
            "status": "retyped",
            "edge_id": new_edge.id,
            "old_edge_id": edge.id,
            "new_edge_id": new_edge.id,
            "old_type": edge.type,
            "new_type": new_type,
        }
        return Answer.one("retype", item)


def _unlink_consequence(edge: Edge) -> str:
    return f"Removes the '{edge.type}' edge between '{edge.source_id}' and '{edge.target_id}'."
