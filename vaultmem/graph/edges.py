"""Editing typed links in a note's frontmatter, and the rules every edge write obeys.

An edge ``source -type-> target`` is the wikilink ``"[[target-slug]]"`` in the list property
``type`` of the *source* note, plus an entry ``"type/target-slug": <created_at>`` in its
``link_created`` map and ``"type/target-slug": <target id>`` in its ``link_targets`` map (so the
link keeps resolving to that note whatever names change later). Only those keys change; every
other byte of the note is kept.

Rules (graph document, ``memory_store action=link``): the nine edge types only; no self-loops; only
a cluster thought may carry a ``cluster`` edge; a pair of thoughts carries one edge; re-linking a
symmetric pair (``related``, ``contradicts``) is an idempotent replay; a ``related`` placeholder is
upgraded in place to the specific type asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vaultmem.errors import Conflict, InvalidInput
from vaultmem.graph.links import (
    EDGE_TYPES,
    LINK_CREATED_KEY,
    LINK_TARGETS_KEY,
    edge_id,
    link_key,
    link_target,
)
from vaultmem.notes import frontmatter as fm
from vaultmem.notes.frontmatter import NoteText

SYMMETRIC_TYPES = frozenset({"related", "contradicts"})
PLACEHOLDER_TYPE = "related"
SELF_LOOP_MESSAGE = "Edge cannot link a thought to itself (source_id and target_id are the same)"


@dataclass(frozen=True)
class Edge:
    """An edge as the graph tools report it."""

    id: str
    source_id: str
    target_id: str
    type: str
    created_at: str

    def to_dict(self) -> dict[str, str]:
        return {
            "id": self.id,
            "source_id": self.source_id,
            "target_id": self.target_id,
            "type": self.type,
            "created_at": self.created_at,
        }

    @staticmethod
    def make(source_id: str, edge_type: str, target_id: str, created_at: str) -> Edge:
        return Edge(edge_id(source_id, edge_type, target_id), source_id, target_id, edge_type, created_at)


def check_edge_type(edge_type: object, argument: str = "edge_type") -> str:
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


# -- frontmatter edits ------------------------------------------------------------------------------
def _values(meta: dict[str, Any], key: str) -> list[Any]:
    value = meta.get(key)
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _map(meta: dict[str, Any], key: str) -> dict[str, Any]:
    value = meta.get(key)
    return dict(value) if isinstance(value, dict) else {}


def created_map(meta: dict[str, Any]) -> dict[str, Any]:
    return _map(meta, LINK_CREATED_KEY)


@dataclass(frozen=True)
class LinkTarget:
    """The note a new link points at: the name the wikilink spells, and the note's id."""

    name: str
    id: str


def add_link(text: NoteText, edge_type: str, target: LinkTarget, created_at: str) -> NoteText:
    """``text`` with ``"[[target.name]]"`` appended to its ``edge_type`` list, its time and its
    target's id recorded."""
    return add_links(text, edge_type, [target], created_at)


def add_links(text: NoteText, edge_type: str, targets: list[LinkTarget], created_at: str) -> NoteText:
    """:func:`add_link` for many targets in one frontmatter edit (a cluster's thousand members)."""
    values = _values(text.meta, edge_type)
    present = {link_target(v) for v in values}
    created = created_map(text.meta)
    recorded = _map(text.meta, LINK_TARGETS_KEY)
    for target in targets:
        if target.name not in present:
            values.append(f"[[{target.name}]]")
            present.add(target.name)
        created[link_key(edge_type, target.name)] = created_at
        recorded[link_key(edge_type, target.name)] = target.id
    return fm.set_fields(text, {edge_type: values, LINK_CREATED_KEY: created, LINK_TARGETS_KEY: recorded})


def remove_link(
    text: NoteText, edge_type: str, points_at: Callable[[str], bool]
) -> tuple[NoteText, list[str]]:
    """``text`` without the ``edge_type`` links whose target ``points_at`` accepts.

    Returns the new text and the target names removed. An emptied property is removed; so is an
    emptied ``link_created`` map.
    """
    values = _values(text.meta, edge_type)
    kept: list[Any] = []
    removed: list[str] = []
    for value in values:
        target = link_target(value)
        if target is not None and points_at(target):
            removed.append(target)
        else:
            kept.append(value)
    if not removed:
        return text, []
    changes: dict[str, Any] = {edge_type: kept if kept else fm.DELETE}
    for key in (LINK_CREATED_KEY, LINK_TARGETS_KEY):
        if key in text.meta:
            entries = _map(text.meta, key)
            for target in removed:
                entries.pop(link_key(edge_type, target), None)
            changes[key] = entries if entries else fm.DELETE
    return fm.set_fields(text, changes), removed


def created_at_of(meta: dict[str, Any], edge_type: str, target_name: str) -> str | None:
    stamp = created_map(meta).get(link_key(edge_type, target_name))
    return str(stamp) if stamp else None
