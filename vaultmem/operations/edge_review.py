"""``edge_review``: enqueue placement proposals, list them, apply, roll back or reject them.

``enqueue`` runs the placement engine (the one behind ``memory_status action=propose``) for an active
thought and queues its edges (:mod:`vaultmem.graph.proposals`). ``apply``, ``apply_batch`` and
``rollback`` preview first and run only with ``confirm: true`` and the preview's token. Execution
decides again against the vault as it is then: a proposal whose endpoints are gone, archived or
rewritten, or whose pair has been linked meanwhile, is ``stale``; one that is not pending (or of a
retired kind) is ``refused``; an unexpected error on one row is ``failed``; the rest are ``accepted``
and become ``[[wikilinks]]`` in the source notes' frontmatter, one git commit per action. Applying
over a ``related`` placeholder upgrades it in place (the document's pair rule) and remembers it, so a
rollback removes the applied edge and puts the placeholder back as it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vaultmem.errors import Conflict, InvalidInput, NotFound, VaultmemError
from vaultmem.notes.ids import uuid7
from vaultmem.notes.links import Edge, add_link, created_at_of, typed_links
from vaultmem.notes.model import LIVE_STATUSES, iso
from vaultmem.operations.context import Context
from vaultmem.operations.edges import check_endpoints, decide_link
from vaultmem.operations.placement import Placement, Subject
from vaultmem.operations.proposals import (
    APPLIED,
    EDGE_KIND,
    PENDING,
    REJECTED,
    ROLLED_BACK,
    STALE,
    STATUSES,
    Proposal,
    ProposalQueue,
    content_hash,
    is_retired,
)
from vaultmem.operations.recall import check_int
from vaultmem.operations.results import Answer, Json, Row
from vaultmem.vault.plan import Draft, Plan

TOOL = "edge_review"
MAX_PROPOSALS = 20
DEFAULT_MAX_PROPOSALS = 5
MAX_BATCH = 500
MAX_LIST_LIMIT = 100
DEFAULT_LIST_LIMIT = 20
#: The review queue's file in the state directory (derived state; see proposals.py).
QUEUE_FILE = "edge_review.json"


class EdgeReview:
    """The actions of ``edge_review``."""

    def __init__(self, ctx: Context, engine: Placement) -> None:
        self.ctx = ctx
        self.lookup = ctx.lookup
        self.engine = engine
        self.queue = ProposalQueue(ctx.settings.state_dir / QUEUE_FILE)

    def _now(self) -> str:
        return iso(self.ctx.now())

    # -- enqueue ------------------------------------------------------------------------------------
    def enqueue(
        self, thought_id: Json, max_proposals: int | None, project: str | None, project_id: str | None
    ) -> Answer:
        """Queue the plan's edges for an active thought (at most ``max_proposals``)."""
        limit = check_int(
            "max_proposals",
            DEFAULT_MAX_PROPOSALS if max_proposals is None else max_proposals,
            1,
            MAX_PROPOSALS,
        )
        entry = self.lookup.require(thought_id)
        if entry.status != "active":
            raise InvalidInput(
                f"enqueue needs a persisted, active thought; {thought_id} is "
                f"{'draft' if entry.status == 'unfiled' else entry.status}"
            )
        subject = Subject(entry, self.lookup.thought(entry).content)
        home = project if project is not None else entry.project
        plan = self.engine.plan(subject, home, project_id, limit)
        known = {(p.source_id, p.target_id, p.type): p for p in self.queue.rows(lambda p: p.status != STALE)}
        now = self._now()
        added: list[Proposal] = []
        skipped: list[Row] = []
        for edge in plan.edges:
            assert edge.source_id is not None and edge.target_id is not None
            key = (edge.source_id, edge.target_id, edge.type)
            earlier = known.get(key)
            if earlier is not None and earlier.status != ROLLED_BACK:
                skipped.append(
                    {
                        "source_id": edge.source_id,
                        "target_id": edge.target_id,
                        "type": edge.type,
                        "proposal_id": earlier.id,
                        "reason": f"already {earlier.status}",
                    }
                )
                continue
            neighbour_id = str(edge.signals["neighbour_id"])
            basis = {
                self.lookup.id_of(entry): content_hash(subject.content),
                neighbour_id: content_hash(self.lookup.thought(edge.neighbour).content),
            }
            added.append(
                Proposal(
                    id=uuid7(),
                    kind=EDGE_KIND,
                    status=PENDING,
                    thought_id=self.lookup.id_of(entry),
                    source_id=edge.source_id,
                    target_id=edge.target_id,
                    type=edge.type,
                    score=edge.score,
                    project=home,
                    created_at=now,
                    updated_at=now,
                    basis=basis,
                )
            )
        if added:
            self.queue.add(added)
        item: Row = {
            "thought_id": self.lookup.id_of(entry),
            "proposals": [self._row(p) for p in added],
            "skipped": skipped,
        }
        answer = Answer.one("enqueue", item, proposals=len(added), skipped=len(skipped))
        answer.degraded = plan.degraded
        answer.warnings = list(plan.warnings)
        return answer

    def _row(self, proposal: Proposal) -> Row:
        row = proposal.row()
        for end in ("source", "target"):
            entry = self.lookup.entry(getattr(proposal, f"{end}_id"))
            row[f"{end}_title"] = entry.title if entry is not None else None
        return row

    # -- list ---------------------------------------------------------------------------------------
    def list_queue(
        self,
        status: str | None,
        thought_id: str | None,
        project: str | None,
        include_retired: bool,
        limit: int | None,
        offset: int,
    ) -> Answer:
        wanted = status or PENDING
        if wanted != "all" and wanted not in STATUSES:
            raise InvalidInput(f"status must be one of {', '.join(STATUSES)} or all")
        page_size = check_int("limit", DEFAULT_LIST_LIMIT if limit is None else limit, 1, MAX_LIST_LIMIT)
        check_int("offset", offset, 0, 10**9)

        def matches(p: Proposal) -> bool:
            return (
                (wanted == "all" or p.status == wanted)
                and (
                    thought_id is None
                    or thought_id.strip().lower() in (p.thought_id, p.source_id, p.target_id)
                )
                and (project is None or p.project == project)
            )

        matching = self.queue.rows(matches)
        retired = [p for p in matching if is_retired(p.kind)]
        visible = matching if include_retired else [p for p in matching if not is_retired(p.kind)]
        page = visible[offset : offset + page_size]
        return Answer.many(
            "list",
            [self._row(p) for p in page],
            total=len(matching),
            filtered_out=len(matching) - len(page),
            retired_count=len(retired),
            all_total=len(self.queue),
            limit=page_size,
            offset=offset,
        )

    # -- apply / apply_batch --------------------------------------------------------------------------
    def apply(self, proposal_id: Json, confirm: bool, token: str | None) -> Answer:
        proposal = self._require(proposal_id)
        args = {"proposal_id": proposal.id}
        if not confirm:
            status, reason = self._check(proposal, self.ctx.draft())
            item: Row = {"proposal_id": proposal.id, "proposal": self._row(proposal)}
            if status != "ok":
                return Answer.one("apply", {**item, "status": status, "reason": reason})
            consequence = self._consequence(proposal)
            item.update(
                {
                    "status": "dry_run",
                    "consequence": consequence,
                    "instruction": f"Call edge_review again with action=apply, proposal_id={proposal.id}, "
                    "confirm=true and this preview_token to proceed.",
                }
            )
            answer = self.ctx.tokens.preview_one(TOOL, "apply", args, item)
            assert answer.preview is not None
            answer.preview["consequence"] = consequence
            return answer
        self.ctx.tokens.redeem(
            token, TOOL, "apply", args, f"edge_review action=apply proposal_id={proposal.id}"
        )
        rows = self._apply([proposal.id], "apply")
        row = rows[0]
        return Answer.one("apply", {**row, "proposal": self._row(self._require(proposal.id))})

    def apply_batch(self, proposal_ids: Json, confirm: bool, token: str | None) -> Answer:
        ids = self._ids(proposal_ids)
        args = {"proposal_ids": ids}
        if not confirm:
            draft = self.ctx.draft()
            rows: list[Row] = []
            for pid in ids:
                proposal = self.queue.get(pid)
                if proposal is None:
                    rows.append({"proposal_id": pid, "status": "failed", "reason": "no such proposal"})
                    continue
                status, reason = self._check(proposal, draft)
                if status == "ok":
                    rows.append(
                        {"proposal_id": pid, "status": "dry_run", "consequence": self._consequence(proposal)}
                    )
                else:
                    rows.append({"proposal_id": pid, "status": status, "reason": reason})
            answer = self._batch_answer("apply_batch", rows, ("dry_run", "stale", "refused"))
            if any(r["status"] == "dry_run" for r in rows):
                token = self.ctx.tokens.issue(TOOL, "apply_batch", args)
                answer.preview = {
                    "token": token,
                    "destructive": True,
                    "consequence": "Writes the dry_run rows' edges into the vault (one commit).",
                    "instruction": "Call edge_review again with action=apply_batch, the same proposal_ids, "
                    f"confirm=true and preview_token={token} to proceed.",
                }
            return answer
        self.ctx.tokens.redeem(
            token, TOOL, "apply_batch", args, "edge_review action=apply_batch (same proposal_ids)"
        )
        return self._batch_answer(
            "apply_batch", self._apply(ids, "apply_batch"), ("accepted", "stale", "refused")
        )

    def _batch_answer(self, action: str, rows: list[Row], statuses: Sequence[str]) -> Answer:
        counts = {s: sum(1 for r in rows if r["status"] == s) for s in (*statuses, "failed")}
        answer = Answer.many(action, rows, **counts)
        if rows and counts[statuses[0]] == 0:
            answer.warnings.append(
                f"{action} refused as a whole: none of the {len(rows)} proposal(s) can be applied "
                "(see each row's status and reason)"
            )
        return answer

    def _apply(self, ids: list[str], action: str) -> list[Row]:
        """Decide every proposal against the vault as it is now, write the accepted ones in one commit."""

        def decide() -> Plan[list[tuple[Row, Proposal | None]]]:
            draft = self.ctx.draft()
            out: list[tuple[Row, Proposal | None]] = []
            for pid in ids:
                proposal = self.queue.get(pid)
                if proposal is None:
                    out.append(({"proposal_id": pid, "status": "failed", "reason": "no such proposal"}, None))
                    continue
                try:
                    status, reason = self._check(proposal, draft)
                    if status == "ok":
                        proposal.applied = self._plan_apply(draft, proposal)
                        proposal.status, proposal.reason = APPLIED, None
                        out.append(({"proposal_id": pid, "status": "accepted", **proposal.applied}, proposal))
                        continue
                    if status == "stale":
                        proposal.status, proposal.reason = STALE, reason
                        out.append(({"proposal_id": pid, "status": "stale", "reason": reason}, proposal))
                    else:
                        out.append(({"proposal_id": pid, "status": status, "reason": reason}, None))
                except VaultmemError as exc:
                    out.append(({"proposal_id": pid, "status": "failed", "reason": str(exc)}, None))
            return draft.plan(out)

        summary = f"{action} {len(ids)} proposal(s): " + ", ".join(ids[:20])
        decided = self.ctx.writer.run(decide, tool=TOOL, summary=summary).result
        now = self._now()
        changed = []
        for _row, proposal in decided or []:
            if proposal is not None:
                proposal.updated_at = now
                changed.append(proposal)
        if changed:
            self.queue.update(changed)
        return [row for row, _p in decided or []]

    def _check(self, proposal: Proposal, draft: Draft) -> tuple[str, str | None]:
        """("ok", None), ("stale", why) or ("refused", why) for applying ``proposal`` now."""
        if is_retired(proposal.kind):
            return "refused", f"proposals of kind {proposal.kind!r} are retired and no longer applied"
        if proposal.status != PENDING:
            return "refused", f"the proposal is {proposal.status}, not pending"
        ends = {}
        for end in ("source_id", "target_id"):
            note_id = getattr(proposal, end)
            entry = self.lookup.entry(note_id)
            if entry is None or entry.status not in LIVE_STATUSES:
                state = "gone" if entry is None else entry.status
                return "stale", f"{end.removesuffix('_id')} {note_id} is {state} in the vault now"
            if proposal.basis.get(note_id) not in (None, content_hash(self.lookup.thought(entry).content)):
                return "stale", f"the content of {note_id} changed since the proposal was made"
            ends[end] = entry
        source, target = ends["source_id"], ends["target_id"]
        try:
            check_endpoints(proposal.source_id, proposal.target_id, proposal.type, source.is_cluster)
        except InvalidInput as exc:
            return "stale", str(exc)
        metas = {p: t.meta for p in (source.path, target.path) if (t := draft.edited(p)) is not None}
        between = self.lookup.links_between(source, target, metas)
        try:
            decision = decide_link(proposal.source_id, proposal.target_id, proposal.type, between)
        except Conflict as exc:
            return "stale", f"the pair is linked already: {exc}"
        if decision.action == "replay":
            return "stale", "the pair already carries this edge"
        return "ok", None

    def _plan_apply(self, draft: Draft, proposal: Proposal) -> Row:
        source = self.lookup.entry(proposal.source_id)
        target = self.lookup.entry(proposal.target_id)
        assert source is not None and target is not None
        metas = {p: t.meta for p in (source.path, target.path) if (t := draft.edited(p)) is not None}
        between = self.lookup.links_between(source, target, metas)
        decision = decide_link(proposal.source_id, proposal.target_id, proposal.type, between)
        now = self._now()
        replaced = None
        if decision.action == "upgrade":
            old = decision.existing
            assert old is not None
            holder = source if old.source_id == proposal.source_id else target
            created = self._created_at(draft, holder.path, old) or now
            text, _removed = self.lookup.without_link(
                draft.text_of(holder.path), holder.path, old.type, old.target_id
            )
            draft.put(holder.path, text, "edge_review: placeholder upgraded")
            replaced = {**old.to_dict(), "created_at": created}
        draft.put(
            source.path,
            add_link(draft.text_of(source.path), proposal.type, self.lookup.link_to(target), now),
            f"edge_review: proposal {proposal.id} applied",
        )
        edge = Edge.make(proposal.source_id, proposal.type, proposal.target_id, now)
        return {"edge_id": edge.id, "edge": edge.to_dict(), "replaced": replaced}

    def _created_at(self, draft: Draft, rel: str, edge: Edge) -> str | None:
        meta = draft.text_of(rel).meta
        points_at = self.lookup.points_at(rel, meta, edge.type, edge.target_id)
        for edge_type, name in typed_links(meta):
            if edge_type == edge.type and points_at(name):
                return created_at_of(meta, edge_type, name)
        return edge.created_at or None

    def _consequence(self, proposal: Proposal) -> str:
        return (
            f"Adds a '{proposal.type}' edge {proposal.source_id} -> {proposal.target_id} to the vault "
            "(a [[wikilink]] in the source note's frontmatter; a 'related' placeholder on the pair is "
            "upgraded in place)."
        )

    # -- rollback -----------------------------------------------------------------------------------
    def rollback(self, proposal_ids: Json, confirm: bool, token: str | None) -> Answer:
        ids = self._ids(proposal_ids)
        args = {"proposal_ids": ids}
        if not confirm:
            rows = [self._rollback_check(pid) for pid in ids]
            for row in rows:
                if row["status"] == "ok":
                    row["status"] = "would_revert"
            answer = Answer.many(
                "rollback",
                rows,
                **{
                    s: sum(1 for r in rows if r["status"] == s)
                    for s in ("would_revert", "skipped", "refused")
                },
            )
            if any(r["status"] == "would_revert" for r in rows):
                token = self.ctx.tokens.issue(TOOL, "rollback", args)
                answer.preview = {
                    "token": token,
                    "destructive": True,
                    "consequence": "Removes the edges the would_revert rows applied and restores what they "
                    "replaced (one commit).",
                    "instruction": "Call edge_review again with action=rollback, the same proposal_ids, "
                    f"confirm=true and preview_token={token} to proceed.",
                }
            return answer
        self.ctx.tokens.redeem(
            token, TOOL, "rollback", args, "edge_review action=rollback (same proposal_ids)"
        )

        def decide() -> Plan[list[tuple[Row, Proposal | None]]]:
            draft = self.ctx.draft()
            out: list[tuple[Row, Proposal | None]] = []
            for pid in ids:
                row = self._rollback_check(pid)
                if row["status"] != "ok":
                    out.append((row, None))
                    continue
                proposal = self.queue.get(pid)
                assert proposal is not None and proposal.applied is not None
                self._plan_rollback(draft, proposal)
                proposal.status, proposal.reason = ROLLED_BACK, None
                out.append(({**row, "status": "reverted"}, proposal))
            return draft.plan(out)

        summary = f"rollback {len(ids)} proposal(s): " + ", ".join(ids[:20])
        decided = self.ctx.writer.run(decide, tool=TOOL, summary=summary).result
        now = self._now()
        changed = [p for _r, p in decided or [] if p is not None]
        for p in changed:
            p.updated_at = now
        if changed:
            self.queue.update(changed)
        rows = [r for r, _p in decided or []]
        return Answer.many(
            "rollback",
            rows,
            **{s: sum(1 for r in rows if r["status"] == s) for s in ("reverted", "skipped", "refused")},
        )

    def _rollback_check(self, pid: str) -> Row:
        proposal = self.queue.get(pid)
        if proposal is None:
            return {"proposal_id": pid, "status": "refused", "reason": "no such proposal"}
        if proposal.status != APPLIED or proposal.applied is None:
            return {
                "proposal_id": pid,
                "status": "refused",
                "reason": f"the proposal is {proposal.status}, not applied",
            }
        edge_id = str(proposal.applied["edge_id"])
        if self.lookup.locate(edge_id) is None:
            return {
                "proposal_id": pid,
                "status": "skipped",
                "reason": f"edge {edge_id} is no longer in the vault (removed or retyped since); "
                "nothing to undo",
            }
        return {"proposal_id": pid, "status": "ok", "edge_id": edge_id}

    def _plan_rollback(self, draft: Draft, proposal: Proposal) -> None:
        applied = proposal.applied
        assert applied is not None
        hit = self.lookup.locate(str(applied["edge_id"]))
        assert hit is not None
        text, _removed = self.lookup.without_link(
            draft.text_of(hit.source.path), hit.source.path, hit.edge.type, hit.edge.target_id
        )
        draft.put(hit.source.path, text, f"edge_review: proposal {proposal.id} rolled back")
        replaced = applied.get("replaced")
        if isinstance(replaced, Mapping) and replaced:
            holder = self.lookup.entry(str(replaced["source_id"]))
            target = self.lookup.entry(str(replaced["target_id"]))
            if holder is not None and target is not None:
                draft.put(
                    holder.path,
                    add_link(
                        draft.text_of(holder.path),
                        str(replaced["type"]),
                        self.lookup.link_to(target),
                        str(replaced["created_at"]),
                    ),
                    "edge_review: placeholder restored",
                )

    # -- reject -------------------------------------------------------------------------------------
    def reject(self, proposal_id: Json, reason: str | None) -> Answer:
        proposal = self._require(proposal_id)
        previous = proposal.status
        if previous in (PENDING, STALE):
            proposal.status, proposal.reason, proposal.updated_at = REJECTED, reason, self._now()
            self.queue.update([proposal])
            item: Row = {"proposal_id": proposal.id, "status": "rejected", "previous_status": previous}
        elif previous == REJECTED:
            item = {"proposal_id": proposal.id, "status": "rejected", "previous_status": previous}
        else:
            item = {
                "proposal_id": proposal.id,
                "status": "refused",
                "previous_status": previous,
                "reason": f"the proposal is {previous}; "
                + (
                    "roll it back with action=rollback instead"
                    if previous == APPLIED
                    else "nothing to reject"
                ),
            }
        return Answer.one("reject", {**item, "proposal": self._row(self._require(proposal.id))})

    # -- helpers --------------------------------------------------------------------------------------
    def _require(self, proposal_id: Json) -> Proposal:
        if not isinstance(proposal_id, str) or not proposal_id.strip():
            raise InvalidInput(
                "proposal_id is required: pass the id of a proposal (from edge_review action=list)"
            )
        proposal = self.queue.get(proposal_id)
        if proposal is None:
            raise NotFound(f"no proposal has id {proposal_id}; list them with edge_review action=list")
        return proposal

    @staticmethod
    def _ids(proposal_ids: Json) -> list[str]:
        if isinstance(proposal_ids, str):
            proposal_ids = [proposal_ids]
        if not isinstance(proposal_ids, list) or not 1 <= len(proposal_ids) <= MAX_BATCH:
            raise InvalidInput(f"proposal_ids must be a list of 1 to {MAX_BATCH} proposal ids; nothing ran")
        if not all(isinstance(p, str) and p.strip() for p in proposal_ids):
            raise InvalidInput("every proposal_ids entry must be a proposal id")
        return [p.strip().lower() for p in proposal_ids]
