"""``retention_review``: list retention candidates, protect one, delete one, compact several.

A manual workflow, never a scheduled deletion: nothing changes until a caller runs ``delete`` or
``compact``. A thought is a candidate only when every signal holds at once (graph document):

- status ``archived`` (or ``superseded`` / ``expired``) or ``draft`` (the vault's ``unfiled``);
- its age anchor (``archived_at`` in the frontmatter, falling back to ``created``) is older than the
  minimum age;
- importance below the floor (a missing importance counts as 1.0, so it never qualifies);
- no recorded hits (``memory_recall`` hit counters; a missing count is 0);
- no incoming edge from an ``active`` thought;
- not protected, ``surface_after`` absent or already due, and not global.

``delete`` is a soft delete (``status: deleted``, ``deleted_at``; the file stays); ``compact`` writes a
protected, active summary and merges every source into it with ``memory_supersede``'s merge (edges
moved, source archived, a ``replaces`` edge from the summary).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass

from vaultmem.errors import Conflict, InvalidInput, NotFound
from vaultmem.filing import rules
from vaultmem.notes import frontmatter as fm
from vaultmem.notes.links import EDGE_TYPES
from vaultmem.notes.model import DRAFT_STATUS, iso, parse_time
from vaultmem.operations.context import Context
from vaultmem.operations.primers import Primers
from vaultmem.operations.projects import project_id, project_named
from vaultmem.operations.recall import check_int
from vaultmem.operations.results import STATUS_FILTERS, Answer, Json, Row, WithColumns
from vaultmem.operations.supersede import Supersede
from vaultmem.operations.thoughts import NewThought, check_thought, plan_thought
from vaultmem.vault.entry import Entry
from vaultmem.vault.plan import Plan

TOOL = "retention_review"
CONTENT_CHARS = 200
MAX_LIMIT = 100
MAX_SOURCES = 1000
CANDIDATE_STATUSES = STATUS_FILTERS["archived"] | {DRAFT_STATUS}
#: The importance of a thought that records none (so it is never below a 0-1 floor).
MISSING_IMPORTANCE = 1.0


@dataclass(frozen=True)
class Signals:
    """Every eligibility signal of one thought, as measured when it was listed."""

    status: str
    age_anchor: str | None
    age_anchor_source: str
    age_days: float | None
    importance: float
    hits: int
    incoming_active_edges: int
    is_protected: bool
    surface_after: str | None
    surface_due: bool
    is_global: bool

    def eligible(self, min_age_days: float, importance_floor: float) -> bool:
        """Old enough, unimportant, never recalled, nothing active points at it, unprotected."""
        return (
            self.age_days is not None
            and self.age_days > min_age_days
            and self.importance < importance_floor
            and self.hits == 0
            and self.incoming_active_edges == 0
            and not self.is_protected
            and self.surface_due
            and not self.is_global
        )


@dataclass(frozen=True)
class RetentionSettings:
    """The server's retention defaults; every ``list`` call may override them."""

    min_age_days: float = 30.0
    importance_floor: float = 0.3
    page_size: int = 20


class Retention:
    """The actions of ``retention_review``."""

    def __init__(self, ctx: Context, supersede: Supersede, primers: Primers) -> None:
        self.ctx = ctx
        self.lookup = ctx.lookup
        self.supersede = supersede
        self.hits = primers.hits_of
        settings = ctx.settings
        self.settings = RetentionSettings(
            settings.retention_min_age_days, settings.retention_importance_floor, settings.retention_page_size
        )

    # -- list -----------------------------------------------------------------------------------------
    def signals(self, entry: Entry, now: dt.datetime) -> Signals:
        """Every eligibility signal of one thought, as measured now."""
        note_id = self.lookup.id_of(entry)
        anchor, source = entry.created, "created_at"
        if entry.status in STATUS_FILTERS["archived"]:
            text = self.ctx.store.read(entry.path).text
            stamp = text.meta.get("archived_at") if text is not None else None
            if stamp and parse_time(str(stamp)) is not None:
                anchor, source = str(stamp), "archived_at"
        when = parse_time(anchor) if anchor else None
        incoming_active = sum(
            1
            for r in self.lookup.edges.incoming(note_id)
            if (src := self.lookup.entry(r.source_id)) and src.status == "active"
        )
        surface = parse_time(entry.surface_after) if entry.surface_after else None
        return Signals(
            status="draft" if entry.status == DRAFT_STATUS else entry.status,
            age_anchor=anchor,
            age_anchor_source=source,
            age_days=round((now - when).total_seconds() / 86400, 2) if when else None,
            importance=MISSING_IMPORTANCE if entry.importance is None else entry.importance,
            hits=self.hits(note_id),
            incoming_active_edges=incoming_active,
            is_protected=entry.is_protected,
            surface_after=entry.surface_after,
            surface_due=surface is None or surface <= now,
            is_global=entry.is_global,
        )

    def candidates(
        self,
        min_age_days: float | None,
        importance_floor: float | None,
        limit: int | None,
        offset: int,
    ) -> Answer:
        age = self.settings.min_age_days if min_age_days is None else min_age_days
        if isinstance(age, bool) or not isinstance(age, int | float) or age <= 0:
            raise InvalidInput("min_age_days must be a positive number of days")
        floor = self.settings.importance_floor if importance_floor is None else importance_floor
        if isinstance(floor, bool) or not isinstance(floor, int | float) or not 0 <= floor <= 1:
            raise InvalidInput("importance_floor must be between 0 and 1")
        page_size = check_int("limit", self.settings.page_size if limit is None else limit, 1, MAX_LIMIT)
        check_int("offset", offset, 0, 10**9)
        now = self.ctx.now()
        found: list[tuple[str, str, Entry, Signals]] = []
        for entry in self.ctx.catalog.entries():
            if entry.status not in CANDIDATE_STATUSES:
                continue
            signals = self.signals(entry, now)
            if signals.eligible(float(age), float(floor)):
                found.append((signals.age_anchor or "", self.lookup.id_of(entry), entry, signals))
        found.sort(key=lambda row: (parse_time(row[0]) or now, row[1]))  # oldest first, then by id
        page = found[offset : offset + page_size]
        thoughts = self.lookup.thoughts(e for _a, _i, e, _s in page)
        items = []
        for _anchor, note_id, entry, signals in page:
            thought = thoughts[note_id]
            short = dataclasses.replace(thought, content=thought.content[:CONTENT_CHARS])
            extra: Row = {
                "project_id": project_id(self.ctx, entry.project),
                "project_name": entry.project,
                "signals": dataclasses.asdict(signals),
            }
            items.append(WithColumns(short, extra))
        return Answer.many(
            "list",
            items,
            total=len(found),
            filtered_out=len(found) - len(items),
            limit=page_size,
            offset=offset,
        )

    # -- protect --------------------------------------------------------------------------------------
    def protect(self, thought_id: Json) -> Answer:
        entry = self._live(thought_id)
        if entry.is_protected:
            item: Row = {
                "thought_id": self.lookup.id_of(entry),
                "status": "already_protected",
                "protected": True,
            }
            return Answer.one("protect", {**item, "thought": self.lookup.thought(entry)})

        def decide() -> Plan[str]:
            current = self._live(thought_id)
            draft = self.ctx.draft()
            text = fm.set_fields(
                draft.text_of(current.path), {"is_protected": True, "updated": iso(self.ctx.now())}
            )
            draft.put(current.path, text, "protect")
            return draft.plan(current.path)

        rel = self.ctx.writer.run(decide, tool=TOOL, summary="protect").result
        fresh = self.ctx.catalog.by_path(rel or entry.path) or entry
        item = {"thought_id": self.lookup.id_of(fresh), "status": "protected", "protected": True}
        return Answer.one("protect", {**item, "thought": self.lookup.thought(fresh)})

    # -- delete ---------------------------------------------------------------------------------------
    def delete(self, thought_id: Json, confirm: bool, token: str | None) -> Answer:
        entry = self.lookup.require(thought_id, forgotten_ok=True)
        note_id = self.lookup.id_of(entry)
        if entry.status == "deleted":
            item: Row = {
                "status": "already_deleted",
                "action": "deleted",
                "deleted": True,
                "thought_id": note_id,
            }
            return Answer.one("delete", {**item, "preview": False, "confirm": confirm, "dependents": []})
        self._refuse_protected(entry)
        dependents = self._dependents(note_id)
        instruction = (
            f"Call retention_review again with action=delete, thought_id={note_id}, confirm=true and this "
            "preview_token to soft-delete it (status deleted; the file stays in the vault)."
        )
        args = {"thought_id": note_id}
        if not confirm:
            item = {
                "status": "preview",
                "action": "preview",
                "deleted": False,
                "preview": True,
                "confirm": False,
                "thought_id": note_id,
                "dependents": dependents,
                "instruction": instruction,
            }
            answer = self.ctx.tokens.preview_one(TOOL, "delete", args, item)
            assert answer.preview is not None
            answer.preview["consequence"] = instruction
            return answer
        self.ctx.tokens.redeem(
            token, TOOL, "delete", args, f"retention_review action=delete thought_id={note_id}"
        )

        def decide() -> Plan[None]:
            current = self.lookup.require(note_id, forgotten_ok=True)
            if current.status == "deleted":
                return Plan([], None)
            self._refuse_protected(current)
            draft = self.ctx.draft()
            changes = {"status": "deleted", "deleted_at": iso(self.ctx.now()), "delete_reason": TOOL}
            draft.put(current.path, fm.set_fields(draft.text_of(current.path), changes), "soft delete")
            return draft.plan(None)

        self.ctx.writer.run(decide, tool=TOOL, summary="delete (soft)")
        item = {
            "status": "deleted",
            "action": "deleted",
            "deleted": True,
            "preview": False,
            "confirm": True,
            "thought_id": note_id,
            "dependents": dependents,
        }
        return Answer.one("delete", item)

    def _dependents(self, note_id: str) -> list[Row]:
        """Thoughts whose links point at this one (their ``parent``, ``depends_on``, ... edges)."""
        out: list[Row] = []
        for record in sorted(self.lookup.edges.incoming(note_id), key=lambda r: (r.source_id, r.type)):
            source = self.lookup.entry(record.source_id)
            if source is not None and source.status == "deleted":
                continue  # a forgotten thought is left out of every answer
            out.append(
                {
                    "thought_id": record.source_id,
                    "title": source.title if source is not None else None,
                    "status": self.lookup.thought(source).status if source is not None else None,
                    "edge_id": record.id,
                    "type": record.type,
                }
            )
        return out

    # -- compact --------------------------------------------------------------------------------------
    def compact(self, source_ids: Json, summary: Json, confirm: bool) -> Answer:
        if not isinstance(source_ids, list) or not 1 <= len(source_ids) <= MAX_SOURCES:
            raise InvalidInput(f"source_ids must be a list of 1 to {MAX_SOURCES} thought ids; nothing ran")
        sources = list({self.lookup.id_of(e): e for e in map(self._live, source_ids)}.values())
        for entry in sources:
            self._refuse_protected(entry)
        if not isinstance(summary, dict) or not isinstance(summary.get("content"), str):
            raise InvalidInput(
                "summary must be an object {content, tags?, project_id?} with the content as text"
            )
        contract = self.ctx.contract()
        content = rules.check_content(summary["content"], contract)
        tags = rules.check_tags(summary.get("tags"), contract)
        project = self._summary_project(summary.get("project_id"), sources)
        ids = [self.lookup.id_of(e) for e in sources]
        instruction = (
            "Call retention_review again with action=compact, the same source_ids and summary, and "
            "confirm=true to proceed (no preview_token is needed)."
        )
        if not confirm:
            item: Row = {
                "status": "preview",
                "preview": True,
                "confirm": False,
                "source_ids": ids,
                "summary": {"content": content, "tags": tags, "project": project},
                "instruction": instruction,
            }
            answer = Answer.one("compact", item, sources=len(ids))
            answer.preview = {
                "token": None,
                "destructive": True,
                "consequence": f"Creates a protected, active summary thought and merges the {len(ids)} "
                "source(s) into it (their edges move to the summary; they are archived, never deleted).",
                "instruction": instruction,
            }
            return answer
        row = check_thought(self.ctx, NewThought(content, tags, "active", is_protected=True), contract)

        def create() -> Plan[str]:
            draft = self.ctx.draft()
            now = self.ctx.now()
            rules.check_cap(self.ctx.catalog.written_since(now.date()), contract, now.date(), TOOL)
            rel = plan_thought(self.ctx, draft, row, project, now)
            return draft.plan(rel)

        rel = self.ctx.writer.run(create, tool=TOOL, summary="compact: summary").result
        assert rel is not None
        summary_entry = self.ctx.catalog.by_path(rel)
        assert summary_entry is not None

        def merge_all() -> Plan[None]:
            target = self.ctx.catalog.by_path(rel)
            assert target is not None
            draft = self.ctx.draft()
            for source_id in ids:
                current = self._live(source_id)
                self.supersede.plan_merge(draft, current, target, None, None, None)
            # An edge between two sources would reach the summary twice (moved, then as `replaces`):
            # the summary keeps only its `replaces` edge to each source (one edge per pair).
            text = draft.text_of(target.path)
            for source_id in ids:
                for edge_type in EDGE_TYPES:
                    if edge_type != "replaces":
                        text, _gone = self.lookup.without_link(text, target.path, edge_type, source_id)
            draft.put(target.path, text, "compact: summary")
            return draft.plan(None)

        self.ctx.writer.run(merge_all, tool=TOOL, summary=f"compact {len(ids)} source(s) into the summary")
        fresh = self.ctx.catalog.by_path(rel) or summary_entry
        item = {
            "status": "compacted",
            "preview": False,
            "confirm": True,
            "source_ids": ids,
            "summary": self.lookup.thought(fresh),
        }
        return Answer.one("compact", item, sources=len(ids))

    def _summary_project(self, wanted: Json, sources: list[Entry]) -> str | None:
        if wanted is None:
            projects = {e.project for e in sources}
            return projects.pop() if len(projects) == 1 else None
        if not isinstance(wanted, str) or not wanted.strip():
            raise InvalidInput("summary.project_id must be a project id (memory_manage action=list)")
        name = project_named(self.ctx, wanted)
        if name is None:
            raise NotFound(f"no project has id {wanted}; list them with memory_manage action=list")
        return name

    # -- helpers --------------------------------------------------------------------------------------
    def _live(self, thought_id: Json) -> Entry:
        return self.lookup.require(thought_id)  # a forgotten thought is a 404

    def _refuse_protected(self, entry: Entry) -> None:
        if entry.is_protected:
            raise Conflict(
                f"thought {self.lookup.id_of(entry)} is protected; retention leaves it alone (unprotect it "
                "with memory_store action=update is_protected=false first if you really mean it)"
            )
