"""Round-trip-safe Markdown + YAML frontmatter.

A note file is an optional UTF-8 BOM, an optional frontmatter block fenced by ``---`` lines, and a
body. Only ``---`` closes the block, as in Obsidian (its ``getFrontMatterInfo``) and
python-frontmatter: YAML's and pandoc's ``...`` end marker is no end there, so a block a ``...``
line was meant to close is refused with the fix (a person's file is then read all as body, its
properties listed by doctor as unreadable). vaultmem edits only the frontmatter keys it owns: every
other top-level entry, the fences, the BOM, the line endings and the body are written back exactly
as they were read. That is why this module splits the block into top-level entries itself instead
of loading and re-dumping the YAML (python-frontmatter re-serialises the whole block, which reorders
keys and rewrites values a person typed).

YAML from the vault is untrusted: the block is size-capped, loaded with a safe loader, and anchors
or aliases (the "billion laughs" family) are refused before anything is expanded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from vaultmem.errors import MalformedNote
from vaultmem.safe_yaml import load_yaml_mapping

BOM = "\ufeff"
MAX_FRONTMATTER_BYTES = 256 * 1024
_FENCE = re.compile(r"^---[ \t]*(\r\n|\n|\r)?$")
_CLOSE = re.compile(r"^---[ \t]*(\r\n|\n|\r)?$")
_DOTS = re.compile(r"^\.\.\.[ \t]*(\r\n|\n|\r)?$")
_KEY = re.compile(r"""^(?:"([^"]*)"|'([^']*)'|([^\s:#'"\-?][^:]*?|-[^\s:][^:]*?))[ \t]*:(?:[ \t]|\r?\n|$)""")
_CLOSE_ANYWHERE = re.compile(r"^---[ \t]*\r?$", re.MULTILINE)
_LINE_END = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")

#: Characters YAML reads as line breaks that PyYAML may write unescaped inside a scalar.
_YAML_LINE_BREAKS = "\x85\u2028\u2029"


@dataclass
class Entry:
    """One top-level frontmatter entry: its key (``None`` for leading comments) and raw lines."""

    key: str | None
    lines: list[str]


@dataclass
class NoteText:
    """A note file split into its parts, each kept exactly as read."""

    bom: bool
    newline: str
    has_frontmatter: bool
    open_fence: str
    entries: list[Entry]
    close_fence: str
    body: str
    meta: dict[str, Any] = field(default_factory=dict)

    def render(self) -> str:
        out = [BOM] if self.bom else []
        if self.has_frontmatter:
            out.append(self.open_fence)
            for entry in self.entries:
                out.extend(entry.lines)
            out.append(self.close_fence)
        out.append(self.body)
        return "".join(out)

    def to_bytes(self) -> bytes:
        return self.render().encode("utf-8")


def _detect_newline(text: str) -> str:
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    return "\r\n" if crlf > lf else "\n"


def _split_entries(lines: list[str]) -> list[Entry]:
    entries: list[Entry] = []
    current = Entry(None, [])
    for line in lines:
        starts_key = bool(line) and line[0] not in " \t#\r\n" and not line.startswith("- ")
        if starts_key and line.rstrip("\r\n") != "-":
            match = _KEY.match(line)
            key = next((g for g in match.groups() if g is not None), None) if match else None
            if current.lines or current.key is not None:
                entries.append(current)
            current = Entry(key.strip() if key is not None else line.rstrip("\r\n"), [line])
        else:
            current.lines.append(line)
    if current.lines or current.key is not None:
        entries.append(current)
    return entries


def split_lines(text: str) -> list[str]:
    """Lines ending in ``\n``, ``\r\n`` or ``\r``, ends kept.

    Not ``str.splitlines``: it also breaks at NEL, LS, PS, form feeds and more, which Obsidian does
    not, so a hidden separator could end the frontmatter early and hide a ``status: deleted``.
    """
    return [line for line in _LINE_END.split(text) if line]


def _too_large(source: str, dots: bool) -> MalformedNote:
    if dots:
        return _ends_with_dots(source)
    return MalformedNote(
        f"{source}: frontmatter is larger than {MAX_FRONTMATTER_BYTES:,} bytes; "
        "shorten it by hand (vaultmem will not read or rewrite it)"
    )


def _ends_with_dots(source: str) -> MalformedNote:
    return MalformedNote(
        f"{source}: the frontmatter ends with a `...` line, which Obsidian does not read as its end "
        "(only `---` ends it), so it shows no properties; change that line to `---` by hand"
    )


def parse(text: str, *, source: str = "note") -> NoteText:
    """Split a note's text; raise :class:`MalformedNote` when its frontmatter cannot be read."""
    bom = text.startswith(BOM)
    if bom:
        text = text[1:]
    newline = _detect_newline(text)
    first_end = text.find("\n")
    first = text if first_end < 0 else text[: first_end + 1]
    if not _FENCE.match(first) or first_end < 0:
        return NoteText(bom, newline, False, "", [], "", text)
    # Split only as far as a frontmatter block may reach: a 10 MB note is not cut into lines here.
    rest = text[first_end + 1 :]
    window = rest[: MAX_FRONTMATTER_BYTES + 16]
    lines = split_lines(window)
    truncated = len(window) < len(rest)
    if truncated:
        lines = lines[:-1]  # possibly cut mid-line: never mistaken for a closing fence
    consumed = len(first)
    block: list[str] = []
    close: str | None = None
    dots = False  # a `...` line before the closing fence: meant as the end, which it is not
    for line in lines:
        consumed += len(line)
        if _CLOSE.match(line):
            close = line
            break
        dots = dots or _DOTS.match(line) is not None
        block.append(line)
        if consumed > MAX_FRONTMATTER_BYTES + 8:
            raise _too_large(source, dots)
    if close is None and dots:
        raise _ends_with_dots(source)
    if close is None and truncated and _CLOSE_ANYWHERE.search(rest, len(window) - 4096):
        raise _too_large(source, dots)
    if close is None:
        # An opening fence with no closing one: the whole file is body, exactly as Obsidian reads it.
        return NoteText(bom, newline, False, "", [], "", text)
    if not close.endswith(("\n", "\r")):
        close += newline  # the fence ended the file: a body we add must start on its own line
        body = ""
    else:
        body = text[consumed:]
    block_text = "".join(block)
    if len(block_text.encode("utf-8")) > MAX_FRONTMATTER_BYTES:
        raise _too_large(source, dots)
    try:
        meta = load_yaml_mapping(block_text.replace("\r\n", "\n").replace("\r", "\n"), source=source)
    except MalformedNote as exc:
        if dots:  # `...` then the body's text, up to a `---` further down: no YAML
            raise _ends_with_dots(source) from exc
        raise
    return NoteText(bom, newline, True, first, _split_entries(block), close, body, meta)


def render_entry(key: str, value: Any, newline: str) -> list[str]:
    """The lines of one ``key: value`` entry, block style, ending in ``newline``."""
    dumped = yaml.safe_dump(
        {key: value}, allow_unicode=True, sort_keys=False, default_flow_style=False, width=1_000_000
    )
    if any(c in dumped for c in _YAML_LINE_BREAKS):
        # PyYAML writes these raw, and a raw NEL reads back as a folded line break: escape them.
        dumped = yaml.safe_dump(
            {key: value}, allow_unicode=False, sort_keys=False, default_flow_style=False, width=1_000_000
        )
    return [line + newline for line in dumped.rstrip("\n").split("\n")]


_DELETE = object()
DELETE: Any = _DELETE


def _trailing_comments(lines: list[str]) -> list[str]:
    """The comment and blank lines at the end of an entry, which belong to no value.

    Only column-0 comments count: an indented ``#`` line may be text inside a block scalar.
    """
    end = len(lines)
    while end > 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1
    return lines[end:]


def _same(a: Any, b: Any) -> bool:
    return bool(a == b) or repr(a) == repr(b)  # repr: a NaN equals itself


def set_fields(note: NoteText, changes: dict[str, Any]) -> NoteText:
    """A copy of ``note`` with owned keys set (or removed with :data:`DELETE`); all else untouched.

    Comment and blank lines after an edited entry are kept. Raise :class:`MalformedNote` when the
    block is not one ``key: value`` entry per line (a flow mapping, say), so that editing a key in
    place would change what the other lines mean.
    """
    entries = [Entry(e.key, list(e.lines)) for e in note.entries]
    nl = note.newline
    for key, value in changes.items():
        positions = [i for i, e in enumerate(entries) if e.key == key]
        kept = [line for i in positions for line in _trailing_comments(entries[i].lines)]
        if value is _DELETE:
            for i in reversed(positions):
                del entries[i]
            if kept:
                entries.insert(positions[0], Entry(None, kept))
            continue
        rendered = Entry(key, render_entry(key, value, nl) + kept)
        if positions:
            entries[positions[0]] = rendered
            for i in reversed(positions[1:]):
                del entries[i]
        else:
            if entries and entries[-1].lines and not entries[-1].lines[-1].endswith(("\n", "\r")):
                entries[-1].lines[-1] += nl
            entries.append(rendered)
    meta = dict(note.meta)
    for key, value in changes.items():
        if value is _DELETE:
            meta.pop(key, None)
        else:
            meta[key] = value
    open_fence = note.open_fence or f"---{nl}"
    close_fence = note.close_fence or f"---{nl}"
    edited = NoteText(note.bom, nl, True, open_fence, entries, close_fence, note.body, meta)
    _check_edit(edited)
    return edited


def _check_edit(edited: NoteText) -> None:
    """Read the edited block back: it must mean exactly ``edited.meta``, key for key."""
    block = "".join(line for e in edited.entries for line in e.lines)
    try:
        reread = load_yaml_mapping(block.replace("\r\n", "\n").replace("\r", "\n"), source="note")
    except MalformedNote as exc:
        raise MalformedNote(
            f"vaultmem cannot edit this frontmatter in place without changing lines it does not own "
            f"({exc}); write it as one `key: value` entry per line"
        ) from exc
    if reread.keys() != edited.meta.keys() or not all(_same(reread[k], edited.meta[k]) for k in reread):
        raise MalformedNote(
            "vaultmem cannot edit this frontmatter in place without changing lines it does not own; "
            "write it as one `key: value` entry per line"
        )


def with_body(note: NoteText, body: str) -> NoteText:
    """A copy of ``note`` with its body replaced (the frontmatter is untouched)."""
    return NoteText(
        note.bom, note.newline, note.has_frontmatter, note.open_fence,
        [Entry(e.key, list(e.lines)) for e in note.entries], note.close_fence, body, dict(note.meta),
    )  # fmt: skip


def compose(fields: dict[str, Any], body: str, newline: str = "\n") -> NoteText:
    """A new note with ``fields`` in the given order and ``body``."""
    entries = [Entry(k, render_entry(k, v, newline)) for k, v in fields.items()]
    return NoteText(False, newline, True, f"---{newline}", entries, f"---{newline}", body, dict(fields))
