"""Typed links as they live in the vault: one frontmatter list property per edge type.

    supports: ["[[caching-policy]]", "[[memory/semantic/ttl-defaults]]"]
    link_created: {"supports/caching-policy": "2026-03-14T09:30:00Z"}
    link_targets: {"supports/caching-policy": "<target id>"}

Obsidian's graph view draws these wikilinks. An edge's id is derived from (source id, type, target
id), so a rebuilt index gives every edge the same id. Targets resolve by file name (slug) or by
vault path; a link that resolves to nothing is dangling (``vaultmem doctor`` lists it).

A link vaultmem writes also records the id of the note it was made for, in the source's
``link_targets`` map (``"supports/caching-policy": "<target id>"``). That record, not the name,
decides while that note exists: a later note with the same file name elsewhere (a clash Obsidian
resolves to the closest match) or a rename done outside Obsidian never moves or orphans the edge.

Adding or removing a link edits only those three keys; every other byte of the note is kept.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from vaultmem.notes import frontmatter as fm
from vaultmem.notes.frontmatter import NoteText

EDGE_TYPES = (
    "related", "parent", "develops", "replaces", "cluster", "references", "depends_on",
    "contradicts", "supports",
)  # fmt: skip
#: Optional per-edge creation times: ``link_created: {"supports/caching-policy": "2026-…Z"}``.
LINK_CREATED_KEY = "link_created"
#: The id of the note each link was made for: ``link_targets: {"supports/caching-policy": "<id>"}``.
LINK_TARGETS_KEY = "link_targets"
_WIKILINK = re.compile(r"^\s*\[\[([^\]|#]+)(?:[#|][^\]]*)?\]\]\s*$")
_EDGE_NS = uuid.UUID("3b0c1f8e-7d7a-4f6e-9a4b-0e5f2c9d1a77")


def link_target(value: object) -> str | None:
    """The target name of one ``[[wikilink]]`` value (``None`` for anything else)."""
    if not isinstance(value, str):
        return None
    match = _WIKILINK.match(value)
    return match.group(1).strip().removesuffix(".md") if match else None


def typed_links(meta: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """Every (edge type, target name) a note's frontmatter declares, in order."""
    links: list[tuple[str, str]] = []
    for edge_type in EDGE_TYPES:
        values = meta.get(edge_type)
        if isinstance(values, str):
            values = [values]
        if not isinstance(values, list):
            continue
        for value in values:
            target = link_target(value)
            if target and (edge_type, target) not in links:
                links.append((edge_type, target))
    return tuple(links)


def link_key(edge_type: str, target: str) -> str:
    """The key of one link in the ``link_created`` and ``link_targets`` maps."""
    return f"{edge_type}/{target}"


def recorded_targets(meta: Mapping[str, Any]) -> dict[str, str]:
    """The ``link_targets`` map of a note: link key -> the id of the note the link was made for."""
    value = meta.get(LINK_TARGETS_KEY)
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v).lower() for k, v in value.items() if isinstance(v, str) and v.strip()}


def edge_id(source_id: str, edge_type: str, target_id: str) -> str:
    return str(uuid.uuid5(_EDGE_NS, f"{source_id}|{edge_type}|{target_id}"))


@dataclass(frozen=True)
class Edge:
    """A typed link from one note to another (derived from the source note's frontmatter)."""

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


def edges_of(
    source_id: str,
    meta: Mapping[str, Any],
    resolve: Callable[[str, str | None], str | None],
    default_created: str,
) -> tuple[list[Edge], list[str]]:
    """The edges a note declares, and the targets that resolved to no note.

    ``resolve(name, recorded_id)`` answers the id of the note a link names, given the id recorded
    for it in ``link_targets`` (None for a link a person wrote).
    """
    created = meta.get(LINK_CREATED_KEY)
    created_map = created if isinstance(created, dict) else {}
    recorded = recorded_targets(meta)
    edges: list[Edge] = []
    dangling: list[str] = []
    for edge_type, target in typed_links(meta):
        target_id = resolve(target, recorded.get(link_key(edge_type, target)))
        if target_id is None:
            dangling.append(target)
            continue
        if target_id == source_id:
            continue  # no self-loops
        stamp = created_map.get(link_key(edge_type, target))
        edges.append(Edge.make(source_id, edge_type, target_id, str(stamp) if stamp else default_created))
    return edges, dangling


# -- frontmatter edits ------------------------------------------------------------------------------
def _values(meta: dict[str, Any], key: str) -> list[Any]:
    value = meta.get(key)
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _map(meta: dict[str, Any], key: str) -> dict[str, Any]:
    value = meta.get(key)
    return dict(value) if isinstance(value, dict) else {}


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
    created = _map(text.meta, LINK_CREATED_KEY)
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
    stamp = _map(meta, LINK_CREATED_KEY).get(link_key(edge_type, target_name))
    return str(stamp) if stamp else None
