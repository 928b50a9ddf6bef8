"""The second half of the graph tools, put together over the same lookup, tokens and pipeline as
``memory_recall`` / ``memory_store``: supersede and merge, projects, reflection, status, primers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from vaultmem.config import Settings
from vaultmem.graph.answer import Answer
from vaultmem.graph.lookup import Lookup
from vaultmem.graph.primers import Primers
from vaultmem.graph.projects import ProjectAdmin
from vaultmem.graph.recall import Recall
from vaultmem.graph.reflect import Reflect
from vaultmem.graph.service import GraphStore
from vaultmem.graph.status import Status
from vaultmem.graph.supersede import Supersede
from vaultmem.graph.thoughts import Thought


class Upkeep:
    """``memory_supersede``, ``memory_manage``, ``memory_reflect``, ``memory_status``, ``memory_primers``."""

    def __init__(self, settings: Settings, lookup: Lookup, store: GraphStore, recall: Recall) -> None:
        self.lookup = lookup
        tokens = store.tokens
        self.primers = Primers(
            settings.state_dir / "primers.json", tokens, lookup.service._now, settings.primer_threshold
        )
        self.supersede = Supersede(lookup, tokens)
        self.projects = ProjectAdmin(lookup, tokens)
        self.reflect = Reflect(lookup, store, recall)
        self.status = Status(lookup, self.primers, settings, settings.stale_after_days)

    def thought_alive(self, thought_id: str) -> bool:
        """A primer's thought still exists for the graph tools (not soft-deleted)."""
        entry = self.lookup.entry(thought_id)
        return entry is not None and entry.status != "deleted"

    def count_recall(self, answer: Answer) -> None:
        """Count what a memory_recall answer recalled: the top hit of a search or clusters (several for
        an ambiguous id), the thought of a get, the head of a context. Not the rest of a result page:
        being listed is not being recalled, and counting it would promote whatever matches loosely."""
        if answer.action not in ("search", "clusters", "get", "context"):
            return
        thoughts = list(_thoughts(answer))
        if answer.collection and answer.reason != "ambiguous_id":
            thoughts = thoughts[:1]
        self.primers.record(t.id for t in thoughts)


def _thoughts(answer: Answer) -> Iterable[Thought]:
    def head(value: Any) -> Thought | None:
        thought = getattr(value, "thought", None)  # WithColumns (get include_edges)
        if isinstance(value, Thought):
            return value
        if isinstance(thought, Thought):
            return thought
        inner = value.get("thought") if isinstance(value, dict) else None
        return inner if isinstance(inner, Thought) else None

    values = answer.items if answer.collection else [answer.item]
    for value in values:
        found = head(value)
        if found is not None:
            yield found
        for member in value.get("members", []) if isinstance(value, dict) else []:
            inner = head(member)
            if inner is not None:
                yield inner
