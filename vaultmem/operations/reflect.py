"""``memory_reflect``: close a session by writing what it learned, and read the timeline.

``reflect`` is a write, and one git commit: the ``summary`` is appended with its UTC time to the
``project_context`` slot file, ``goals_add`` / ``goals_remove`` edit the ``active_goals`` slot file,
``decisions`` become active thoughts tagged ``decision`` + ``reflect`` (skipped when one is too
similar to a live decision of the same project: Jaccard >= 0.6 of meaningful words, or an exact live
duplicate), and ``pending`` items become draft thoughts tagged ``pending`` + ``reflect`` with
``surface_after = now + wake_days``. With a registered ``cwd`` everything lands in that project;
without one the slots are the global ones and the thoughts get no project (the default project).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from vaultmem.errors import InvalidInput
from vaultmem.filing import rules
from vaultmem.filing.contract import Contract
from vaultmem.filing.projects import Project
from vaultmem.notes import frontmatter as fm
from vaultmem.notes.model import LIVE_STATUSES, fingerprint, iso
from vaultmem.operations.context import Context
from vaultmem.operations.recall import Recall
from vaultmem.operations.results import Answer, Json, Row
from vaultmem.operations.slots import (
    ACTIVE_GOALS,
    PROJECT_CONTEXT,
    add_goals,
    append_summary,
    new_slot_text,
    remove_goals,
    slot_file,
)
from vaultmem.operations.supersede import ARCHIVED_STATUSES
from vaultmem.operations.thoughts import CheckedThought, NewThought, check_thought, plan_thought
from vaultmem.vault.entry import Entry
from vaultmem.vault.plan import Draft, Plan
from vaultmem.vault.sidefiles import read_side, side_text

TOOL = "memory_reflect"
REFLECT_TAG = "reflect"
DECISION_TAG = "decision"
PENDING_TAG = "pending"
#: Jaccard overlap (meaningful words) at or above which a decision repeats an existing one.
DECISION_OVERLAP = 0.6
DEFAULT_WAKE_DAYS = 7
MAX_WAKE_DAYS = 365
MAX_ITEMS = 50
MAX_GOAL_CHARS = 500


@dataclass(frozen=True)
class ReflectSpec:
    """What a session reflection writes."""

    summary: Json = None
    goals_add: Json = None
    goals_remove: Json = None
    decisions: Json = None
    pending: Json = None
    wake_days: Json = None


def _texts(name: str, value: Json, limit: int) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_ITEMS:
        raise InvalidInput(f"{name} must be a list of at most {MAX_ITEMS} texts")
    out: list[str] = []
    for item in value:
        if not isinstance(item, str) or not item.strip() or len(item) > limit:
            raise InvalidInput(f"each {name} entry must be non-empty text of at most {limit} characters")
        out.append(item.strip())
    return out


def same_project(entry: Entry, project: str | None) -> bool:
    if project is None:
        return entry.project is None
    return entry.project is not None and entry.project.casefold() == project.casefold()


class Reflect:
    """The actions of ``memory_reflect``."""

    def __init__(self, ctx: Context, recall: Recall) -> None:
        self.ctx = ctx
        self.lookup = ctx.lookup
        self.recall = recall

    def reflect(self, spec: ReflectSpec, project: Project | None) -> Answer:
        contract = self.ctx.contract()
        summary = rules.check_content(spec.summary, contract) if spec.summary is not None else None
        goals_add = [" ".join(g.split()) for g in _texts("goals_add", spec.goals_add, MAX_GOAL_CHARS)]
        goals_remove = _texts("goals_remove", spec.goals_remove, MAX_GOAL_CHARS)
        decisions = [rules.check_content(d, contract) for d in _texts("decisions", spec.decisions, 10**6)]
        pending = [rules.check_content(p, contract) for p in _texts("pending", spec.pending, 10**6)]
        wake = DEFAULT_WAKE_DAYS if spec.wake_days is None else spec.wake_days
        if isinstance(wake, bool) or not isinstance(wake, int) or not 1 <= wake <= MAX_WAKE_DAYS:
            raise InvalidInput(f"wake_days must be a whole number from 1 to {MAX_WAKE_DAYS} (default 7)")
        if summary is None and not (goals_add or goals_remove or decisions or pending):
            raise InvalidInput(
                "reflect has nothing to record: pass at least one of summary (text for the "
                "project_context slot), goals_add, goals_remove, decisions or pending (lists of texts)"
            )
        name = project.name if project is not None else None
        decision_rows = [self._row(d, DECISION_TAG, "active", "decision", contract) for d in decisions]
        pending_rows = [self._row(p, PENDING_TAG, "draft", "capture", contract) for p in pending]

        def decide() -> Plan[Row]:
            now = self.ctx.now()
            stamp = iso(now)
            draft = self.ctx.draft()
            appended = False
            counts = {
                "goals_added": 0,
                "goals_removed": 0,
                "decisions_created": 0,
                "pending_created": 0,
            }
            if summary is not None:
                self._edit_slot(
                    draft, contract, project, PROJECT_CONTEXT, lambda t: append_summary(t, stamp, summary)
                )
                appended = True
            if goals_add or goals_remove:
                changed = {"added": 0, "removed": 0}

                def edit_goals(text: str) -> str:
                    text, changed["removed"] = remove_goals(text, goals_remove)
                    text, changed["added"] = add_goals(text, goals_add)
                    return text

                self._edit_slot(draft, contract, project, ACTIVE_GOALS, edit_goals)
                counts["goals_added"], counts["goals_removed"] = changed["added"], changed["removed"]
            written = self.ctx.catalog.written_since(now.date())
            decided: list[str] = []
            for row in decision_rows:
                if self._duplicate(row.content, name) or self._similar_decision(row.content, name, decided):
                    continue
                rules.check_cap(written, contract, now.date(), TOOL)
                plan_thought(self.ctx, draft, row, name, now)
                decided.append(row.content)
                written += 1
                counts["decisions_created"] += 1
            surface = iso(now + dt.timedelta(days=wake))
            planned: set[str] = set()
            for row in pending_rows:
                fp = fingerprint(row.content)
                if self._duplicate(row.content, name) or fp in planned:
                    continue  # an existing live thought with this content is left as it is
                rules.check_cap(written, contract, now.date(), TOOL)
                rel = plan_thought(self.ctx, draft, row, name, now)
                draft.put(rel, fm.set_fields(draft.text_of(rel), {"surface_after": surface}), "create")
                planned.add(fp)
                written += 1
                counts["pending_created"] += 1
            return draft.plan({"summary_appended": appended, **counts})

        counts = self.ctx.writer.run(decide, tool=TOOL, summary="reflect").result
        assert counts is not None
        return Answer.one("reflect", counts)

    def _row(self, content: str, tag: str, status: str, kind: str, contract: Contract) -> CheckedThought:
        spec = NewThought(content, tags=[tag, REFLECT_TAG], status=status, kind=kind)
        return check_thought(self.ctx, spec, contract)

    def _edit_slot(
        self,
        draft: Draft,
        contract: Contract,
        project: Project | None,
        name: str,
        edit: Any,
    ) -> None:
        slot = slot_file(name, contract, project)
        pending = draft.edited(slot.rel)
        current = pending.render() if pending is not None else read_side(self.ctx.layout, slot.rel)
        text = edit(current if current is not None else new_slot_text(slot))
        if text != current:
            draft.put(slot.rel, side_text(text), f"reflect {name}", create=current is None, note=False)

    def _duplicate(self, content: str, project: str | None) -> bool:
        """An exact live duplicate (any tag) in the same project."""
        return any(
            e.status in LIVE_STATUSES and same_project(e, project)
            for e in self.ctx.catalog.with_fingerprint(fingerprint(content))
        )

    def _similar_decision(self, content: str, project: str | None, planned: list[str]) -> bool:
        """Too close (Jaccard >= 0.6) to a non-archived decision of the project, or to one planned now."""
        if any(rules.word_overlap(content, other) >= DECISION_OVERLAP for other in planned):
            return True
        existing = [
            e for e in self.ctx.catalog.entries()
            if DECISION_TAG in e.tags and same_project(e, project)
            and e.status not in ARCHIVED_STATUSES and e.status != "deleted"
        ]  # fmt: skip
        thoughts = self.lookup.thoughts(existing)
        return any(rules.word_overlap(content, t.content) >= DECISION_OVERLAP for t in thoughts.values())

    def timeline(self, statuses: frozenset[str], project: str | None, limit: int, offset: int) -> Answer:
        """The plain paginated thought list (newest first), as ``memory_recall action=list`` pages it."""
        answer = self.recall.list(statuses, project, None, None, limit, offset)
        answer.action = "timeline"
        return answer
