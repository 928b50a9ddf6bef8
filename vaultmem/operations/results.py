"""What the operations hand out: thoughts, and the answer of every graph action.

A thought is a memory note as the graph tools see it: ``content`` is its body, ``project`` its
project's name, ``status`` its status with ``unfiled`` (a note awaiting review) called ``draft``.
An :class:`Answer` holds :data:`Payload` values: JSON values whose leaves may be thoughts; the MCP
layer shapes every thought (compact, fields, url links) at the very end, so one rule shapes every
thought of an answer, however deeply nested.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from vaultmem.errors import InvalidInput
from vaultmem.notes.model import DRAFT_STATUS, STATUSES
from vaultmem.vault.catalog import IDEM_TAG_PREFIX
from vaultmem.vault.entry import Entry

#: A value an answer carries: JSON, with thoughts (alone or with extra columns) as leaves.
Payload: TypeAlias = (
    "bool | int | float | str | Thought | WithColumns | Sequence[Payload] | Mapping[str, Payload] | None"
)
#: One row of an answer, built by an operation.
Row: TypeAlias = dict[str, Payload]
#: An argument as a caller sent it over the wire (JSON), before it is checked.
Json: TypeAlias = "bool | int | float | str | Sequence[Json] | Mapping[str, Json] | None"

#: Statuses the graph tools accept as a filter, and the vault statuses each one means.
STATUS_FILTERS: dict[str, frozenset[str]] = {
    "draft": frozenset({DRAFT_STATUS}),
    "active": frozenset({"active"}),
    "archived": frozenset({"archived", "superseded", "expired"}),
    # Everything but a soft delete: a forgotten memory stays out of the graph tools.
    "all": frozenset(STATUSES - {"deleted"}),
}
#: Statuses a write may set (archiving has its own, token-gated path: memory_supersede).
WRITABLE_STATUSES = {"draft": DRAFT_STATUS, "active": "active"}


def graph_status(vault_status: str) -> str:
    """The status a graph tool reports: ``unfiled`` is ``draft``; the others as stored."""
    return "draft" if vault_status == DRAFT_STATUS else vault_status


def status_filter(status: object, default: str) -> frozenset[str]:
    value = default if status is None else status
    if not isinstance(value, str) or value not in STATUS_FILTERS:
        raise InvalidInput(f"status {value!r} is not one of {', '.join(STATUS_FILTERS)}")
    return STATUS_FILTERS[value]


def writable_status(status: object) -> str | None:
    if status is None:
        return None
    if status == "archived":
        raise InvalidInput(
            "memory_store does not archive: archiving is destructive and has its own path, "
            "memory_supersede action=archive (preview it, then call it again with confirm: true and "
            "the returned preview_token)"
        )
    if not isinstance(status, str) or status not in WRITABLE_STATUSES:
        raise InvalidInput(
            f"status {status!r} cannot be written here; use one of {', '.join(WRITABLE_STATUSES)}"
        )
    return WRITABLE_STATUSES[status]


def content_of(body: str) -> str:
    """A note body as thought content (the blank lines around it are file layout, not content)."""
    return body.strip("\r\n")


def visible_tags(tags: Iterable[str]) -> list[str]:
    """Tags as shown to a caller: the hashed idempotency tags are internal."""
    return [str(t) for t in tags if not str(t).startswith(IDEM_TAG_PREFIX)]


@dataclass(frozen=True)
class Thought:
    """One thought, every column; shaped for output by :func:`shape`."""

    id: str
    content: str
    status: str
    tags: tuple[str, ...]
    project: str | None
    title: str
    kind: str
    importance: float | None
    is_cluster: bool
    is_protected: bool
    is_global: bool
    surface_after: str | None
    created_at: str | None
    updated_at: str | None
    slug: str
    path: str
    url_links: tuple[tuple[str, str, str], ...] = ()
    #: Provenance as the note records it (``source`` in its frontmatter), None when it records none.
    source: tuple[str | None, str | None, str | None, str | None] | None = None

    @staticmethod
    def of(entry: Entry, note_id: str, body: str) -> Thought:
        return Thought(
            id=note_id,
            content=content_of(body),
            status=graph_status(entry.status),
            tags=tuple(visible_tags(entry.all_tags)),  # frontmatter tags, then body #tags
            project=entry.project,
            title=entry.title,
            kind=entry.kind,
            importance=entry.importance,
            is_cluster=entry.is_cluster,
            is_protected=entry.is_protected,
            is_global=entry.is_global,
            surface_after=entry.surface_after,
            created_at=entry.created,
            updated_at=entry.updated,
            slug=entry.slug,
            path=entry.path,
            url_links=entry.url_links,
            source=_source_of(entry),
        )

    def columns(self) -> dict[str, Payload]:
        """Every column, flags as booleans and tags as strings (output hygiene)."""
        return {
            "id": self.id,
            "content": self.content,
            "status": self.status,
            "tags": list(self.tags),
            "project": self.project,
            "title": self.title,
            "kind": self.kind,
            "importance": self.importance,
            "is_cluster": bool(self.is_cluster),
            "is_protected": bool(self.is_protected),
            "is_global": bool(self.is_global),
            "surface_after": self.surface_after,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "slug": self.slug,
            "path": self.path,
            "source": dict(zip(SOURCE_KEYS, self.source, strict=True)) if self.source else None,
        }


THOUGHT_COLUMNS = (
    "id", "content", "status", "tags", "project", "title", "kind", "importance", "is_cluster",
    "is_protected", "is_global", "surface_after", "created_at", "updated_at", "slug", "path", "source",
)  # fmt: skip
#: The keys of a thought's ``source`` column (design.md invariant 7: a reader can tell a fetched
#: page, ``external-fetch`` / ``untrusted``, from the person's own words).
SOURCE_KEYS = ("transport", "trust", "url", "id")


def _source_of(entry: Entry) -> tuple[str | None, str | None, str | None, str | None] | None:
    values = (entry.source_transport, entry.source_trust, entry.source_url, entry.source_id)
    return values if any(v is not None for v in values) else None


@dataclass(frozen=True)
class WithColumns:
    """A thought whose shaped form gets extra keys that are not thought columns (``upstream``...)."""

    thought: Thought
    extra: Mapping[str, Payload]


@dataclass
class Scope:
    """What ``cwd`` resolved to: ``payload`` is the answer's ``meta.scope``; ``project`` the name an
    action filters on or files into; ``given``: a cwd was passed."""

    payload: Mapping[str, Payload] | None = None
    project: str | None = None
    warnings: list[str] = field(default_factory=list)
    given: bool = False


@dataclass
class Answer:
    """The payload of one graph action.

    Exactly one of ``item`` / ``items`` is meaningful, per ``collection``. ``counts`` holds the
    action's own counters plus ``total`` / ``returned`` / ``filtered_out``; ``scope`` is what the
    call's ``cwd`` named. The MCP layer wraps it in the response envelope.
    """

    action: str
    collection: bool
    item: Payload = None
    items: Sequence[Payload] = ()
    counts: dict[str, int] = field(default_factory=dict)
    degraded: bool = False
    warnings: list[str] = field(default_factory=list)
    reason: str | None = None
    preview: dict[str, Payload] | None = None
    #: Collections that ride beside ``items`` (``memory_crystallize action=graph``: ``edges``).
    beside: dict[str, Payload] = field(default_factory=dict)
    scope: Scope = field(default_factory=Scope)

    def with_scope(self, scope: Scope) -> Answer:
        """This answer with the call's scope (unless the action set a scope of its own)."""
        if self.scope == Scope():
            self.scope = scope
        return self

    @staticmethod
    def one(action: str, item: Payload, **counts: int) -> Answer:
        found = 0 if item is None else 1
        return Answer(
            action, False, item=item, counts={**counts, "total": found, "returned": found, "filtered_out": 0}
        )

    @staticmethod
    def many(
        action: str,
        items: Sequence[Payload],
        *,
        total: int | None = None,
        filtered_out: int = 0,
        **counts: int,
    ) -> Answer:
        return Answer(
            action,
            True,
            items=items,
            counts={
                **counts,
                "total": len(items) if total is None else total,
                "returned": len(items),
                "filtered_out": filtered_out,
            },
        )
