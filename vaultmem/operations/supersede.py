"""``memory_supersede``: archive one thought, archive a batch, merge a thought into another.

Every action previews first (nothing written, a preview token issued) and runs only with
``confirm: true`` and that token; execution re-reads the vault and decides again, so a stale
preview is never applied blindly. In the vault nothing is unlinked: archiving sets ``status:
archived`` in the note's frontmatter; a merge moves the source's links onto the target (editing the
frontmatter of the notes that declare them), adds ``replaces: [[source]]`` to the target and archives
the source. Each action is one git commit (:meth:`vaultmem.vault.writer.VaultWriter.run`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vaultmem.errors import Conflict, InvalidInput, NotFound, VaultmemError
from vaultmem.filing import rules
from vaultmem.notes import frontmatter as fm
from vaultmem.notes.ids import canonical_id, is_full_id
from vaultmem.notes.links import TEXT_LINK, Edge, add_link
from vaultmem.notes.model import iso
from vaultmem.operations.context import Context
from vaultmem.operations.edges import check_endpoints, decide_link
from vaultmem.operations.results import STATUS_FILTERS, Answer, Json, Row, Thought
from vaultmem.vault.catalog import IDEM_TAG_PREFIX
from vaultmem.vault.entry import Entry
from vaultmem.vault.plan import Draft, Plan

TOOL = "memory_supersede"
MAX_BATCH = 1000
#: Source-edge descriptors a merge preview lists at most (``source_edge_count`` has the full count).
MAX_PREVIEW_EDGES = 50
ARCHIVED = "archived"
ARCHIVED_STATUSES = STATUS_FILTERS["archived"]


def _key(thought_id: Json) -> str | None:
    """A thought id in canonical form, or None when it is not id-shaped."""
    if isinstance(thought_id, str) and is_full_id(thought_id):
        return canonical_id(thought_id)
    return None


@dataclass(frozen=True)
class MergeSpec:
    """A merge's arguments: who merges into whom, and what the target becomes."""

    source_id: Json
    target_id: Json
    merged_content: Json = None
    merged_tags: Sequence[str] | None = None
    project: str | None = None


@dataclass(frozen=True)
class _Transfer:
    """One source edge as the target will hold it (or why it is dropped)."""

    edge: Edge  # the source's edge
    new_source: str
    new_target: str
    dropped: str | None  # None, "self_loop", "duplicate", "cluster_rule"


class Supersede:
    """The actions of ``memory_supersede``."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.lookup = ctx.lookup

    # -- helpers ------------------------------------------------------------------------------------
    def _live_entry(self, thought_id: Json) -> Entry | None:
        """The thought, unless it does not exist for the graph tools (unknown id, or soft-deleted)."""
        key = _key(thought_id)
        entry = self.lookup.entry(key) if key else None
        return entry if entry is not None and entry.status != "deleted" else None

    def _outcome(self, entry: Entry | None) -> str:
        if entry is None:
            return "not_found"
        if entry.status in ARCHIVED_STATUSES:
            return "already_archived"
        return "ineligible" if self._unwritable(entry) else "would_archive"

    def _unwritable(self, entry: Entry) -> str | None:
        """Why the note cannot be archived or merged: a person's note in an adopted vault, which
        vaultmem never changes (the confirmed call would be refused; the preview says so first)."""
        return self.ctx.layout.unwritable_reason(entry.path)

    def _archive_text(self, draft: Draft, entry: Entry, now: str) -> None:
        text = draft.text_of(entry.path)
        draft.put(entry.path, fm.set_fields(text, {"status": ARCHIVED, "updated": now}), "archive")

    def _thought(self, entry: Entry) -> Thought:
        fresh = self.ctx.catalog.by_path(entry.path) or entry
        return self.lookup.thought(fresh)

    # -- archive ------------------------------------------------------------------------------------
    def archive(self, thought_id: Json, confirm: bool, token: str | None) -> Answer:
        if not isinstance(thought_id, str) or not thought_id.strip():
            raise InvalidInput("thought_id is required: pass the id of the thought to archive")
        entry = self._live_entry(thought_id)
        outcome = self._outcome(entry)
        args = {"thought_id": _key(thought_id) or thought_id.strip()}
        if not confirm:
            item: Row = {
                "status": "preview",
                "action": "archive",
                "thought_id": thought_id,
                "current_status": self.lookup.thought(entry).status if entry is not None else None,
                "outcome": outcome,
            }
            if entry is None or outcome == "ineligible":
                if entry is not None:
                    item["reason"] = self._unwritable(entry)
                return Answer.one("archive", item)  # nothing to confirm: no token, no meta.preview
            item["consequence"] = (
                f"Sets the status of thought {args['thought_id']} to archived (the note stays in the "
                "vault; its links are kept)."
                if outcome == "would_archive"
                else f"Nothing changes: thought {args['thought_id']} is already archived."
            )
            item["instruction"] = (
                f"Call memory_supersede again with action=archive, thought_id={args['thought_id']}, "
                "confirm=true and this preview_token to proceed."
            )
            return self.ctx.tokens.preview_one(TOOL, "archive", args, item)
        self.ctx.tokens.redeem(
            token, TOOL, "archive", args, f"memory_supersede action=archive thought_id={args['thought_id']}"
        )

        def decide() -> Plan[Entry]:
            current = self._live_entry(thought_id)
            if current is None:
                raise NotFound(f"no thought has id {thought_id}; find it with memory_recall action=search")
            draft = self.ctx.draft()
            if current.status not in ARCHIVED_STATUSES:  # idempotent: an archived thought is not re-stamped
                self._archive_text(draft, current, iso(self.ctx.now()))
            return draft.plan(current)

        archived = self.ctx.writer.run(decide, tool=TOOL, summary="archive").result
        return Answer.one(
            "archive", {"status": "executed", "action": "archive", "result": self._thought(archived)}
        )

    # -- archive_batch --------------------------------------------------------------------------------
    def archive_batch(self, thought_ids: Json, confirm: bool, token: str | None) -> Answer:
        if not isinstance(thought_ids, list) or not 1 <= len(thought_ids) <= MAX_BATCH:
            raise InvalidInput(
                f"thought_ids must be a list of 1 to {MAX_BATCH} thought ids; nothing was archived"
            )
        if not all(isinstance(t, str) and t.strip() for t in thought_ids):
            raise InvalidInput("every thought_ids entry must be a thought id; nothing was archived")
        ids: list[str] = [str(t) for t in thought_ids]
        args = {"thought_ids": [_key(t) or t.strip() for t in ids]}
        if not confirm:
            seen: set[str] = set()
            rows: list[Row] = []
            for t in ids:
                entry = self._live_entry(t)
                outcome = self._outcome(entry)
                key = _key(t) or t
                if entry is not None and key in seen:
                    outcome = "already_archived"  # a repeat: its first occurrence archives it
                seen.add(key)
                row: Row = {"thought_id": t, "outcome": outcome}
                if outcome == "ineligible" and entry is not None:
                    row["reason"] = self._unwritable(entry)
                rows.append(row)
            outcomes = [str(r["outcome"]) for r in rows]
            counts = {o: outcomes.count(o) for o in set(outcomes)}
            answer = Answer.many("archive_batch", rows, **counts)
            token = self.ctx.tokens.issue(TOOL, "archive_batch", args)
            answer.preview = {
                "token": token,
                "destructive": True,
                "consequence": f"Archives {counts.get('would_archive', 0)} thought(s); the notes stay in "
                "the vault with status archived.",
                "instruction": "Call memory_supersede again with action=archive_batch, the same "
                "thought_ids, confirm=true and this preview_token to proceed.",
            }
            return answer
        self.ctx.tokens.redeem(
            token, TOOL, "archive_batch", args, "memory_supersede action=archive_batch thought_ids=[...]"
        )

        def decide() -> Plan[list[Row]]:
            draft = self.ctx.draft()
            now = iso(self.ctx.now())
            out: list[Row] = []
            for t in ids:  # input order; a repeat finds its note already edited in the draft
                entry = self._live_entry(t)
                if entry is None:
                    out.append({"thought_id": t, "status": "failed", "error": f"no thought has id {t}"})
                    continue
                if entry.status not in ARCHIVED_STATUSES and (problem := self._unwritable(entry)):
                    out.append({"thought_id": t, "status": "failed", "error": problem})
                    continue
                if entry.status not in ARCHIVED_STATUSES and not draft.reserved(entry.path):
                    self._archive_text(draft, entry, now)
                out.append({"thought_id": t, "status": "archived"})
            return draft.plan(out)

        rows = self.ctx.writer.run(decide, tool=TOOL, summary=f"archive_batch {len(ids)} thoughts").result
        assert rows is not None
        archived = sum(1 for r in rows if r["status"] == "archived")
        return Answer.many("archive_batch", rows, archived=archived, failed=len(rows) - archived)

    # -- merge ----------------------------------------------------------------------------------------
    def merge(self, spec: MergeSpec, confirm: bool, token: str | None) -> Answer:
        contract = self.ctx.contract()
        for name in ("source_id", "target_id"):
            value = getattr(spec, name)
            if not isinstance(value, str) or not value.strip():
                raise InvalidInput(f"{name} is required for merge: pass the id of a thought")
        content = (
            rules.check_content(spec.merged_content, contract) if spec.merged_content is not None else None
        )
        tags = rules.check_tags(spec.merged_tags, contract) if spec.merged_tags is not None else None
        source, target = self._live_entry(spec.source_id), self._live_entry(spec.target_id)
        args: Row = {
            "source_id": _key(spec.source_id) or spec.source_id,
            "target_id": _key(spec.target_id) or spec.target_id,
            "merged_content": content,
            "merged_tags": tags,
            "project": spec.project,
        }
        if not confirm:
            return self._merge_preview(spec, source, target, content, tags, args)
        self.ctx.tokens.redeem(
            token,
            TOOL,
            "merge",
            args,
            f"memory_supersede action=merge source_id={args['source_id']} target_id={args['target_id']}",
        )

        def decide() -> Plan[tuple[Entry, int]]:
            src, tgt = self._live_entry(spec.source_id), self._live_entry(spec.target_id)
            if src is None or tgt is None:
                missing = spec.source_id if src is None else spec.target_id
                raise NotFound(f"merge wrote nothing: no thought has id {missing}")
            problem = self._ineligible(src, tgt)
            if problem is not None:
                raise Conflict(f"merge wrote nothing: {problem}; preview again to see the current state")
            draft = self.ctx.draft()
            transferred = self.plan_merge(draft, src, tgt, content, tags, spec.project)
            return draft.plan((tgt, transferred))

        merged = source.slug if source is not None else str(spec.source_id)
        result = self.ctx.writer.run(
            decide,
            tool=TOOL,
            summary="merge",
            subject=lambda done: f"{TOOL}: merge {merged} into {done[0].slug}",
        ).result
        assert result is not None
        target_entry, transferred = result
        item: Row = {
            "status": "executed",
            "action": "merge",
            "result": {"target": self._thought(target_entry), "edges_transferred": transferred},
        }
        return Answer.one("merge", item)

    def _ineligible(self, source: Entry, target: Entry) -> str | None:
        sid, tid = self.lookup.id_of(source), self.lookup.id_of(target)
        if sid == tid:
            return "a thought cannot be merged into itself (source_id and target_id are the same)"
        if source.status in ARCHIVED_STATUSES:
            return f"the source {sid} is already archived (status {source.status}); merging it is refused"
        if target.status in ARCHIVED_STATUSES:
            return f"the target {tid} is archived (status {target.status}); merge into a live thought"
        return self._unwritable(source) or self._unwritable(target)

    def _merge_preview(
        self,
        spec: MergeSpec,
        source: Entry | None,
        target: Entry | None,
        content: str | None,
        tags: list[str] | None,
        args: Row,
    ) -> Answer:
        item: Row = {"status": "preview", "action": "merge"}
        if source is None or target is None:
            item["outcome"] = "not_found"
            item["source"] = {"id": spec.source_id, "status": self._status_of(source)}
            item["target"] = {"id": spec.target_id, "status": self._status_of(target)}
            return Answer.one("merge", item)
        sid, tid = self.lookup.id_of(source), self.lookup.id_of(target)
        edges = self._source_edges(sid)
        problem = self._ineligible(source, target)
        item["outcome"] = "ineligible" if problem else "would_merge"
        if problem:
            item["reason"] = problem
        item["source"] = {
            "id": sid,
            "status": self._status_of(source),
            "edges": [
                {**e.to_dict(), "direction": "outgoing" if e.source_id == sid else "incoming"}
                for e in edges[:MAX_PREVIEW_EDGES]
            ],
            "source_edge_count": len(edges),
            "truncated": len(edges) > MAX_PREVIEW_EDGES,
        }
        item["target"] = {"id": tid, "status": self._status_of(target)}
        project = spec.project or target.project or source.project
        proposed: Row = {}
        if content is not None:
            proposed["content"] = content
        if tags is not None:
            proposed["tags"] = tags
        if project != target.project:
            proposed["project"] = project
        item["proposed"] = proposed
        item["effects"] = {
            "source_archived": not problem,
            "target_updated": not problem and bool(proposed),
            "replaces_edge_created": not problem,
        }
        if problem:
            return Answer.one("merge", item)
        item["consequence"] = (
            f"Moves the source's edges ({len(edges)}) onto {tid} where the edge rules allow, "
            f"adds a 'replaces' edge {tid} -> {sid} and archives {sid} (both notes stay in the vault)."
        )
        item["instruction"] = (
            f"Call memory_supersede again with action=merge, source_id={sid}, target_id={tid}, the same "
            "merged_content/merged_tags/cwd, confirm=true and this preview_token to proceed."
        )
        return self.ctx.tokens.preview_one(TOOL, "merge", args, item)

    def _status_of(self, entry: Entry | None) -> str | None:
        return self.lookup.thought(entry).status if entry is not None else None

    def _source_edges(self, sid: str) -> list[Edge]:
        """The source's typed edges, outgoing and incoming, oldest first. Links written in a note's
        text (``links_to``) stay where they are: they are the person's words, never rewritten; so
        does a typed link a person's own note declares in its properties (``related: "[[x]]"``),
        which vaultmem never changes (rewriting it refused the whole merge)."""
        records = sorted(
            (e for e in self.lookup.edges.edges_of(sid) if e.type != TEXT_LINK and self._movable(e)),
            key=lambda e: (e.created_at, e.id),
        )
        return records

    def _movable(self, edge: Edge) -> bool:
        holder = self.lookup.entry(edge.source_id)
        return holder is None or self.ctx.layout.writable(holder.path)

    def _transfers(self, sid: str, tid: str, target_is_cluster: bool) -> list[_Transfer]:
        out: list[_Transfer] = []
        for edge in self._source_edges(sid):
            outgoing = edge.source_id == sid
            new_source = tid if outgoing else edge.source_id
            new_target = edge.target_id if outgoing else tid
            dropped = None
            if new_source == new_target:
                dropped = "self_loop"
            elif edge.type == "cluster" and outgoing and not target_is_cluster:
                dropped = "cluster_rule"
            out.append(_Transfer(edge, new_source, new_target, dropped))
        return out

    def plan_merge(
        self,
        draft: Draft,
        source: Entry,
        target: Entry,
        content: str | None,
        tags: list[str] | None,
        project: str | None,
    ) -> int:
        """Plan every file edit of a merge into ``draft``; return how many source edges the target holds."""
        sid, tid = self.lookup.id_of(source), self.lookup.id_of(target)
        now = iso(self.ctx.now())
        transferred = 0
        for move in self._transfers(sid, tid, target.is_cluster):
            edge = move.edge
            if move.dropped == "self_loop":
                # The pair (target, source) will carry the 'replaces' edge: one edge per pair.
                self._remove(draft, edge)
                continue
            if move.dropped is not None:
                continue  # left on the archived source, as history
            new_src = self.lookup.entry(move.new_source)
            new_tgt = self.lookup.entry(move.new_target)
            if new_src is None or new_tgt is None:
                continue
            try:
                check_endpoints(move.new_source, move.new_target, edge.type, new_src.is_cluster)
                metas = {
                    p: t.meta for p in (new_src.path, new_tgt.path) if (t := draft.edited(p)) is not None
                }
                between = self.lookup.links_between(new_src, new_tgt, metas)
                decision = decide_link(move.new_source, move.new_target, edge.type, between)
            except (Conflict, InvalidInput):
                continue  # a duplicate (or another edge on the pair): left on the archived source
            if decision.action == "upgrade":
                assert decision.existing is not None
                self._remove(draft, decision.existing)
            if decision.action in ("create", "upgrade"):
                holder = draft.text_of(new_src.path)
                stamp = edge.created_at or now
                draft.put(
                    new_src.path,
                    add_link(holder, edge.type, self.lookup.link_to(new_tgt), stamp),
                    "merge: edge moved",
                )
            self._remove(draft, edge)  # moved (or already held by the target): off the source
            transferred += 1
        # The target records the consolidation, then takes the merged content, tags and project.
        text = add_link(draft.text_of(target.path), "replaces", self.lookup.link_to(source), now)
        if content is not None:
            text = fm.with_body(text, content if content.endswith("\n") else content + "\n")
        changes: dict[str, object] = {"updated": now}
        if tags is not None:
            hidden = [t for t in target.tags if t.startswith(IDEM_TAG_PREFIX)]
            changes["tags"] = [*tags, *hidden]
        final_project = project or target.project or source.project
        if final_project and final_project != target.project:
            changes["project"] = final_project
        draft.put(target.path, fm.set_fields(text, changes), "merge target")
        self._archive_text(draft, source, now)
        return transferred

    def _remove(self, draft: Draft, edge: Edge) -> None:
        holder = self.lookup.entry(edge.source_id)
        if holder is None:
            return
        text, removed = self.lookup.without_link(
            draft.text_of(holder.path), holder.path, edge.type, edge.target_id
        )
        if removed:
            draft.put(holder.path, text, "merge: edge moved")


__all__ = ["MAX_BATCH", "MAX_PREVIEW_EDGES", "MergeSpec", "Supersede", "VaultmemError"]
