"""``memory_append``, ``memory_capture``, ``memory_forget``: the filing contract's write path.

Input checks, routing, idempotency keys, the exact-fingerprint reinforce, source updates in place,
the idea ledger and the daily cap decide what to write; the note itself is made by the one create
path (:func:`vaultmem.operations.thoughts.plan_new_note`) and written by the vault's writer.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal, NotRequired

from typing_extensions import TypedDict

from vaultmem.errors import InvalidInput, NotFound, VaultmemError
from vaultmem.filing import rules
from vaultmem.filing.contract import Contract
from vaultmem.filing.projects import validate_project
from vaultmem.notes import frontmatter as fm
from vaultmem.notes.ids import canonical_id, derived_id, is_full_id
from vaultmem.notes.model import Note, fingerprint, iso
from vaultmem.notes.slugs import make_slug
from vaultmem.operations.context import Context
from vaultmem.operations.thoughts import NewNote, plan_new_note
from vaultmem.vault.entry import Entry
from vaultmem.vault.plan import Plan, WriteKey

log = logging.getLogger(__name__)


class AppendResult(TypedDict):
    id: str
    slug: str
    deduplicated: bool
    #: In the secret guard's ``redact`` mode, when it replaced something: ``[{kind, field, line, path}]``.
    redacted: NotRequired[list[dict[str, object]]]


class CaptureResult(TypedDict):
    success: bool
    id: NotRequired[str]
    slug: NotRequired[str]
    deduplicated: NotRequired[bool]
    updated: NotRequired[bool]
    appended: NotRequired[bool]
    error: NotRequired[str]
    redacted: NotRequired[list[dict[str, object]]]


class ForgetResult(TypedDict):
    id: str
    status: Literal["deleted"]
    already_deleted: bool


class Memories:
    """The memory tools' writes."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        #: The word sets of idea cards' bodies, by path, with the content hash they were read at: an
        #: idea capture compares its text with every card's (read from disk before: ~2 s at 2,222
        #: cards, inside the write lock; docs/benchmarks.md). Read and filled in the writer's lock.
        self._card_words: dict[str, tuple[str, frozenset[str]]] = {}

    # -- reads ------------------------------------------------------------------------------
    def require(self, note_id: str) -> Entry:
        """The note a full id names (any status), or NotFound saying how to find one."""
        if not isinstance(note_id, str) or not is_full_id(note_id):
            raise NotFound(f"{note_id!r} is not a memory id; ids look like 0192f0c1-8d2e-7b3a-9c4d-…")
        catalog = self.ctx.catalog
        entry = catalog.entry_for_id(note_id)
        if entry is not None and not (self.ctx.layout.root / entry.path).is_file():
            # Removed by hand (Obsidian, a sync client) since the catalog last looked.
            catalog.refresh(entry.path)
            entry = catalog.entry_for_id(note_id)
        if entry is None:
            raise NotFound(f"no memory has id {note_id}; find the right id with memory_search")
        return entry

    def note(self, note_id: str) -> Note:
        """The note with this id (any status), as its file is now."""
        return self.ctx.store.read(self.require(note_id).path)

    # -- memory_append ----------------------------------------------------------------------
    def append(
        self,
        content: str,
        kind: str,
        project: str | None = None,
        title: str | None = None,
        tags: Sequence[str] | None = None,
        idempotency_key: str | None = None,
        *,
        wait_commit: bool = False,
    ) -> AppendResult:
        """Write a reviewed memory; idempotent on ``idempotency_key``."""
        ctx = self.ctx
        contract = ctx.contract()
        content = rules.check_content(content, contract)
        kind = rules.check_kind(kind, contract)
        project = validate_project(project)
        clean_title = rules.check_title(title, contract)
        tag_list = rules.check_tags(tags, contract)
        idem = rules.idempotency_tag(idempotency_key) if idempotency_key is not None else None
        keys = [WriteKey("fingerprint", fingerprint(content))]
        keys += [WriteKey("idempotency", idem)] if idem else []

        def decide() -> Plan[AppendResult | str]:
            if idem is not None:
                existing = ctx.catalog.by_idempotency_tag(idem)
                if existing is not None:
                    found = existing.id or derived_id(existing.path)
                    return Plan([], AppendResult(id=found, slug=existing.slug, deduplicated=True))
            twin = self._reinforce_target(content, statuses=("active",))
            if twin is not None:
                return self._reinforce(twin, "memory_append", extra_tags=[idem] if idem else [])
            now = ctx.now()
            rules.check_cap(ctx.catalog.written_since(now.date()), contract, now.date(), "memory_append")
            final_title = clean_title or rules.title_from_content(content)
            new = NewNote(
                directory=ctx.projects.space_for(contract, project) if project else contract.class_dir(kind),
                title=final_title,
                content=content,
                fields={
                    "kind": kind,
                    "status": "active",
                    "project": project,
                    "tags": tag_list + ([idem] if idem else []),
                    "filing": {"confidence": contract.append_confidence, "tool": "memory_append"},
                },
                action="add",
            )
            draft = ctx.draft()
            plan_new_note(ctx, draft, new, now)
            return draft.plan("add")

        written = ctx.writer.run(
            decide, tool="memory_append", keys=keys, single=True, wait_commit=wait_commit
        )
        if not isinstance(written.result, str):
            return written.result
        note = written.notes[0]
        return AppendResult(id=_id_of(note), slug=note.slug, deduplicated=written.result == "reinforce")

    # -- memory_capture ---------------------------------------------------------------------
    def capture(
        self,
        content: str,
        kind: str | None = None,
        title: str | None = None,
        tags: Sequence[str] | None = None,
        instructions: str | None = None,
        source_url: str | None = None,
        source_id: str | None = None,
        project: str | None = None,
        cwd: str | None = None,
        *,
        wait_commit: bool = False,
    ) -> CaptureResult:
        """Record an unreviewed candidate. Never raises: ``{success: false, error}`` on failure."""
        try:
            return self._capture(
                content, kind, title, tags, instructions, source_url, source_id, project, cwd,
                wait_commit=wait_commit,
            )  # fmt: skip
        except VaultmemError as exc:
            return CaptureResult(success=False, error=str(exc))
        except Exception as exc:  # a capture is never silently dropped, nor does it raise
            log.exception("capture failed")
            return CaptureResult(success=False, error=f"capture failed: {type(exc).__name__}: {exc}")

    def _capture(
        self,
        content: str,
        kind: str | None,
        title: str | None,
        tags: Sequence[str] | None,
        instructions: str | None,
        source_url: str | None,
        source_id: str | None,
        project: str | None,
        cwd: str | None,
        *,
        wait_commit: bool,
    ) -> CaptureResult:
        ctx = self.ctx
        contract = ctx.contract()
        content = rules.check_content(content, contract)
        kind = rules.check_kind(kind or contract.capture_default_kind, contract)
        clean_title = rules.check_title(title, contract)
        tag_list = rules.check_tags(tags, contract)
        instructions = rules.check_text_arg("instructions", instructions, rules.MAX_INSTRUCTIONS_CHARS)
        source_url = rules.check_text_arg("source_url", source_url, rules.MAX_SOURCE_CHARS)
        source_id = rules.check_text_arg("source_id", source_id, rules.MAX_SOURCE_CHARS)
        project = validate_project(project)
        if project is None and cwd and kind not in contract.unscoped_kinds:
            found = ctx.projects.for_cwd(contract, cwd)
            project = found.name if found else None
        transport = "external-fetch" if source_url else "operator-direct"
        source: dict[str, str] = {"transport": transport, "trust": contract.trust_for(transport)}
        if source_url:
            source["url"] = source_url
        if source_id:
            source["id"] = source_id
        status = "unfiled" if contract.capture_confidence < contract.low_confidence else "active"
        fp = fingerprint(content)
        keys = [WriteKey("fingerprint", fp)]
        keys += [WriteKey("ideas")] if kind == "idea" else []
        keys += [WriteKey("title", clean_title.casefold())] if clean_title else []

        def decide() -> Plan[str]:
            # 1. The same source already home: update that card in place.
            if (source_id or source_url) and clean_title:
                home = self._source_home(clean_title, source_id, source_url)
                if home is not None:
                    if home.fingerprint == fp:
                        return self._reinforce(home, "memory_capture")
                    return self._update_in_place(home, content)
            # 2. The corpus check: an exact live twin reinforces, unless this capture brings a
            #    source_url or instructions the twin lacks.
            twin = self._reinforce_target(content, statuses=("active", "unfiled"))
            if twin is not None:
                twin_note = ctx.store.read(twin.path)
                lacks = (source_url and not twin_note.source.get("url")) or (
                    instructions and not twin_note.instructions
                )
                if not lacks:
                    return self._reinforce(twin, "memory_capture")
            # 3. An idea that already has a card: append to the card.
            if kind == "idea":
                card = self._idea_card(contract, clean_title, content)
                if card is not None:
                    return self._idea_append(card, content, source)
            now = ctx.now()
            rules.check_cap(ctx.catalog.written_since(now.date()), contract, now.date(), "memory_capture")
            new = NewNote(
                directory=contract.class_dir(kind),
                title=clean_title or f"Capture {iso(now)}",
                content=content,
                fields={
                    "kind": kind,
                    "status": status,
                    "project": project,
                    "tags": tag_list,
                    "source": source,
                    "filing": {"confidence": contract.capture_confidence, "tool": "memory_capture"},
                    "instructions": instructions,
                },
                action="add",
                slug_base=make_slug(clean_title)
                if clean_title
                else "capture-" + now.strftime("%Y%m%dt%H%M%Sz"),
                # An untitled capture's title is a timestamp: grow a taken name from the text only.
                grow_from=(clean_title, content) if clean_title else (content,),
            )
            draft = ctx.draft()
            plan_new_note(ctx, draft, new, now)
            return draft.plan("add")

        written = ctx.writer.run(
            decide, tool="memory_capture", keys=keys, single=True, wait_commit=wait_commit
        )
        note, action = written.notes[0], written.result
        result = CaptureResult(
            success=True, id=_id_of(note), slug=note.slug, deduplicated=action == "reinforce"
        )
        if action == "update in place":
            result["updated"] = True
        if action == "append to idea card":
            result["appended"] = True
        return result

    # -- memory_forget ----------------------------------------------------------------------
    def forget(self, note_id: str, reason: str | None = None, *, wait_commit: bool = False) -> ForgetResult:
        """Soft-delete a memory: status deleted, ``deleted_at`` stamped, the file kept."""
        ctx = self.ctx
        reason = rules.check_text_arg("reason", reason, rules.MAX_INSTRUCTIONS_CHARS)

        def decide() -> Plan[bool]:
            entry = self.require(note_id)
            note = ctx.store.read(entry.path)  # the file, not the catalog, decides
            if note.status == "deleted":
                return Plan([], True)
            assert note.text is not None
            changes: dict[str, object] = {"status": "deleted", "deleted_at": iso(ctx.now())}
            if reason:
                changes["delete_reason"] = reason
            # A person's note without an id keeps having none (its id stays the one derived from
            # its path); only the owned keys change, its body and other keys are kept byte for byte.
            draft = ctx.draft()
            draft.put(note.path, fm.set_fields(note.text, changes), "delete")
            return draft.plan(False)

        written = ctx.writer.run(decide, tool="memory_forget", single=True, wait_commit=wait_commit)
        return ForgetResult(id=canonical_id(note_id), status="deleted", already_deleted=written.result)

    # -- planning each kind of write ----------------------------------------------------------
    def _ours(self, entry: Entry) -> bool:
        """A note vaultmem may change: in its own folder, not a person's note beside it."""
        return self.ctx.layout.writable(entry.path)

    def _reinforce_target(self, content: str, statuses: Sequence[str]) -> Entry | None:
        for entry in self.ctx.catalog.with_fingerprint(fingerprint(content)):
            if entry.status in statuses and not entry.always_load and entry.id and self._ours(entry):
                return entry
        return None

    def _reinforce(self, entry: Entry, tool: str, extra_tags: Sequence[str] = ()) -> Plan[str]:
        note = self.ctx.store.read(entry.path)
        assert note.text is not None
        changes: dict[str, object] = {"occurrences": note.occurrences + 1, "updated": iso(self.ctx.now())}
        new_tags = [t for t in extra_tags if t and t not in note.tags]
        if new_tags:
            changes["tags"] = [*note.tags, *new_tags]
        return self._one(note.path, fm.set_fields(note.text, changes), "reinforce")

    def _source_home(self, title: str, source_id: str | None, source_url: str | None) -> Entry | None:
        wanted = title.casefold()
        for entry in self.ctx.catalog.from_source(source_id, source_url):
            live = entry.status in ("active", "unfiled")
            if live and entry.title.casefold() == wanted and self._ours(entry):
                return entry
        return None

    def _update_in_place(self, entry: Entry, content: str) -> Plan[str]:
        note = self.ctx.store.read(entry.path)
        assert note.text is not None
        body = content if content.endswith("\n") else content + "\n"
        text = fm.set_fields(fm.with_body(note.text, body), {"updated": iso(self.ctx.now())})
        return self._one(note.path, text, "update in place")

    def _idea_card(self, contract: Contract, title: str | None, content: str) -> Entry | None:
        cards = [
            e
            for e in self.ctx.catalog.in_folder(contract.class_dir("idea"))
            if e.status in ("active", "unfiled")
        ]
        slug = make_slug(title) if title else None
        wanted = rules.word_set(title) if title else frozenset()
        for entry in cards:
            if slug and entry.slug == slug:
                return entry
            if wanted and rules.set_overlap(wanted, rules.title_words(entry.title)) >= contract.idea_overlap:
                return entry
        words = rules.word_set(content)
        kept = {e.path for e in cards}
        for path in [p for p in self._card_words if p not in kept]:  # gone, or no longer a live card
            del self._card_words[path]
        for entry in cards:
            if rules.set_overlap(words, self._body_words(entry)) >= contract.idea_overlap:
                return entry
        return None

    def _body_words(self, entry: Entry) -> frozenset[str]:
        known = self._card_words.get(entry.path)
        if known is not None and known[0] == entry.content_hash:
            return known[1]
        words = rules.word_set(self.ctx.store.read(entry.path).body)
        self._card_words[entry.path] = (entry.content_hash, words)
        return words

    def _idea_append(self, entry: Entry, content: str, source: dict[str, str]) -> Plan[str]:
        note = self.ctx.store.read(entry.path)
        assert note.text is not None
        nl = note.text.newline
        now = self.ctx.now()
        origin = source.get("url") or source.get("transport", "operator-direct")
        body = note.body
        if body and not body.endswith(("\n", "\r")):
            body += nl
        added = content.strip().replace("\r\n", "\n").replace("\n", nl)
        addition = (
            f"{nl}## Added by capture {now.date().isoformat()}{nl}{nl}{added}{nl}{nl}Source: {origin}{nl}"
        )
        text = fm.set_fields(fm.with_body(note.text, body + addition), {"updated": iso(now)})
        return self._one(note.path, text, "append to idea card")

    def _one(self, rel: str, text: fm.NoteText, action: str) -> Plan[str]:
        draft = self.ctx.draft()
        draft.put(rel, text, action)
        return draft.plan(action)


def _id_of(note: Note) -> str:
    return note.id or derived_id(note.path)


__all__ = ["AppendResult", "CaptureResult", "ForgetResult", "InvalidInput", "Memories"]
