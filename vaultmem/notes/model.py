"""The memory note: the frontmatter keys vaultmem owns, read from and written to note files."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass, field, replace
from typing import Any

from vaultmem.errors import MalformedNote
from vaultmem.notes.frontmatter import NoteText, compose, parse
from vaultmem.notes.ids import is_full_id

#: Statuses a note may carry. ``unfiled`` is a capture awaiting review; ``deleted`` is a soft delete.
STATUSES = frozenset({"active", "unfiled", "deleted", "superseded", "archived", "expired"})
#: The graph tools' word for ``unfiled`` (a thought not yet reviewed): see docs/architecture.md.
DRAFT_STATUS = "unfiled"
#: Statuses that count as live: searchable by default and eligible for dedup.
LIVE_STATUSES = frozenset({"active", "unfiled"})

#: Frontmatter keys vaultmem owns, in the order it writes them on a new note.
OWNED_KEYS = (
    "id", "title", "kind", "status", "project", "tags", "created", "updated", "importance",
    "occurrences", "source", "filing", "instructions", "always_load", "deleted_at", "delete_reason",
    "is_cluster", "is_protected", "is_global", "surface_after", "url_links",
    # Typed links (vaultmem.graph.links.EDGE_TYPES), their creation times and target ids.
    "related", "parent", "develops", "replaces", "cluster", "references", "depends_on", "contradicts",
    "supports", "link_created", "link_targets",
)  # fmt: skip


#: The drawing in a note the Excalidraw plugin saves (``excalidraw-plugin:`` in its properties): a
#: "Drawing" heading and a fenced block of the drawing's JSON (``json``, or base64 of it in
#: ``compressed-json``), to its closing fence or the note's end.
_DRAWING = re.compile(
    r"^#{1,2} Drawing[ \t]*\r?\n```(?:compressed-)?json[ \t]*\r?\n.*?(?:^```[ \t]*$|\Z)",
    re.MULTILINE | re.DOTALL,
)

#: A Templater expression in a ``tags:`` value, where an unclosed one runs to the value's end.
_TEMPLATER_TO_END = re.compile(r"<%.*?(?:%>|\Z)", re.DOTALL)
#: The opening of Templater's JavaScript execution command (``<%*``, ``<%-*``, ``<%_*``), whose
#: script may run over many lines and blank ones.
_EXECUTION = re.compile(r"<%[-_]?\*")
#: A blank line: where a paragraph, and so an interpolation command, ends.
_BLANK_LINE = re.compile(r"(?:\r\n|\r(?!\n)|\n)[ \t]*(?:\r\n|\r|\n)")


def without_templater(text: str, stand_in: str = " ") -> str:
    """``text`` with each Templater expression replaced by ``stand_in``: a template's placeholder,
    filled in only when the template is applied (``<% tp.file.folder() %>``, ``<%* … %>``).

    Templater's commands open with ``<%`` (interpolation) or ``<%*`` (execution) and close at the
    next ``%>``. An execution command's script may span any lines; an interpolation closes within
    its paragraph (a blank line ends it), so a stray ``<%`` in prose (``costs <%5 of revenue``) hides
    nothing past its paragraph, however far away a ``%>`` is. An unclosed ``<%`` is text. One pass:
    the next ``%>`` and the next blank line only move forward."""
    if "<%" not in text:
        return text
    pieces: list[str] = []
    position = search = 0
    close = blank = -1
    while (start := text.find("<%", search)) >= 0:
        if close < start + 2:
            close = text.find("%>", start + 2)
            if close < 0:
                break
        if not _EXECUTION.match(text, start):
            if blank < start:
                found = _BLANK_LINE.search(text, start)
                blank = found.start() if found else len(text)
            if blank < close:
                search = start + 2  # a stray `<%`: text
                continue
        pieces.append(text[position:start])
        pieces.append(stand_in)
        position = search = close + 2
    pieces.append(text[position:])
    return "".join(pieces)


def _tag_words(raw: list[Any]) -> list[Any]:
    """The tags of a ``tags:`` list, but a Templater placeholder (``<% tp.file.folder() %>``) and any
    item or word it is part of (``project/<% tp.file.title %>``): no tag until the template is applied."""
    return [t for t in raw if not (isinstance(t, str) and "<%" in t)]


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def iso(ts: dt.datetime) -> str:
    """ISO-8601 UTC with a ``Z`` and whole seconds: ``2026-11-30T05:00:00Z``."""
    return ts.astimezone(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def fingerprint(body: str) -> str:
    """The exact-content fingerprint of a body: sha256 of its text, line endings and outer
    whitespace normalised (a CRLF copy or a trailing newline is the same content)."""
    text = body.replace("\r\n", "\n").replace("\r", "\n").strip()
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return iso(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bool):
        return None  # a YAML 1.1 boolean (``no``) is never valid text for an owned key
    return str(value)


def parse_time(value: str | None) -> dt.datetime | None:
    """Parse a stored timestamp (ISO date or date-time); ``None`` when absent or unreadable."""
    if not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


@dataclass
class Note:
    """A memory note as vaultmem reads it. ``text`` keeps the exact file text for edits."""

    path: str
    id: str | None
    title: str
    kind: str
    status: str
    body: str
    project: str | None = None
    tags: tuple[str, ...] = ()
    created: str | None = None
    updated: str | None = None
    importance: float | None = None
    occurrences: int = 1
    source: dict[str, Any] = field(default_factory=dict)
    filing: dict[str, Any] = field(default_factory=dict)
    instructions: str | None = None
    always_load: bool = False
    deleted_at: str | None = None
    delete_reason: str | None = None
    is_cluster: bool = False
    is_protected: bool = False
    is_global: bool = False
    surface_after: str | None = None
    #: ``(text, url, label)`` of each url link, in stored order.
    url_links: tuple[tuple[str, str, str], ...] = ()
    text: NoteText | None = None
    #: The person's own file (read with ``persons``): its properties are theirs, whatever their names.
    persons: bool = False
    #: Why the properties of the person's file could not be read (its text is then all body).
    unreadable_properties: str | None = None
    #: The sha256 of the whole file when only its start was read (a person's file over the size
    #: cap, ``vault/catalog.py``): ``content_hash`` stays the file's, so an edit past the part read
    #: is still a change.
    file_sha256: str | None = None

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.body)

    @property
    def content_hash(self) -> str:
        """sha256 of the note file's exact bytes (empty text when the note was not read from a file)."""
        if self.file_sha256 is not None:
            return self.file_sha256
        data = self.text.to_bytes() if self.text is not None else b""
        return hashlib.sha256(data).hexdigest()

    @property
    def is_live(self) -> bool:
        return self.status in LIVE_STATUSES

    @property
    def slug(self) -> str:
        name = self.path.rsplit("/", 1)[-1]
        return name[:-3] if name.endswith(".md") else name


def note_from_text(raw: str, path: str, *, persons: bool = False) -> Note:
    """Read a note file's text; raise :class:`MalformedNote` when an owned key is unusable.

    A file without frontmatter is a plain note a person wrote: it reads as an active note of kind
    ``note`` with no id (the index derives one). ``persons``: see :func:`note_from_doc`.
    """
    if not persons:
        return note_from_doc(parse(raw, source=path), path)
    try:
        doc = parse(raw, source=path)
    except MalformedNote as exc:
        # Properties YAML cannot read (``title: Meeting: Q3 plans``, a tab-indented list): Obsidian
        # flags them and still shows and searches the note. The person's file is never written, so
        # its whole text is read as the body, and doctor lists the properties as unreadable.
        body = raw.removeprefix("\ufeff")
        plain = note_from_doc(NoteText(body != raw, "\n", False, "", [], "", body), path, persons=True)
        return replace(plain, unreadable_properties=str(exc))
    return note_from_doc(doc, path, persons=True)


def note_from_doc(doc: NoteText, path: str, *, persons: bool = False) -> Note:
    """A note from text already split and parsed (what :func:`note_from_text` does after parsing).

    ``persons``: the file is the person's own (outside vaultmem's folder in a vault adopted in
    place), which vaultmem never writes. Its properties are the person's vocabulary even where a
    name is one of vaultmem's keys (Obsidian Web Clipper's ``source: "<url>"``, a workflow's
    ``status: in-progress``, a template's empty ``tags:`` item, a ``project:`` list of links), so a
    value vaultmem cannot use as its key is read as absent rather than making the note malformed:
    the note stays searched and linked, as Obsidian shows it.
    """
    meta = doc.meta
    stem = path.rsplit("/", 1)[-1].removesuffix(".md")

    def text_key(key: str) -> str | None:
        value = meta.get(key)
        if value is None:
            return None
        text = _as_text(value)
        if text is None or isinstance(value, list | dict):
            if persons:
                return None
            raise MalformedNote(f"{path}: frontmatter key {key!r} must be text, not {value!r}")
        return text

    status = text_key("status") or "active"
    if status not in STATUSES:
        if not persons:
            raise MalformedNote(
                f"{path}: status {meta.get('status')!r} is not one of {', '.join(sorted(STATUSES))}; "
                "fix the status line by hand"
            )
        status = "active"  # the person's own status (``todo``, ``Done``), not a lifecycle of vaultmem's
    raw_tags = meta.get("tags") or []
    if isinstance(raw_tags, str):
        words = _TEMPLATER_TO_END.sub("<%", raw_tags).replace(",", " ").split()
        raw_tags = [t for t in words if t]
    if isinstance(raw_tags, list):
        raw_tags = _tag_words(raw_tags)
    if persons:  # what Obsidian shows as a tag: the words, not an empty item or a nested value
        listed = raw_tags if isinstance(raw_tags, list) else []
        raw_tags = [t for t in listed if isinstance(t, str | int | float)]
    if not isinstance(raw_tags, list) or not all(isinstance(t, str | int | float) for t in raw_tags):
        raise MalformedNote(f"{path}: tags must be a list of words")
    tags = tuple(str(t).lstrip("#") for t in raw_tags if not isinstance(t, bool))
    source = meta.get("source") or {}
    filing = meta.get("filing") or {}
    if persons:
        source = source if isinstance(source, dict) else {}
        filing = filing if isinstance(filing, dict) else {}
    if not isinstance(source, dict) or not isinstance(filing, dict):
        raise MalformedNote(f"{path}: source and filing must be mappings")
    occurrences = meta.get("occurrences", 1)
    if isinstance(occurrences, bool) or not isinstance(occurrences, int) or occurrences < 1:
        occurrences = 1
    importance = meta.get("importance")
    if isinstance(importance, bool) or not isinstance(importance, int | float):
        importance = None
    title = text_key("title") or stem
    note_id = text_key("id")
    if persons and note_id is not None and not is_full_id(note_id):
        # The person's own id (a Zettelkasten minute stamp, a book's number, a template's `<% … %>`),
        # which two of their notes may share: vaultmem's ids are UUIDs, this note gets one of its path.
        note_id = None
    body = doc.body
    if persons and "excalidraw-plugin" in meta and "Drawing" in body:
        # What a person reads of a drawing is its Text Elements; its data is thousands of lines of
        # coordinates and base64 that matched queries and cost hundreds of windows to embed.
        body = _DRAWING.sub("", body)
    return Note(
        path=path,
        id=note_id.lower() if note_id else None,
        title=title,
        kind=text_key("kind") or "note",
        status=status,
        body=body,
        project=text_key("project"),
        tags=tags,
        created=text_key("created"),
        updated=text_key("updated"),
        importance=float(importance) if importance is not None else None,
        occurrences=occurrences,
        source=source,
        filing=filing,
        instructions=text_key("instructions"),
        always_load=meta.get("always_load") is True,
        deleted_at=text_key("deleted_at"),
        delete_reason=text_key("delete_reason"),
        is_cluster=meta.get("is_cluster") is True,
        is_protected=meta.get("is_protected") is True,
        is_global=meta.get("is_global") is True,
        surface_after=text_key("surface_after"),
        url_links=_url_links(meta.get("url_links")),
        text=doc,
        persons=persons,
    )


def _url_links(value: Any) -> tuple[tuple[str, str, str], ...]:
    """``url_links: [{text, url, label?}]`` as tuples; rows that are not such a mapping are skipped
    (a person's odd entry is kept in the file, just not reported)."""
    if not isinstance(value, list):
        return ()
    links: list[tuple[str, str, str]] = []
    for row in value:
        if not isinstance(row, dict):
            continue
        text, url, label = row.get("text"), row.get("url"), row.get("label")
        if isinstance(text, str) and isinstance(url, str):
            links.append((text, url, label if isinstance(label, str) and label else text))
    return tuple(links)


def new_note_text(fields: dict[str, Any], body: str) -> NoteText:
    """The text of a new note: owned keys in their canonical order, then the body."""
    ordered = {k: fields[k] for k in OWNED_KEYS if k in fields and fields[k] is not None}
    ordered.update({k: v for k, v in fields.items() if k not in ordered and v is not None})
    if not body.endswith("\n"):
        body += "\n"
    return compose(ordered, body)
