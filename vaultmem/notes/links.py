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

**Links in a note's text** (:func:`text_refs`) are the person's graph: ``[[Note]]``,
``[[Note|shown text]]``, ``[[Note#Heading]]``, ``[[folder/Note]]``, embeds ``![[Note]]`` and
Markdown links ``[text](folder/Note.md)`` in the body, and wikilinks in the person's own properties
(``up: "[[Projects]]"``; not vaultmem's keys). Text in code (fenced blocks, inline code), in math
(``$$ … $$``, ``$ … $``) and in comments (``%% … %%``, ``<!-- … -->``) holds no link and no tag, as
in Obsidian. They become
read-only edges of type :data:`TEXT_LINK` (``links_to``): vaultmem shows them and never writes them.
The same pass finds the body's ``#tags``.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from vaultmem.notes import frontmatter as fm
from vaultmem.notes.frontmatter import NoteText
from vaultmem.notes.ids import uuid5_text
from vaultmem.notes.model import OWNED_KEYS, without_templater

EDGE_TYPES = (
    "related", "parent", "develops", "replaces", "cluster", "references", "depends_on",
    "contradicts", "supports",
)  # fmt: skip
#: Optional per-edge creation times: ``link_created: {"supports/caching-policy": "2026-…Z"}``.
LINK_CREATED_KEY = "link_created"
#: The id of the note each link was made for: ``link_targets: {"supports/caching-policy": "<id>"}``.
LINK_TARGETS_KEY = "link_targets"
#: The edge type of a link written in a note's text (read-only: it lives in the person's words).
TEXT_LINK = "links_to"
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


def name_key(name: str) -> str:
    """A note's name as links match it: case-insensitive, and in one Unicode form (macOS writes
    ``Café.md`` decomposed, a typed ``[[Café]]`` is composed; Obsidian indexes names composed)."""
    return unicodedata.normalize("NFC", name.lower())


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
    return uuid5_text(_EDGE_NS, f"{source_id}|{edge_type}|{target_id}")


@dataclass(frozen=True, slots=True)
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


def text_edges(
    source_id: str, targets: tuple[str, ...], resolve: Callable[[str, str | None], str | None], created: str
) -> tuple[list[Edge], list[str]]:
    """The read-only ``links_to`` edges of the links in a note's text, and the targets that resolved
    to no note. A note's links to itself are no edges; two links to one note are one edge."""
    edges: dict[str, Edge] = {}
    dangling: list[str] = []
    for target in targets:
        target_id = resolve(target, None)
        if target_id is None:
            dangling.append(target)
        elif target_id != source_id:
            edge = Edge.make(source_id, TEXT_LINK, target_id, created)
            edges.setdefault(edge.id, edge)
    return list(edges.values()), dangling


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


# -- links and tags in a note's text ----------------------------------------------------------------
#: Files Obsidian embeds or links that are not notes: a link to one is neither an edge nor dangling.
ATTACHMENT_EXTENSIONS = frozenset(
    {
        "png", "jpg", "jpeg", "gif", "bmp", "svg", "webp", "avif", "heic", "tif", "tiff", "ico",
        "mp3", "wav", "m4a", "ogg", "flac", "webm", "3gp", "mp4", "ogv", "mov", "mkv",
        "pdf", "canvas", "base", "json", "csv", "txt", "html", "zip", "docx", "xlsx", "pptx",
    }
)  # fmt: skip
#: Frontmatter keys whose wikilinks are not the person's graph: vaultmem's own (typed links are
#: edges of their own type) and a conflict note's pointer to its original.
_NOT_PERSON_KEYS = frozenset({*OWNED_KEYS, "conflict_of", "aliases", "alias"})
#: The same in a person's own file (outside vaultmem's folder): there a property named like one of
#: vaultmem's keys (``project: "[[Kitchen]]"``, ``source: "[[Book]]"``) is the person's, and Obsidian
#: draws its link; typed links and their bookkeeping stay what they are.
_NOT_PERSONS_OWN_KEYS = frozenset(
    {*EDGE_TYPES, LINK_CREATED_KEY, LINK_TARGETS_KEY, "conflict_of", "aliases", "alias"}
)
_ANY_WIKILINK = re.compile(r"!?\[\[([^\[\]\n]+)\]\]")
#: ``[text](destination "title")``: a destination in ``<…>`` or without spaces, where balanced
#: parentheses may appear (``Black%20Swan%20(book).md``, as Obsidian writes a note's name with them);
#: a title in ``"…"``, ``'…'`` or ``(…)`` (CommonMark's three forms).
_MD_LINK = re.compile(
    r"!?\[[^\[\]\n]*\]\(\s*(<[^<>\n]+>|(?:[^()\s]|\([^()\s]*\))+)"
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"
)
_EXTENSION = re.compile(r"\.(?=[0-9]*[A-Za-z])[A-Za-z0-9]{1,10}$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_FENCE = re.compile(r"^(?:[ \t]{0,3}>)*[ \t]{0,3}(`{3,}|~{3,})")
#: Obsidian's own rule (its app.js, quoted in obsidianmd/obsidian-help#816; the help's "Tag format"
#: since #1016: letters of any script, numbers, ``_``, ``-``, ``/`` and other Unicode, emoji too): a
#: tag runs to whitespace, ASCII punctuation other than ``_ - /``, or a character of Unicode's General
#: or Supplemental Punctuation blocks (``#tg🚀rocket`` is one tag; ``#tag—said`` ends at the dash).
_TAG = re.compile(
    r"(?:^|(?<=\s))#([^\s\ufeff\u2000-\u206f\u2e00-\u2e7f'!\"#$%&()*+,.:;<=>?@^`{|}~\[\]\\]+)", re.MULTILINE
)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")


@dataclass(frozen=True)
class TextRefs:
    """What a note's text refers to: link targets as written (heading, shown text and ``.md``
    dropped; Markdown links URL-decoded, relative ones kept relative) and the body's tags."""

    links: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()


def text_refs(body: str, meta: Mapping[str, Any] | None = None, *, persons: bool = False) -> TextRefs:
    """The links (body, then the person's own properties) and body ``#tags`` of one note.

    ``persons``: the note is the person's own file, so every property but the typed links is theirs.
    """
    links: dict[str, None] = {}
    tags: dict[str, None] = {}
    if "[[" in body or "](" in body or "#" in body:
        prose = _prose(body)
        for match in _ANY_WIKILINK.finditer(prose):
            target = _wikilink_target(match.group(1))
            if target:
                links.setdefault(target)
        for match in _MD_LINK.finditer(prose):
            target = _markdown_target(match.group(1))
            if target:
                links.setdefault(target)
        if "#" in prose:
            bare = _URL.sub(" ", _MD_LINK.sub(" ", _ANY_WIKILINK.sub(" ", prose)))
            for match in _TAG.finditer(bare):
                tag = match.group(1).rstrip("/")
                if tag and not tag.isdigit():  # "#1984" is no tag, "#y1984" is (Obsidian's rule)
                    tags.setdefault(tag)
    not_persons = _NOT_PERSONS_OWN_KEYS if persons else _NOT_PERSON_KEYS
    for key, value in (meta or {}).items():
        if key not in not_persons:
            for target in wikilink_targets(value):
                links.setdefault(target)
    return TextRefs(tuple(links), tuple(tags))


def wikilink_targets(value: Any) -> list[str]:
    """The note names every ``[[wikilink]]`` in a frontmatter value (text, or lists of it) names."""
    return [
        t
        for raw in _strings(value)
        for m in _ANY_WIKILINK.finditer(raw)
        if (t := _wikilink_target(m.group(1)))
    ]


def aliases_of(meta: Mapping[str, Any]) -> tuple[str, ...]:
    """The note's ``aliases:`` (or ``alias:``): other names a link may call it by."""
    out: dict[str, None] = {}
    for key in ("aliases", "alias"):
        for value in _strings(meta.get(key)):
            if value.strip():
                out.setdefault(value.strip())
    return tuple(out)


def is_attachment(target: str) -> bool:
    """A link to a file that is not a note (an image, a PDF, a canvas): never an edge."""
    name = target.rsplit("/", 1)[-1]
    return "." in name and name.rsplit(".", 1)[1].lower() in ATTACHMENT_EXTENSIONS


def names_a_file(target: str) -> bool:
    """A link target that ends in a file extension other than ``.md`` (``book.epub``,
    ``diagram.drawio``, ``Sketch.excalidraw``): when no note answers to it, it names an attachment
    (Obsidian opens any file of the vault), never a note not written yet. ``Dr. Smith`` and
    ``2024.05.01`` end in no extension (a space, only digits)."""
    return is_attachment(target) or _EXTENSION.search(target.rsplit("/", 1)[-1]) is not None


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield without_templater(value)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _wikilink_target(inner: str) -> str | None:
    """``Note`` of ``Note#Heading|shown``; None for a link to the note itself or to a file."""
    target = inner.split("|", 1)[0].rstrip("\\")  # a table cell escapes the bar: [[Note\\|shown]]
    target = target.split("#", 1)[0].strip()
    return _note_target(target)


def _markdown_target(destination: str) -> str | None:
    """The note a Markdown link's destination names (None for a URL, an anchor or a file)."""
    if destination.startswith("<"):
        destination = destination[1:-1]
    if _SCHEME.match(destination) or destination.startswith(("#", "//")):
        return None  # a URL, an anchor in the note itself, a URL without its scheme
    path = unquote(destination.split("#", 1)[0].split("?", 1)[0]).strip()
    # ``/Folder/Note.md`` stays rooted (the vault's root); ``Dr.%20Smith`` and ``Node.js`` without
    # ``.md`` are notes as Obsidian reads them (it tries the note first); an attachment is no note.
    return _note_target(path)


def _note_target(target: str) -> str | None:
    if target.lower().endswith(".md"):
        target = target[:-3]
    target = target.strip()
    if not target or target.endswith("/") or is_attachment(target):
        return None
    return target


def _prose(body: str) -> str:
    """``body`` without what holds no link: fenced code blocks, inline code, math, comments,
    Templater expressions."""
    if "```" in body or "~~~" in body:
        body = _without_fences(body)
    if "`" in body:
        body = _without_code_spans(body)
    if "$" in body:
        body = _without_math(body)
    if "%%" in body:
        body = _without_between(body, "%%", "%%")
    if "<!--" in body:
        body = _without_between(body, "<!--", "-->")
    if "<%" in body:  # a template's Templater expressions: `[[<% tp.date.yesterday() %>]]` is no link
        body = without_templater(body)
    return body


def _without_fences(body: str) -> str:
    out: list[str] = []
    fence: tuple[str, int] | None = None
    for line in body.splitlines(keepends=True):
        match = _FENCE.match(line)
        if fence is None:
            opens = match is not None and not (match.group(1)[0] == "`" and "`" in line[match.end() :])
            if match is not None and opens:
                fence = (match.group(1)[0], len(match.group(1)))
                out.append("\n")
            else:
                out.append(line)
            continue
        out.append("\n")
        closes = match is not None and match.group(1)[0] == fence[0] and len(match.group(1)) >= fence[1]
        if closes and match is not None and not line[match.end() :].strip():
            fence = None
    return "".join(out)


def _without_code_spans(text: str) -> str:
    """CommonMark's rule in one pass: a backtick run opens a code span that the next run of the same
    length closes; a run no run of its length follows is plain text."""
    runs = [(m.start(), m.end()) for m in re.finditer(r"`+", text)]
    following: dict[int, int] = {}  # run index -> index of the next run of the same length
    last: dict[int, int] = {}
    for i in range(len(runs) - 1, -1, -1):
        length = runs[i][1] - runs[i][0]
        if length in last:
            following[i] = last[length]
        last[length] = i
    pieces: list[str] = []
    position = 0
    i = 0
    while i < len(runs):
        j = following.get(i)
        if j is None:
            i += 1
            continue
        pieces.append(text[position : runs[i][0]])
        pieces.append(" ")
        position = runs[j][1]
        i = j + 1
    pieces.append(text[position:])
    return "".join(pieces)


#: ``$$``, not escaped and not part of a longer run of dollars: opens and closes display math.
_DISPLAY_MATH = re.compile(r"(?<![\\$])\$\$(?!\$)(.*?)(?<![\\$])\$\$(?!\$)", re.DOTALL)
#: ``$…$`` within one line (pandoc's rule, which Obsidian's matches where checked): the opening
#: ``$`` followed by no space, the closing one preceded by no space and followed by no digit, no
#: ``$`` between, so prose dollars (``$5 and $6``, ``$5-$6``) are text and an unclosed ``$`` hides
#: nothing past its line.
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?![\s$])(?:\\.|[^$\\\r\n])*?(?<![\s\\])\$(?![$\d])")


def _without_math(text: str) -> str:
    """``text`` without its math (``$$…$$`` blocks, ``$…$`` inline), which Obsidian renders with
    MathJax: ``$[[e_1]]\\rho$`` is semantics brackets, ``$[0,1](x)$`` an interval, no link. An unclosed
    ``$$`` is text."""
    if "$$" in text:
        text = _DISPLAY_MATH.sub(" ", text)
    return _INLINE_MATH.sub(" ", text) if "$" in text else text


def _without_between(text: str, opening: str, closing: str) -> str:
    """``text`` without each ``opening … closing`` span (an unclosed opening is kept as text)."""
    pieces: list[str] = []
    position = 0
    while True:
        start = text.find(opening, position)
        if start < 0:
            break
        end = text.find(closing, start + len(opening))
        if end < 0:
            break
        pieces.append(text[position:start])
        pieces.append(" ")
        position = end + len(closing)
    pieces.append(text[position:])
    return "".join(pieces)
