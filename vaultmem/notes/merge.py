"""Three-way merge of one note file: two machines' edits of a memory, merged field by field.

``merge_note(base, ours, theirs)`` is a pure function of three byte strings that never writes
conflict markers: frontmatter entry by entry (a key only one side changed takes that side's bytes),
owned keys both sides changed by their rule, unknown keys and the body by diff3, and where both
changed the same thing the newer side kept and the other reported as ``lost`` for a conflict note
(:func:`conflict_file`). The rules, add/add (``mode == "distinct"``) and unreadable files (``mode ==
"text"``): docs/architecture.md, "The note merge", and docs/sync.md. No choice depends on which side
is "ours", so two machines merging each other's work converge to identical trees.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from vaultmem.errors import MalformedNote
from vaultmem.notes import frontmatter as fm
from vaultmem.notes.diff3 import diff3
from vaultmem.notes.frontmatter import Entry, NoteText
from vaultmem.notes.ids import derived_uuid7
from vaultmem.notes.links import EDGE_TYPES, LINK_CREATED_KEY, LINK_TARGETS_KEY
from vaultmem.notes.model import OWNED_KEYS, iso, new_note_text, parse_time
from vaultmem.notes.pair_rule import one_type_per_pair
from vaultmem.safe_yaml import load_yaml_mapping

Side = Literal["ours", "theirs"]
Mode = Literal["note", "text", "distinct"]

#: Statuses by strength: when both sides changed the status, the stronger end of life wins.
STATUS_RANK = {"unfiled": 0, "active": 1, "expired": 2, "archived": 3, "superseded": 4, "deleted": 5}
_STATUS_FOLLOWERS = ("deleted_at", "delete_reason")
#: What marks a conflict note: its tag, the link to its original, and a record of what happened.
CONFLICT_TAG = "sync-conflict"
CONFLICT_OF_KEY = "conflict_of"
CONFLICT_KEY = "conflict"

_MISSING: Any = object()
_COMMENT = "\0#"
_OWNED = frozenset(OWNED_KEYS)


@dataclass(frozen=True)
class StatusChange:
    """The status the merged note carries, which side set it, and what it replaced."""

    status: str
    set_by: Side | Literal["both"]
    replaced: str


@dataclass(frozen=True)
class LostSide:
    """A side whose content the merged note does not carry in full: to be kept as a conflict note."""

    side: Side
    #: That side's whole file, as it was.
    data: bytes
    #: Lines of its body are missing from the merged note (or, in text mode, lines of the file).
    body: bool
    #: Its values of fields the merged note carries differently.
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class NoteMerge:
    """The merged note's bytes and what happened on the way."""

    merged: bytes
    mode: Mode = "note"
    #: Owned keys both sides changed, merged by their rule.
    by_rule: tuple[str, ...] = ()
    status: StatusChange | None = None
    #: The side that kept its content where both changed the same thing (the newer one).
    kept: Side | None = None
    lost: LostSide | None = None

    @property
    def clean(self) -> bool:
        """True when the merged note holds everything both sides wrote."""
        return self.lost is None

    def describe(self) -> list[str]:
        """One line per thing worth a line in the merge commit's message."""
        lines: list[str] = []
        if self.by_rule:
            lines.append(f"fields merged by rule: {', '.join(self.by_rule)}")
        if self.status is not None:
            by = "on both sides" if self.status.set_by == "both" else f"on the {self.status.set_by} side"
            lines.append(f"status {self.status.status} (set {by}) kept over {self.status.replaced}")
        if self.mode == "distinct":
            lines.append("two different notes were created at this path: the older keeps it")
        elif self.lost is not None:
            what = [*(["body lines"] if self.lost.body else []), *sorted(self.lost.fields)]
            lines.append(
                f"both sides changed the same {' and '.join(what)}: kept the {self.kept} side (the newer "
                f"`updated`, on a tie the larger bytes); the {self.lost.side} side is kept as a conflict note"
            )
        if self.mode == "text":
            lines.append("not a readable note: merged line by line")
        return lines


def merge_note(base: bytes, ours: bytes, theirs: bytes) -> NoteMerge:
    """Merge two sides of one note file against their common ancestor (empty for an add/add)."""
    if ours == theirs or theirs == base:
        return NoteMerge(ours)
    if ours == base:
        return NoteMerge(theirs)
    try:
        docs = [fm.parse(data.decode("utf-8")) for data in (base, ours, theirs)]
    except (UnicodeDecodeError, MalformedNote):
        return merge_text(base, ours, theirs)
    b, o, t = docs
    if not base and _distinct(o, t):
        return _merge_distinct(o, t, ours, theirs)
    try:
        return _merge_docs(b, o, t, ours, theirs)
    except Exception:  # entries that do not combine into valid YAML, a value YAML cannot write back:
        return merge_text(base, ours, theirs)  # plain lines then, never a merge that cannot finish


# -- which side wins a tie -------------------------------------------------------------------------
def _time(value: Any) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
    return parse_time(value) if isinstance(value, str) else None


def _newer(o: NoteText, t: NoteText, ours: bytes, theirs: bytes) -> Side:
    """The side with the newer ``updated``; on a tie or without one, the larger bytes."""
    o_time, t_time = _time(o.meta.get("updated")), _time(t.meta.get("updated"))
    if o_time is not None and t_time is not None and o_time != t_time:
        return "ours" if o_time > t_time else "theirs"
    if (o_time is None) != (t_time is None):
        return "ours" if o_time is not None else "theirs"
    return "ours" if ours > theirs else "theirs"


def _other(side: Side) -> Side:
    return "theirs" if side == "ours" else "ours"


def _equal(a: Any, b: Any) -> bool:
    return bool(a == b) or repr(a) == repr(b)


# -- two notes at one path ---------------------------------------------------------------------------
def _id_of(doc: NoteText) -> str | None:
    value = doc.meta.get("id")
    return str(value).lower() if isinstance(value, str) and value else None


def _distinct(o: NoteText, t: NoteText) -> bool:
    o_id, t_id = _id_of(o), _id_of(t)
    return o_id is None or t_id is None or o_id != t_id


def _merge_distinct(o: NoteText, t: NoteText, ours: bytes, theirs: bytes) -> NoteMerge:
    def order(doc: NoteText, data: bytes) -> tuple[str, str, bytes]:
        created = _time(doc.meta.get("created"))
        return (_id_of(doc) or "~", created.isoformat() if created else "~", data)

    keep: Side = "ours" if order(o, ours) < order(t, theirs) else "theirs"
    kept, other = (ours, theirs) if keep == "ours" else (theirs, ours)
    return NoteMerge(kept, "distinct", kept=keep, lost=LostSide(_other(keep), other, body=True))


# -- text mode -----------------------------------------------------------------------------------------
def _byte_lines(data: bytes) -> list[bytes]:
    return [line for line in re.split(rb"(?<=\n)", data) if line]


def merge_text(base: bytes, ours: bytes, theirs: bytes) -> NoteMerge:
    """Merge files that are not readable notes as lines of bytes, by the same conflict rules."""
    if ours == theirs or theirs == base:
        return NoteMerge(ours, "text")
    if ours == base:
        return NoteMerge(theirs, "text")
    newer: Side = "ours" if ours > theirs else "theirs"
    loser = _other(newer)
    if not base:  # two files created at one path: lines of both would mix two documents into one
        kept, other = (ours, theirs) if newer == "ours" else (theirs, ours)
        return NoteMerge(kept, "text", kept=newer, lost=LostSide(loser, other, body=True))
    out, lost = _merge_lines(_byte_lines(base), _byte_lines(ours), _byte_lines(theirs), newer, b"\n")
    lost_side = LostSide(loser, theirs if loser == "theirs" else ours, body=True) if lost else None
    return NoteMerge(b"".join(out), "text", kept=newer if lost else None, lost=lost_side)


def _merge_lines(
    base: Sequence[Any], ours: Sequence[Any], theirs: Sequence[Any], newer: Side, nl: Any
) -> tuple[list[Any], bool]:
    """diff3 of lines; two insertions at one place keep both (older first); a conflict keeps the
    newer side's lines (with ``nl=None``, for sequences of keys, both sides', older first).
    Returns the lines and whether anything of the older side was dropped."""
    out: list[Any] = []
    lost = False
    for region in diff3(base, ours, theirs):
        if region.merged is not None:
            chunks = [region.merged]
        else:
            newer_chunk, older_chunk = (
                (region.ours, region.theirs) if newer == "ours" else (region.theirs, region.ours)
            )
            if region.base and nl is not None:
                chunks, lost = [newer_chunk], True
            else:
                chunks = [older_chunk, newer_chunk]
        for chunk in chunks:
            ends = ("\n", "\r") if isinstance(nl, str) else (b"\n", b"\r")
            if nl is not None and chunk and out and not out[-1].endswith(ends):
                out[-1] = out[-1] + nl  # a chunk that ended the file without a line end: keep lines apart
            out.extend(chunk)
    return out, lost


# -- the frontmatter, entry by entry ----------------------------------------------------------------
def _keyed(doc: NoteText) -> tuple[list[str], dict[str, tuple[str, ...]]]:
    """A note's entries under stable names: the key, ``key\\0n`` for a repeat, ``\\0#n`` for lines
    before the first key."""
    seen: Counter[str] = Counter()
    order: list[str] = []
    lines: dict[str, tuple[str, ...]] = {}
    for entry in doc.entries:
        name = entry.key if entry.key is not None else _COMMENT
        n = seen[name]
        seen[name] += 1
        ident = name if n == 0 and name != _COMMENT else f"{name}\0{n}"
        order.append(ident)
        lines[ident] = tuple(entry.lines)
    return order, lines


def _value(doc: NoteText, present: dict[str, tuple[str, ...]], ident: str) -> Any:
    return doc.meta.get(ident, _MISSING) if ident in present and "\0" not in ident else _MISSING


def _as_list(value: Any) -> list[Any]:
    if value is _MISSING or value is None:
        return []
    if isinstance(value, list):
        return list(value)
    if isinstance(value, str) and value.strip():
        return [value]
    return [value] if not isinstance(value, str) else []


def _tag_list(value: Any) -> list[Any]:
    if isinstance(value, str):  # ``tags: a, b`` as a person may type it
        return [t for t in value.replace(",", " ").split() if t]
    return _as_list(value)


def _identity(item: Any) -> Hashable:
    if isinstance(item, dict | list):
        return json.dumps(item, sort_keys=True, default=str)
    return (type(item).__name__, repr(item))


def _merge_items(base: list[Any], ours: list[Any], theirs: list[Any], newer: Side) -> list[Any]:
    """A three-way set merge that keeps an order: additions from either side kept, an item either side
    removed stays removed, items placed by a diff3 of the sequences (two additions at one place:
    the older side's first)."""
    ids = [[_identity(x) for x in side] for side in (base, ours, theirs)]
    in_b, in_o, in_t = (set(side) for side in ids)
    values: dict[Hashable, Any] = {}
    for side in (base, *((ours, theirs) if newer == "theirs" else (theirs, ours))):
        values.update((_identity(x), x) for x in side)
    placed, _ = _merge_lines(ids[0], ids[1], ids[2], newer, None)
    seq = [*placed, *ids[1], *ids[2]]  # a safety net: anything kept but not placed goes last
    out: list[Any] = []
    done: set[Hashable] = set()
    for key in seq:
        keep = (key in in_o and key in in_t) or (key not in in_b and (key in in_o or key in in_t))
        if keep and key not in done:
            done.add(key)
            out.append(values[key])
    return out


def _merge_map(base: Any, ours: Any, theirs: Any, newer: Side) -> dict[str, Any]:
    maps = [v if isinstance(v, dict) else {} for v in (base, ours, theirs)]
    order = _merge_items(list(maps[0]), list(maps[1]), list(maps[2]), newer)
    out: dict[str, Any] = {}
    for key in [*order, *(k for m in maps[1:] for k in m)]:
        b, o, t = (m.get(key, _MISSING) for m in maps)
        if _equal(o, t) or _equal(t, b):
            value = o
        elif _equal(o, b):
            value = t
        else:  # both changed the time of one link: the later one
            value = o if t is _MISSING or (o is not _MISSING and str(o) > str(t)) else t
        if value is not _MISSING and key not in out:
            out[key] = value
    return out


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _rule(key: str) -> Callable[[Any, Any, Any, Side], Any] | None:
    """The merge rule of an owned key both sides changed; ``None`` for keys without one."""
    if key == "updated":  # the newer side is the one whose ``updated`` is newer
        return lambda b, o, t, newer: o if newer == "ours" else t
    if key == "occurrences":

        def occurrences(b: Any, o: Any, t: Any, newer: Side) -> int:
            start = _int(b, 1)
            return max(1, _int(o, start) + _int(t, start) - start)

        return occurrences
    if key == "tags":
        return lambda b, o, t, newer: (
            _merge_items(_tag_list(b), _tag_list(o), _tag_list(t), newer) or _MISSING
        )
    if key in EDGE_TYPES or key == "url_links":
        return lambda b, o, t, newer: _merge_items(_as_list(b), _as_list(o), _as_list(t), newer) or _MISSING
    if key in (LINK_CREATED_KEY, LINK_TARGETS_KEY):
        return lambda b, o, t, newer: _merge_map(b, o, t, newer) or _MISSING
    return None


_FAILED: Any = object()


def _merge_entry(
    ident: str, b: tuple[str, ...] | None, o: tuple[str, ...] | None, t: tuple[str, ...] | None
) -> Any:
    """diff3 of one unknown entry's lines: the merged lines (``None``: removed), or ``_FAILED`` when
    the sides conflict or the merged lines are not one valid ``key: value`` entry."""
    regions = diff3(b or (), o or (), t or ())
    if any(r.merged is None for r in regions):
        return _FAILED
    lines = tuple(line for r in regions for line in (r.merged or ()))
    if not lines:
        return None
    if ident.startswith("\0"):
        return lines
    text = "".join(lines).replace("\r\n", "\n").replace("\r", "\n")
    try:
        parsed = load_yaml_mapping(text, source="merge")
    except MalformedNote:
        return _FAILED
    return lines if list(parsed) == [ident] else _FAILED


def _status_of(value: Any) -> str:
    return value if isinstance(value, str) else "active"


def _pick(base: Any, ours: Any, theirs: Any, newer: Side) -> Any:
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    return ours if newer == "ours" else theirs


@dataclass
class _Sides:
    """The three sides' entries, by stable name."""

    docs: tuple[NoteText, NoteText, NoteText]
    orders: tuple[list[str], list[str], list[str]]
    lines: tuple[dict[str, tuple[str, ...]], ...]

    def of(self, ident: str) -> tuple[tuple[str, ...] | None, ...]:
        return tuple(lines.get(ident) for lines in self.lines)

    def values(self, ident: str) -> tuple[Any, ...]:
        return tuple(_value(doc, lines, ident) for doc, lines in zip(self.docs, self.lines, strict=True))


def _merge_status(sides: _Sides, newer: Side) -> tuple[Side, StatusChange | None]:
    """The side whose status (and ``deleted_at``, ``delete_reason``) the merged note takes, and the
    status change to report when the two sides' statuses differ."""
    bl, ol, tl = sides.of("status")
    _, vo, vt = (_status_of(v) for v in sides.values("status"))
    both = False
    if ol == tl:
        side: Side = newer
    elif tl == bl:
        side = "ours"
    elif ol == bl:
        side = "theirs"
    else:
        both = True
        rank_o, rank_t = STATUS_RANK.get(vo, -1), STATUS_RANK.get(vt, -1)
        side = newer if rank_o == rank_t else ("ours" if rank_o > rank_t else "theirs")
    if vo == vt:
        return side, None
    won, replaced = (vo, vt) if side == "ours" else (vt, vo)
    return side, StatusChange(won, "both" if both else side, replaced)


def _merge_docs(b: NoteText, o: NoteText, t: NoteText, ours: bytes, theirs: bytes) -> NoteMerge:
    newer = _newer(o, t, ours, theirs)
    older = _other(newer)
    keyed = [_keyed(doc) for doc in (b, o, t)]
    sides = _Sides((b, o, t), (keyed[0][0], keyed[1][0], keyed[2][0]), tuple(k[1] for k in keyed))
    status_side, status = _merge_status(sides, newer)
    chosen: dict[str, tuple[str, ...] | None] = {}
    changes: dict[str, Any] = {}
    by_rule: list[str] = []
    lost_fields: dict[str, Any] = {}
    every = list(dict.fromkeys([*sides.orders[0], *sides.orders[1], *sides.orders[2]]))
    for ident in every:
        bl, ol, tl = sides.of(ident)
        # Two machines that each reinforced once both wrote the same count: that is two increments.
        counted = ident == "occurrences" and ol == tl != bl
        if (ol == tl and not counted) or tl == bl:
            chosen[ident] = ol
            continue
        if ol == bl:
            chosen[ident] = tl
            continue
        side_lines = {"ours": ol, "theirs": tl}
        if ident == "status" or ident in _STATUS_FOLLOWERS:
            chosen[ident] = side_lines[status_side]
            continue
        vb, vo, vt = sides.values(ident)
        if "\0" not in ident and _equal(vo, vt) and not counted:  # one value, written differently
            chosen[ident] = side_lines[newer]
            continue
        rule = _rule(ident) if "\0" not in ident else None
        if rule is not None:
            value = rule(vb, vo, vt, newer)
            by_rule.append(ident)
            if _equal(value, vo) or (value is _MISSING and ol is None):
                chosen[ident] = ol
            elif _equal(value, vt) or (value is _MISSING and tl is None):
                chosen[ident] = tl
            else:
                chosen[ident] = side_lines[newer] or side_lines[older]
                changes[ident] = fm.DELETE if value is _MISSING else value
            continue
        if ident.split("\0", 1)[0] not in _OWNED:
            merged = _merge_entry(ident, bl, ol, tl)
            if merged is not _FAILED:
                chosen[ident] = merged
                continue
        chosen[ident] = side_lines[newer]
        if side_lines[older] is not None:
            value = vo if older == "ours" else vt
            name = ident.replace("\0", "#")
            lost_fields[name] = "".join(side_lines[older] or ()) if value is _MISSING else value
    placed, _ = _merge_lines(sides.orders[0], sides.orders[1], sides.orders[2], newer, None)
    entries = [
        Entry(None if ident.startswith("\0") else ident.split("\0", 1)[0], list(lines))
        for ident in dict.fromkeys([*placed, *every])
        if (lines := chosen.get(ident)) is not None
    ]
    nl = _pick(b.newline, o.newline, t.newline, newer)
    has_fm = bool(entries) or bool(_pick(b.has_frontmatter, o.has_frontmatter, t.has_frontmatter, newer))
    open_fence = _pick(b.open_fence, o.open_fence, t.open_fence, newer) or o.open_fence or t.open_fence
    close_fence = _pick(b.close_fence, o.close_fence, t.close_fence, newer) or o.close_fence or t.close_fence
    if o.body == t.body or t.body == b.body:
        body, lost_body = o.body, False
    elif o.body == b.body:
        body, lost_body = t.body, False
    else:
        body_lines, lost_body = _merge_lines(
            fm.split_lines(b.body), fm.split_lines(o.body), fm.split_lines(t.body), newer, nl
        )
        body = "".join(body_lines)
    draft = NoteText(
        _pick(b.bom, o.bom, t.bom, newer), nl, has_fm,
        (open_fence or f"---{nl}") if has_fm else "", entries, (close_fence or f"---{nl}") if has_fm else "",
        body,
    )  # fmt: skip
    merged = fm.parse(draft.render(), source="merge")
    if changes:
        merged = fm.set_fields(merged, changes)
    merged = one_type_per_pair(merged, (o, t), newer == "ours", lost_fields)
    lost = None
    if lost_body or lost_fields:
        lost = LostSide(older, ours if older == "ours" else theirs, lost_body, lost_fields)
    return NoteMerge(merged.to_bytes(), "note", tuple(by_rule), status, newer if lost else None, lost)


# -- the conflict note ------------------------------------------------------------------------------
def conflict_path(path: str, lost: LostSide) -> str:
    """Where the lost side of ``path`` is kept: ``<stem>.conflict-<8 hex of its bytes>.<ext>``
    (``vault/layout.py`` knows the name as a conflict copy: listed by doctor, never a write target)."""
    folder, _, name = path.rpartition("/")
    stem, dot, ext = name.rpartition(".")
    digest = hashlib.sha256(lost.data).hexdigest()[:8]
    copy = f"{stem}.conflict-{digest}.{ext}" if dot and stem else f"{name}.conflict-{digest}"
    return f"{folder}/{copy}" if folder else copy


def conflict_file(path: str, merge: NoteMerge) -> tuple[str, bytes] | None:
    """The file that keeps what ``merge`` dropped of one side, as ``(path, bytes)``; ``None`` when
    nothing was dropped (or for two distinct notes, which the sync round files under a new name).

    A note's lost side becomes a new note, flagged (``tags: [sync-conflict]``, ``status: unfiled``
    for review, ``conflict_of: "[[original]]"``, ``conflict: {original_id, reason, lost_fields}``)
    with that side's body in full. Anything else is kept as its raw bytes. Both are functions of
    the merge's inputs only, so two machines write the same file.
    """
    lost = merge.lost
    if lost is None or merge.mode == "distinct":
        return None
    target = conflict_path(path, lost)
    if merge.mode == "text":
        return target, lost.data
    return target, conflict_note(path, lost)


def conflict_note(path: str, lost: LostSide) -> bytes:
    """The conflict note for a note's lost side (see :func:`conflict_file`)."""
    doc = fm.parse(lost.data.decode("utf-8"), source=path)
    meta = doc.meta
    stem = path.rsplit("/", 1)[-1].removesuffix(".md")
    updated = _time(meta.get("updated"))
    ms = int(updated.timestamp() * 1000) if updated is not None else 0
    title = meta.get("title") if isinstance(meta.get("title"), str) else stem
    record: dict[str, Any] = {
        "original_id": _id_of(doc),
        "reason": "both machines changed the same part of this note; this is the older side, as it was",
    }
    if lost.fields:
        record["lost_fields"] = dict(sorted(lost.fields.items()))
    fields: dict[str, Any] = {
        "id": derived_uuid7(ms, path.encode("utf-8") + b"\0" + lost.data),
        "title": f"{title} (conflict copy)",
        "kind": meta.get("kind") if isinstance(meta.get("kind"), str) else "note",
        "status": "unfiled",
        "project": meta.get("project") if isinstance(meta.get("project"), str) else None,
        "tags": [CONFLICT_TAG],
        "updated": iso(updated) if updated is not None else None,
        CONFLICT_OF_KEY: f"[[{path.removesuffix('.md')}]]",
        CONFLICT_KEY: record,
    }
    return new_note_text(fields, doc.body).to_bytes()
