"""Creating notes, and ``memory_store``'s thought actions: create, bulk_create, update.

:func:`plan_new_note` is the one create path: ``memory_append`` and ``memory_capture``, ``create``
and ``bulk_create``, reflect's decisions and pending items, retention's summaries and the clusters
of ``memory_crystallize`` all make their notes with it (a unique file name, the owned keys in their
canonical order, the daily cap checked by the caller). Every write goes through the vault's writer
(one git commit per action, the index told before the call returns).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from vaultmem import caller
from vaultmem.caller import INTERNAL
from vaultmem.errors import CapReached, InvalidInput, VaultmemError
from vaultmem.filing import rules
from vaultmem.filing.contract import Contract
from vaultmem.filing.secrets import without_secrets
from vaultmem.notes import frontmatter as fm
from vaultmem.notes.ids import uuid7
from vaultmem.notes.links import add_link
from vaultmem.notes.model import iso, new_note_text, parse_time
from vaultmem.notes.slugs import make_slug, meaningful_words, resolve_collision
from vaultmem.operations.context import Context
from vaultmem.operations.results import Answer, Json, Row, Thought, writable_status
from vaultmem.vault.catalog import IDEM_TAG_PREFIX
from vaultmem.vault.entry import Entry
from vaultmem.vault.plan import Draft, Plan, WriteKey

TOOL = "memory_store"
MAX_BULK = 10_000
DEFAULT_KIND = "reference"
DEFAULT_IMPORTANCE = 0.5
TAGS_MODES = ("replace", "add", "remove")
MAX_URL_LINKS = 50


@dataclass(frozen=True)
class NewNote:
    """A note to create: its folder, title and text, and the owned keys it starts with."""

    directory: str
    title: str
    content: str
    #: Owned frontmatter keys besides the id, title, times, importance and occurrences.
    fields: Mapping[str, object]
    #: What the commit calls the write (``add`` for the memory tools, ``create`` for the others).
    action: str = "create"
    #: The file name wanted (default: the title's slug); a taken one grows by ``grow_from``'s words.
    slug_base: str | None = None
    grow_from: tuple[str, ...] | None = None


def session_tag() -> str | None:
    """The writing session of the call being served, as stored in a note's ``source.session``: the
    first 12 hex digits of the sha256 of the MCP session id (the id itself is never written); None
    outside an MCP session (the CLI, hand edits, the daemon's own work)."""
    session = caller.current().session
    return hashlib.sha256(session.encode("utf-8")).hexdigest()[:12] if session else None


def plan_new_note(ctx: Context, draft: Draft, new: NewNote, now: dt.datetime) -> str:
    """Put a new note into ``draft``; return its vault path (the one create path).

    The file name is made from the title and text with any secret in them replaced by its marker
    (the writer's secret guard then refuses or redacts the note itself), so no secret can reach
    a file name, a commit subject or the index through one.
    """
    note_id = uuid7()
    grow = new.grow_from if new.grow_from is not None else (new.title, new.content)
    slug = resolve_collision(
        new.slug_base or make_slug(without_secrets(new.title)),
        lambda s: ctx.writer.name_taken(new.directory, s) or draft.reserved_name(s),
        _words_of(grow),
        hash_source=note_id,
    )
    stamp = iso(now)
    who = caller.current()
    fields: dict[str, object] = {
        "id": note_id,
        "title": new.title,
        **new.fields,
        "created": stamp,
        "updated": stamp,
        "importance": DEFAULT_IMPORTANCE,
        "occurrences": 1,
    }
    if not fields.get("tags"):
        fields["tags"] = []
    if who is not INTERNAL:  # the note's source names the agent (or the CLI's user) who wrote it
        fields["source"] = {**_mapping(fields.get("source")), "agent": who.agent}
    session = session_tag()
    if session is not None:  # the episode this note belongs to (the ranking's context step)
        fields["source"] = {**_mapping(fields.get("source")), "session": session}
    rel = f"{new.directory}/{slug}.md"
    draft.put(rel, new_note_text(fields, new.content), new.action, create=True)
    return rel


@dataclass(frozen=True)
class NewThought:
    """The arguments of one thought to create, as the caller sent them (``create``, a row of
    ``bulk_create``); :func:`check_thought` checks them."""

    content: Json
    tags: Json = None
    status: Json = None
    is_protected: Json = None
    is_global: Json = None
    is_cluster: Json = None
    parent_id: Json = None
    url_links: Json = None
    kind: Json = None
    title: Json = None


@dataclass(frozen=True)
class CheckedThought:
    """A thought to create, its arguments checked."""

    content: str
    kind: str
    title: str
    tags: list[str]
    status: str
    is_protected: bool | None
    is_global: bool | None
    is_cluster: bool | None
    url_links: list[dict[str, str]] | None
    parent: Entry | None


def check_thought(ctx: Context, spec: NewThought, contract: Contract) -> CheckedThought:
    content = rules.check_content(spec.content, contract)
    kind = rules.check_kind(spec.kind if spec.kind is not None else DEFAULT_KIND, contract)
    title = rules.check_title(
        spec.title if isinstance(spec.title, str) or spec.title is None else str(spec.title), contract
    )
    parent = ctx.lookup.require(_text(spec.parent_id), "parent_id") if spec.parent_id is not None else None
    return CheckedThought(
        content=content,
        kind=kind,
        title=title or rules.title_from_content(content),
        tags=rules.check_tags(spec.tags, contract),
        status=writable_status(spec.status) or "active",
        is_protected=_flag("is_protected", spec.is_protected),
        is_global=_flag("is_global", spec.is_global),
        is_cluster=_flag("is_cluster", spec.is_cluster),
        url_links=_check_url_links(spec.url_links),
        parent=parent,
    )


def plan_thought(
    ctx: Context, draft: Draft, row: CheckedThought, project: str | None, now: dt.datetime, tool: str = TOOL
) -> str:
    """Put a new thought into ``draft`` (with its parent link); return its vault path."""
    contract = ctx.contract()
    fields: dict[str, object] = {
        "kind": row.kind,
        "status": row.status,
        "project": project,
        "tags": row.tags,
        "filing": {"confidence": contract.append_confidence, "tool": tool},
    }
    for flag in ("is_cluster", "is_protected", "is_global"):
        if getattr(row, flag):
            fields[flag] = True
    if row.url_links:
        fields["url_links"] = row.url_links
    directory = ctx.projects.space_for(contract, project) if project else contract.class_dir(row.kind)
    rel = plan_new_note(ctx, draft, NewNote(directory, row.title, row.content, fields), now)
    if row.parent is not None:
        text = add_link(draft.text_of(rel), "parent", ctx.lookup.link_to(row.parent), iso(now))
        draft.put(rel, text, "create")
    return rel


class Thoughts:
    """``memory_store``'s create, bulk_create and update."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def create(self, spec: NewThought, project: str | None) -> Thought:
        ctx = self.ctx
        contract = ctx.contract()
        row = check_thought(ctx, spec, contract)

        def decide() -> Plan[str]:
            draft = ctx.draft()
            now = ctx.now()
            rules.check_cap(ctx.catalog.written_since(now.date()), contract, now.date(), TOOL)
            return draft.plan(plan_thought(ctx, draft, row, project, now))

        written = ctx.writer.run(decide, tool=TOOL, summary="create")
        return self._thought(written.result, written.note_at(written.result).body)

    def bulk_create(
        self, rows: Sequence[Json] | None, project: str | None, idempotency_key: str | None = None
    ) -> Answer:
        """Create the rows in one commit, a result per row in input order.

        With ``idempotency_key`` a retry of the batch (the same key, the rows in the same order)
        writes nothing twice: each row is stored with a hashed tag of the key and its position,
        and a row already stored under it is answered with its thought (``replayed: true``)
        instead of being written again; rows the first call did not write are written now.
        """
        ctx = self.ctx
        if not isinstance(rows, list) or not 1 <= len(rows) <= MAX_BULK:
            raise InvalidInput(f"thoughts must be a list of 1 to {MAX_BULK} thoughts; nothing was written")
        batch = rules.idempotency_tag(idempotency_key) if idempotency_key is not None else None
        row_tags = [rules.idempotency_tag(f"{batch}#{i}") for i in range(len(rows))] if batch else []
        contract = ctx.contract()
        fields = set(NewThought.__dataclass_fields__)
        checked: list[CheckedThought | str] = []
        for row in rows:
            try:
                if not isinstance(row, dict) or "content" not in row:
                    raise InvalidInput("each thought is an object with at least `content` (its text)")
                unknown = sorted(set(row) - fields)
                spec = NewThought(**{k: v for k, v in row.items() if k in fields})
                if unknown:
                    raise InvalidInput(f"unknown field(s) {', '.join(unknown)} in a thought")
                checked.append(check_thought(ctx, spec, contract))
            except VaultmemError as exc:
                checked.append(str(exc))

        def decide() -> Plan[tuple[list[tuple[bool, str]], set[int]]]:
            draft = ctx.draft()
            now = ctx.now()
            written = ctx.catalog.written_since(now.date())
            out: list[tuple[bool, str]] = []
            replayed: set[int] = set()
            for i, row in enumerate(checked):
                if isinstance(row, str):
                    out.append((False, row))
                    continue
                earlier = ctx.catalog.by_idempotency_tag(row_tags[i]) if row_tags else None
                if earlier is not None:  # written by an earlier call with this key
                    out.append((True, earlier.path))
                    replayed.add(i)
                    continue
                try:  # past the daily cap, the remaining rows fail one by one with the cap's message
                    rules.check_cap(written, contract, now.date(), TOOL)
                except CapReached as exc:
                    out.append((False, str(exc)))
                    continue
                if row_tags:
                    row = dataclasses.replace(row, tags=[*row.tags, row_tags[i]])
                out.append((True, plan_thought(ctx, draft, row, project, now)))
                written += 1
            return draft.plan((out, replayed))

        done = ctx.writer.run(
            decide,
            tool=TOOL,
            summary=f"bulk_create {len(rows)} thoughts",
            keys=[WriteKey("idempotency", batch)] if batch else (),  # a retry racing the first call waits
        )
        planned, replayed = done.result
        by_path = {n.path: n for n in done.notes}
        items: list[Row] = []
        for i, (ok, rel) in enumerate(planned):
            if not ok:
                items.append({"index": i, "status": "failed", "error": rel})
                continue
            written_now = by_path.get(rel)
            item: Row = {
                "index": i,
                "status": "created",
                "thought": self._thought(rel, written_now.body if written_now else None),
            }
            if i in replayed:
                item["replayed"] = True
            items.append(item)
        created = sum(1 for it in items if it["status"] == "created")
        counts = {"created": created, "failed": len(items) - created}
        if batch:
            counts["replayed"] = len(replayed)
        return Answer.many("bulk_create", items, **counts)

    def update(
        self,
        thought_id: str | None,
        *,
        content: str | None = None,
        tags: Sequence[str] | None = None,
        tags_mode: str | None = None,
        status: str | None = None,
        project: str | None = None,
        set_project: bool = False,
        is_protected: bool | None = None,
        is_global: bool | None = None,
        surface_after: str | None = None,
    ) -> Thought:
        ctx = self.ctx
        contract = ctx.contract()
        new_status = writable_status(status)
        new_content = rules.check_content(content, contract) if content is not None else None
        mode = tags_mode or "replace"
        if mode not in TAGS_MODES:
            raise InvalidInput(f"tags_mode must be one of {', '.join(TAGS_MODES)}")
        new_tags = rules.check_tags(tags, contract) if tags is not None else None
        flags = {
            "is_protected": _flag("is_protected", is_protected),
            "is_global": _flag("is_global", is_global),
        }
        if surface_after is not None and (
            not isinstance(surface_after, str) or parse_time(surface_after) is None
        ):
            raise InvalidInput(
                "surface_after must be an ISO-8601 date or date-time, like 2026-11-30T05:00:00Z"
            )

        def decide() -> Plan[str]:
            entry = ctx.lookup.require(thought_id)
            note = ctx.store.read(entry.path)
            assert note.text is not None
            text = note.text
            if new_content is not None:
                text = fm.with_body(text, new_content if new_content.endswith("\n") else new_content + "\n")
            changes: dict[str, object] = {"updated": iso(ctx.now())}
            if new_status is not None:
                changes["status"] = new_status
            if new_tags is not None:
                hidden = [t for t in note.tags if t.startswith(IDEM_TAG_PREFIX)]
                current = [t for t in note.tags if t not in hidden]
                if mode == "replace":
                    final = new_tags
                elif mode == "add":
                    final = [*current, *(t for t in new_tags if t not in current)]
                else:
                    final = [t for t in current if t not in new_tags]
                changes["tags"] = [*final, *hidden]
            if set_project:
                changes["project"] = project if project else fm.DELETE
            for key, value in flags.items():
                if value is not None:
                    changes[key] = True if value else fm.DELETE
            if surface_after is not None:
                changes["surface_after"] = surface_after
            changes = {k: v for k, v in changes.items() if not (v is fm.DELETE and k not in text.meta)}
            draft = ctx.draft()
            draft.put(entry.path, fm.set_fields(text, changes), "update")
            return draft.plan(entry.path)

        written = ctx.writer.run(decide, tool=TOOL, summary="update")
        return self._thought(written.result, written.note_at(written.result).body)

    def _thought(self, rel: str, body: str | None) -> Thought:
        entry = self.ctx.catalog.by_path(rel)
        assert entry is not None
        return self.ctx.lookup.thought(entry, body)


def _words_of(texts: Sequence[str]) -> Iterator[str]:
    """The words a taken name grows by, secrets left out; read only when the name is taken."""
    yield from meaningful_words(*map(without_secrets, texts))


def _mapping(value: object) -> dict[str, object]:
    return dict(value) if isinstance(value, dict) else {}


def _check_url_links(value: Json) -> list[dict[str, str]] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > MAX_URL_LINKS:
        raise InvalidInput(f"url_links must be a list of at most {MAX_URL_LINKS} {{text, url}} objects")
    out: list[dict[str, str]] = []
    for row in value:
        text, url = (row.get("text"), row.get("url")) if isinstance(row, dict) else (None, None)
        if not isinstance(text, str) or not isinstance(url, str):
            raise InvalidInput("each url_links entry is {text, url} (label optional), all text")
        text, url = text.strip(), url.strip()
        if not text or not url or len(url) > rules.MAX_SOURCE_CHARS:
            raise InvalidInput("each url_links entry needs a non-empty text and url")
        entry = {"text": text, "url": url}
        label = row.get("label") if isinstance(row, dict) else None
        if isinstance(label, str) and label.strip() and label.strip() != text:
            entry["label"] = label.strip()
        out.append(entry)
    return out


def _flag(name: str, value: Json) -> bool | None:
    if value is None:
        return None
    if not isinstance(value, bool):
        raise InvalidInput(f"{name} must be true or false")
    return value


def _text(value: Json) -> str | None:
    """A text argument as sent; anything else counts as missing (and is refused as such)."""
    return value if isinstance(value, str) else None
