"""A project's ``project.yaml`` merged key by key when two machines changed it (sync).

The usual case is a project both machines created before they met: one name, so one folder and one
``project.yaml``, but each machine's own ``id`` and its own checkout in ``code_paths``
(``~/code/shop`` on the laptop, ``/Users/ann/src/shop`` on the desktop). Merged as lines, one side
was kept whole and the other became a conflict copy nobody reads: the other machine's folder no
longer matched the project, and its agents' writes landed without one. Here:

- ``code_paths``: both machines' folders (this side's first, then the other's new ones);
- ``id``: the older of the two (ids are UUIDv7, time-ordered: the project created first), the
  other kept in ``merged_ids``, which every tool that takes a project id still accepts;
- any other key one side changed: that side's value; both changed it differently: the newer side's
  file wins that key and the other side is kept whole as the conflict copy, as for any text file.

The file keeps what people wrote in it: the merge of its lines when that says the same as the keys'
merge (changes to different lines: both sides' comments), else this side's file with the merged keys
set in place (``frontmatter.set_fields``). A side that is not a YAML mapping is merged as text
(``merge_text``).
"""

from __future__ import annotations

from typing import Any

import yaml

from vaultmem.errors import MalformedNote
from vaultmem.notes import frontmatter as fm
from vaultmem.notes.merge import LostSide, NoteMerge, Side, merge_text
from vaultmem.safe_yaml import load_yaml_mapping

PROJECT_FILE = "project.yaml"
MERGED_IDS = "merged_ids"
_MISSING = object()


def is_project_file(path: str) -> bool:
    return path.rsplit("/", 1)[-1] == PROJECT_FILE


def merge_project(base: bytes, ours: bytes, theirs: bytes) -> NoteMerge:
    if ours == theirs or theirs == base:
        return NoteMerge(ours, "text")
    if ours == base:
        return NoteMerge(theirs, "text")
    try:
        sides = [_mapping(data) for data in (base, ours, theirs)]
    except (MalformedNote, UnicodeDecodeError):
        return merge_text(base, ours, theirs)
    was, mine, other = sides
    newer: Side = "ours" if ours > theirs else "theirs"  # merge_text's rule for a key both changed
    merged: dict[str, Any] = {}
    by_rule: list[str] = []
    former = _union(_strings(mine.get(MERGED_IDS)), _strings(other.get(MERGED_IDS)))
    lost = False
    for key in [*mine, *(k for k in other if k not in mine)]:
        if key == MERGED_IDS:
            continue  # both sides' ids, below
        b, o, t = was.get(key, _MISSING), mine.get(key, _MISSING), other.get(key, _MISSING)
        if o == t or t == b:
            value = o
        elif o == b:
            value = t
        elif key == "code_paths" and _strings(o) is not None and _strings(t) is not None:
            value = _union(_strings(o), _strings(t))
            by_rule.append(key)
        elif key == "id" and isinstance(o, str) and isinstance(t, str):
            value = min(o, t)
            former = _union(former, [max(o, t)])
            by_rule.append(key)
        else:
            value, lost = (o if newer == "ours" else t), True
        if value is not _MISSING:
            merged[key] = value
    if former:
        merged[MERGED_IDS] = former
    text = _written((base, ours, theirs), mine, other, merged)
    if not lost:
        return NoteMerge(text.encode("utf-8"), "text", by_rule=tuple(by_rule))
    loser: Side = "theirs" if newer == "ours" else "ours"
    other_bytes = theirs if loser == "theirs" else ours
    return NoteMerge(
        text.encode("utf-8"), "text", by_rule=tuple(by_rule), kept=newer,
        lost=LostSide(loser, other_bytes, body=True),
    )  # fmt: skip


def _written(
    sides: tuple[bytes, bytes, bytes], mine: dict[str, Any], other: dict[str, Any], merged: dict[str, Any]
) -> str:
    """The text of ``merged``, keeping the comments and layout the sides' files have: the merge of
    the lines when it means ``merged``; else this side's file, a key the other side changed taken
    as its lines there, a key merged by rule written in place."""
    lines = merge_text(*sides)
    try:
        if lines.clean and _mapping(lines.merged) == merged:
            return lines.merged.decode("utf-8")
        theirs = {e.key: e for e in _block(sides[2]).entries if e.key is not None}
        taken = {k for k, v in merged.items() if mine.get(k, _MISSING) != v and other.get(k, _MISSING) == v}
        changes = {k: v for k, v in merged.items() if mine.get(k, _MISSING) != v and k not in taken}
        changes.update({k: fm.DELETE for k in mine if k not in merged})
        edited = fm.set_fields(_block(sides[1]), changes)
        entries = [theirs[e.key] if e.key in taken else e for e in edited.entries]
        entries += [theirs[k] for k in taken if k not in mine]
        text = "".join(line for e in entries for line in e.lines)
        if _mapping(text.encode("utf-8")) == merged:
            return text
    except (MalformedNote, UnicodeDecodeError, KeyError):
        pass  # a flow mapping or the like: written anew
    return yaml.safe_dump(merged, allow_unicode=True, sort_keys=False, default_flow_style=False)


def _block(data: bytes) -> fm.NoteText:
    """A project.yaml read as a frontmatter block, its entries as written."""
    text = data.decode("utf-8")
    return fm.parse(f"---\n{text}{'' if text.endswith(chr(10)) else chr(10)}---\n", source=PROJECT_FILE)


def _mapping(data: bytes) -> dict[str, Any]:
    text = data.decode("utf-8")
    return dict(load_yaml_mapping(text, source=PROJECT_FILE)) if text.strip() else {}


def _strings(value: object) -> list[str] | None:
    """A list of strings (or one string) as a list; None for anything else."""
    if isinstance(value, str):
        return [value]
    if value is None or value is _MISSING:
        return []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _union(first: list[str] | None, second: list[str] | None) -> list[str]:
    out = list(first or [])
    out += [v for v in second or [] if v not in out]
    return out
