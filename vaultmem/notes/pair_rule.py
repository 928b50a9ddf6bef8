"""One edge per pair through a merge: the rule ``link`` keeps per write, kept when two machines'
edits of one note meet (:func:`vaultmem.notes.merge.merge_note`)."""

from __future__ import annotations

from typing import Any

from vaultmem.notes import frontmatter as fm
from vaultmem.notes.frontmatter import NoteText
from vaultmem.notes.links import LINK_CREATED_KEY, LINK_TARGETS_KEY, link_target, name_key, typed_links


def one_type_per_pair(
    merged: NoteText, sides: tuple[NoteText, NoteText], ours_newer: bool, lost_fields: dict[str, Any]
) -> NoteText:
    """A pair carries one edge: where the merge gave one target two types (``related`` on one
    machine, ``supports`` on the other), a ``related`` placeholder yields to the specific type, as
    ``link`` upgrades it; of two specific types the one linked last stays (by ``link_created``; the
    newer side's without times) and the other side's field goes to the conflict note. A note that
    had two types for one target on one side keeps them."""
    types: dict[str, list[str]] = {}
    for edge_type, target in typed_links(merged.meta):
        types.setdefault(name_key(target), []).append(edge_type)
    newer, older = sides if ours_newer else sides[::-1]
    made = _made(merged.meta)
    drop: dict[str, set[str]] = {}  # edge type -> target keys it loses
    for key, found in types.items():
        if len(set(found)) < 2 or any(_types_of(doc, key) == set(found) for doc in sides):
            continue
        specific = [e for e in found if e != "related"]
        keep = specific[0] if len(specific) == 1 else None
        if keep is None:  # the link made last; else the newer side's
            keep = max(specific, key=lambda e: (made.get((e, key), ""), e in _types_of(newer, key)))
            for e in specific:
                if e != keep:
                    lost_fields[e] = older.meta.get(e)
        for e in found:
            if e != keep:
                drop.setdefault(e, set()).add(key)
    if not drop:
        return merged
    changes: dict[str, Any] = {}
    for edge_type, keys in drop.items():
        kept = [v for v in _listed(merged.meta.get(edge_type)) if name_key(link_target(v) or "") not in keys]
        changes[edge_type] = kept or fm.DELETE
    for map_key in (LINK_CREATED_KEY, LINK_TARGETS_KEY):
        entries = merged.meta.get(map_key)
        if isinstance(entries, dict):
            left = {k: v for k, v in entries.items() if not _dropped(str(k), drop)}
            if len(left) != len(entries):
                changes[map_key] = left or fm.DELETE
    return fm.set_fields(merged, changes)


def _made(meta: dict[str, Any]) -> dict[tuple[str, str], str]:
    """``{(edge type, target key): link_created time}`` (ISO strings compare in time order)."""
    made = meta.get(LINK_CREATED_KEY)
    if not isinstance(made, dict):
        return {}
    out: dict[tuple[str, str], str] = {}
    for link, when in made.items():
        edge_type, _, target = str(link).partition("/")
        out[(edge_type, name_key(target))] = str(when)
    return out


def _types_of(doc: NoteText, key: str) -> set[str]:
    return {e for e, target in typed_links(doc.meta) if name_key(target) == key}


def _dropped(link: str, drop: dict[str, set[str]]) -> bool:
    edge_type, _, target = link.partition("/")
    return name_key(target) in drop.get(edge_type, set())


def _listed(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]
