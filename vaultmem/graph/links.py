"""Typed links as they live in the vault: one frontmatter list property per edge type.

    supports: ["[[caching-policy]]", "[[memory/semantic/ttl-defaults]]"]

Obsidian's graph view draws these wikilinks. An edge's id is derived from (source id, type, target
id), so a rebuilt index gives every edge the same id. Targets resolve by file name (slug) or by
vault path; a link that resolves to nothing is dangling (``vaultmem doctor`` lists it).

A link vaultmem writes also records the id of the note it was made for, in the source's
``link_targets`` map (``"supports/caching-policy": "<target id>"``). That record, not the name,
decides while that note exists: a later note with the same file name elsewhere (a clash Obsidian
resolves to the closest match) or a rename done outside Obsidian never moves or orphans the edge.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from vaultmem.index.records import EdgeRecord

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


def edges_of(
    source_id: str,
    meta: Mapping[str, Any],
    resolve: Callable[[str, str | None], str | None],
    default_created: str,
) -> tuple[list[EdgeRecord], list[str]]:
    """The edges a note declares, and the targets that resolved to no note.

    ``resolve(name, recorded_id)`` answers the id of the note a link names, given the id recorded
    for it in ``link_targets`` (None for a link a person wrote).
    """
    created = meta.get(LINK_CREATED_KEY)
    created_map = created if isinstance(created, dict) else {}
    recorded = recorded_targets(meta)
    edges: list[EdgeRecord] = []
    dangling: list[str] = []
    for edge_type, target in typed_links(meta):
        target_id = resolve(target, recorded.get(link_key(edge_type, target)))
        if target_id is None:
            dangling.append(target)
            continue
        if target_id == source_id:
            continue  # no self-loops
        stamp = created_map.get(link_key(edge_type, target))
        edges.append(
            EdgeRecord(
                source_id=source_id,
                type=edge_type,
                target_id=target_id,
                edge_id=edge_id(source_id, edge_type, target_id),
                created_at=str(stamp) if stamp else default_created,
            )
        )
    return edges, dangling
