"""What the catalog knows of one note (:class:`Entry`), rebuilt from the catalog's cache at every start."""

from __future__ import annotations

import re
import sys
from typing import Any, NamedTuple, overload

from vaultmem.notes.links import aliases_of, recorded_targets, text_refs, typed_links
from vaultmem.notes.model import Note, parse_time

#: An ISO date-time as vaultmem and Obsidian write it, whose first ten characters are its day.
_DAY = re.compile(
    r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$"
)


class Entry(NamedTuple):
    """What the catalog knows of one note, rebuilt from the cache at every start: a named tuple
    (docs/architecture.md, "Starting fast"), its repeated values shared (:func:`_shared`)."""

    path: str
    id: str | None
    title: str
    kind: str
    status: str
    project: str | None
    tags: tuple[str, ...]
    created: str | None
    updated: str | None
    fingerprint: str
    #: sha256 of the file's bytes: how the watcher recognises a file it has already seen.
    content_hash: str
    source_id: str | None
    source_url: str | None
    always_load: bool
    #: Typed links the note declares: (edge type, target name) pairs.
    links: tuple[tuple[str, str], ...]
    mtime_ns: int
    size: int
    importance: float | None = None
    is_cluster: bool = False
    is_protected: bool = False
    is_global: bool = False
    surface_after: str | None = None
    url_links: tuple[tuple[str, str, str], ...] = ()
    #: Provenance (``source.transport`` and ``source.trust``): how the text arrived, and how far
    #: it is trusted (a fetched page is ``external-fetch`` / ``untrusted``).
    source_transport: str | None = None
    source_trust: str | None = None
    #: ``link_targets``: (link key ``type/name``, id of the note the link was made for) pairs.
    link_ids: tuple[tuple[str, str], ...] = ()
    #: Links in the note's text (body, the person's own properties), as written: read-only edges.
    text_links: tuple[str, ...] = ()
    #: ``#tags`` in the body (frontmatter ``tags:`` are in ``tags``).
    body_tags: tuple[str, ...] = ()
    #: ``aliases:``: other names a link may call this note by.
    aliases: tuple[str, ...] = ()

    @property
    def slug(self) -> str:
        return self.path.rsplit("/", 1)[-1].removesuffix(".md")

    def but(self, **changes: Any) -> Entry:
        """This entry with ``changes`` (field name -> value) made."""
        return self._replace(**changes)

    @property
    def all_tags(self) -> tuple[str, ...]:
        """Every tag the note carries, as Obsidian counts them: frontmatter ``tags:``, then body ``#tags``."""
        if not self.body_tags:
            return self.tags
        return (*self.tags, *(t for t in self.body_tags if t not in self.tags))

    @property
    def created_day(self) -> str | None:
        """The day of ``created`` as written (in its own offset): what the daily cap counts. The
        first ten characters of a well-formed stamp, unchecked against the calendar (a 30 February
        counts on that day, never today's)."""
        created = self.created
        if created and _DAY.match(created):  # the usual ISO stamp: no parse (counted at every start)
            return created[:10]
        ts = parse_time(created)
        return ts.date().isoformat() if ts else None

    @staticmethod
    def from_note(note: Note, mtime_ns: int, size: int) -> Entry:
        src_id = note.source.get("id")
        src_url = note.source.get("url")
        meta = note.text.meta if note.text is not None else {}
        refs = text_refs(note.body, meta, persons=note.persons)
        return Entry(
            path=note.path,
            id=note.id,
            title=note.title,
            kind=_shared(note.kind),
            status=_shared(note.status),
            project=_shared(note.project),
            tags=note.tags,
            created=note.created,
            updated=note.created if note.updated == note.created else note.updated,
            fingerprint=note.fingerprint,
            content_hash=note.content_hash,
            source_id=str(src_id) if src_id is not None else None,
            source_url=str(src_url) if src_url is not None else None,
            always_load=note.always_load,
            links=typed_links(note.text.meta) if note.text is not None else (),
            mtime_ns=mtime_ns,
            size=size,
            importance=note.importance,
            is_cluster=note.is_cluster,
            is_protected=note.is_protected,
            is_global=note.is_global,
            surface_after=note.surface_after,
            url_links=note.url_links,
            source_transport=_shared(_text_or_none(note.source.get("transport"))),
            source_trust=_shared(_text_or_none(note.source.get("trust"))),
            link_ids=tuple(recorded_targets(note.text.meta).items()) if note.text is not None else (),
            text_links=refs.links,
            body_tags=refs.tags,
            aliases=aliases_of(meta),
        )


#: Entry's fields in declaration order: the cache stores one column of values per field.
ENTRY_FIELDS = tuple(Entry.__annotations__)


@overload
def _shared(value: str) -> str: ...
@overload
def _shared(value: str | None) -> str | None: ...
def _shared(value: str | None) -> str | None:
    """One string object for a value many entries hold (interned: a handful of distinct values)."""
    return None if value is None else sys.intern(value)


def _text_or_none(value: object) -> str | None:
    return str(value) if value is not None and not isinstance(value, dict | list) else None
