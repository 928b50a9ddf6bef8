"""What a graph action answers, before the MCP layer wraps it in the response envelope."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vaultmem.graph.thoughts import Thought

#: ``Answer.item`` when the action legitimately found nothing (``item: null``).
NO_ITEM = None


@dataclass(frozen=True)
class WithColumns:
    """A thought whose shaped form gets extra keys that are not thought columns (``upstream``...)."""

    thought: Thought
    extra: dict[str, Any]


@dataclass
class Answer:
    """The payload of one graph action.

    Exactly one of ``item`` / ``items`` is meaningful, per ``collection``. ``counts`` holds the
    action's own counters plus ``total`` / ``returned`` / ``filtered_out``; the envelope adds
    ``action``, ``scope`` and the scope warnings.
    """

    action: str
    collection: bool
    item: Any = None
    items: list[Any] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    degraded: bool = False
    warnings: list[str] = field(default_factory=list)
    reason: str | None = None
    preview: dict[str, Any] | None = None
    #: Collections that ride beside ``items`` (``memory_crystallize action=graph``: ``edges``).
    beside: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def one(action: str, item: Any, **counts: int) -> Answer:
        found = 0 if item is None else 1
        return Answer(
            action, False, item=item, counts={**counts, "total": found, "returned": found, "filtered_out": 0}
        )

    @staticmethod
    def many(
        action: str, items: list[Any], *, total: int | None = None, filtered_out: int = 0, **counts: int
    ) -> Answer:
        return Answer(
            action,
            True,
            items=items,
            counts={
                **counts,
                "total": len(items) if total is None else total,
                "returned": len(items),
                "filtered_out": filtered_out,
            },
        )
