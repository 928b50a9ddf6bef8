"""The vaultmem service: the one API the MCP tools, the HTTP server and the CLI call.

It owns the write path of the filing contract (append, capture, forget): input checks, routing,
idempotency keys, the exact-fingerprint reinforce, source updates in place, the idea ledger, the
daily cap, then an atomic write, the catalog, and a commit by the single git writer.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, Protocol

from vaultmem.config import Settings
from vaultmem.errors import InvalidInput, NotFound, VaultError, VaultmemError
from vaultmem.filing import rules
from vaultmem.filing.contract import Contract, load_contract
from vaultmem.filing.projects import ProjectRegistry, validate_project
from vaultmem.notes import frontmatter as fm
from vaultmem.notes.ids import canonical_id, is_full_id, uuid7
from vaultmem.notes.model import Note, fingerprint, iso, new_note_text, utc_now
from vaultmem.notes.slugs import make_slug, meaningful_words, resolve_collision
from vaultmem.vault.atomic import sweep_temp_files
from vaultmem.vault.catalog import Catalog, Entry
from vaultmem.vault.history import CommitWriter, GitRepo
from vaultmem.vault.layout import IGNORED_DIRS, VaultLayout
from vaultmem.vault.locks import WriteLock
from vaultmem.vault.store import NoteStore

log = logging.getLogger(__name__)
Clock = Callable[[], dt.datetime]
DEFAULT_IMPORTANCE = 0.5


class NoteListener(Protocol):
    """Told about every note the service writes (the search index listens)."""

    def note_written(self, note: Note) -> None: ...


class VaultService:
    """One vault, opened for reading and writing."""

    def __init__(
        self,
        settings: Settings,
        *,
        clock: Clock = utc_now,
        background_commits: bool = True,
    ) -> None:
        self.settings = settings
        self.layout = VaultLayout(settings.vault, settings.state_dir)
        if not self.layout.root.is_dir():
            raise VaultError(
                f"no vault at {self.layout.root}; create one with `vaultmem init {self.layout.root}`"
            )
        self.repo = GitRepo(self.layout.root, lock_timeout=settings.git_lock_timeout)
        if not self.repo.is_repo():
            raise VaultError(
                f"{self.layout.root} is not a git repository; run `vaultmem init {self.layout.root}` "
                "to make it a vault (existing notes are kept)"
            )
        self.clock = clock
        self.store = NoteStore(self.layout, durable=settings.durable)
        self.catalog = Catalog(self.layout)
        self.projects = ProjectRegistry(self.layout.root)
        self.lock = WriteLock(self.layout.state_dir / "write.lock", settings.write_lock_timeout)
        self.commits = CommitWriter(self.repo)
        self.listeners: list[NoteListener] = []
        self._contract: tuple[tuple[str, int, int], Contract] | None = None
        self._last_commit = threading.local()  # each thread waits for its own commit
        self._open(background_commits)

    # -- lifecycle --------------------------------------------------------------------------
    def _open(self, background_commits: bool) -> None:
        self.layout.state_dir.mkdir(parents=True, exist_ok=True)
        with self.lock:
            sweep_temp_files(self.layout.root, IGNORED_DIRS)
            recovered = self.repo.commit_all_pending(
                "vaultmem: record changes found at start\n\n"
                "Writes acknowledged before a crash, or edits made while vaultmem was stopped."
            )
            if recovered:
                log.info("committed %d change(s) found at start", len(recovered))
            self.catalog.scan()
        if background_commits:
            self.commits.start()

    def close(self) -> None:
        """Commit everything pending and save derived state."""
        self.commits.flush()
        self.commits.close()
        self.catalog.save_cache()

    def __enter__(self) -> VaultService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- contract ---------------------------------------------------------------------------
    def contract(self) -> Contract:
        """The vault's filing contract, re-read when its file changes."""
        vault_copy = self.layout.root / "filing.yaml"
        try:
            st = vault_copy.stat()
            stamp = (str(vault_copy), st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = ("shipped", 0, 0)
        if self._contract is None or self._contract[0] != stamp:
            self._contract = (stamp, load_contract(self.layout.root))
        return self._contract[1]

    # -- reads ------------------------------------------------------------------------------
    def get(self, note_id: str) -> Note:
        """The note with this id (any status), or NotFound."""
        entry = self._entry_for_id(note_id)
        return self.store.read(entry.path)

    def history(self, note_id: str) -> list[dict[str, str]]:
        """The git history of a note, newest first, following renames."""
        entry = self._entry_for_id(note_id)
        return self.repo.log_for(entry.path)

    def _entry_for_id(self, note_id: str) -> Entry:
        if not isinstance(note_id, str) or not is_full_id(note_id):
            raise NotFound(f"{note_id!r} is not a memory id; ids look like 0192f0c1-8d2e-7b3a-9c4d-…")
        entry = self.catalog.by_id(canonical_id(note_id))
        if entry is None:
            raise NotFound(f"no memory has id {note_id}; find the right id with memory_search")
        return entry

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
    ) -> dict[str, Any]:
        """Write a reviewed memory; idempotent on ``idempotency_key``.

        Returns ``{id, slug, deduplicated}``.
        """
        contract = self.contract()
        content = rules.check_content(content, contract)
        kind = rules.check_kind(kind, contract)
        project = validate_project(project)
        clean_title = rules.check_title(title, contract)
        tag_list = rules.check_tags(tags, contract)
        idem = rules.idempotency_tag(idempotency_key) if idempotency_key is not None else None
        with self.lock:
            if idem is not None:
                existing = self.catalog.by_idempotency_tag(idem)
                if existing is not None:
                    return {"id": existing.id, "slug": existing.slug, "deduplicated": True}
            twin = self._reinforce_target(content, statuses=("active",))
            if twin is not None:
                note = self._reinforce(twin, "memory_append", extra_tags=[idem] if idem else [])
                self._finish(note, wait_commit)
                return {"id": note.id, "slug": note.slug, "deduplicated": True}
            now = self.clock()
            rules.check_cap(self.catalog.written_since(now.date()), contract, now.date(), "memory_append")
            directory = self.projects.space_for(contract, project) if project else contract.class_dir(kind)
            final_title = clean_title or rules.title_from_content(content)
            note = self._create(
                directory=directory,
                slug_base=make_slug(final_title),
                title=final_title,
                content=content,
                fields={
                    "kind": kind,
                    "status": "active",
                    "project": project,
                    "tags": tag_list + ([idem] if idem else []),
                    "filing": {"confidence": contract.append_confidence, "tool": "memory_append"},
                },
                now=now,
                tool="memory_append",
            )
            self._finish(note, wait_commit)
        return {"id": note.id, "slug": note.slug, "deduplicated": False}

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
    ) -> dict[str, Any]:
        """Record an unreviewed candidate. Never raises: ``{success: false, error}`` on failure."""
        try:
            return self._capture(
                content, kind, title, tags, instructions, source_url, source_id, project, cwd,
                wait_commit=wait_commit,
            )  # fmt: skip
        except VaultmemError as exc:
            return {"success": False, "error": str(exc)}
        except Exception as exc:  # a capture is never silently dropped, nor does it raise
            log.exception("capture failed")
            return {"success": False, "error": f"capture failed: {type(exc).__name__}: {exc}"}

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
    ) -> dict[str, Any]:
        contract = self.contract()
        content = rules.check_content(content, contract)
        kind = rules.check_kind(kind or contract.capture_default_kind, contract)
        clean_title = rules.check_title(title, contract)
        tag_list = rules.check_tags(tags, contract)
        instructions = rules.check_text_arg("instructions", instructions, rules.MAX_INSTRUCTIONS_CHARS)
        source_url = rules.check_text_arg("source_url", source_url, rules.MAX_SOURCE_CHARS)
        source_id = rules.check_text_arg("source_id", source_id, rules.MAX_SOURCE_CHARS)
        project = validate_project(project)
        if project is None and cwd and kind not in contract.unscoped_kinds:
            found = self.projects.for_cwd(contract, cwd)
            project = found.name if found else None
        transport = "external-fetch" if source_url else "operator-direct"
        source: dict[str, Any] = {"transport": transport, "trust": contract.trust_for(transport)}
        if source_url:
            source["url"] = source_url
        if source_id:
            source["id"] = source_id
        status = "unfiled" if contract.capture_confidence < contract.low_confidence else "active"

        with self.lock:
            # 1. The same source already home: update that card in place.
            if (source_id or source_url) and clean_title:
                home = self._source_home(clean_title, source_id, source_url)
                if home is not None:
                    if home.fingerprint == _fp(content):
                        note = self._reinforce(home, "memory_capture")
                        self._finish(note, wait_commit)
                        return _capture_result(note, deduplicated=True)
                    note = self._update_in_place(home, content, "memory_capture")
                    self._finish(note, wait_commit)
                    return _capture_result(note, deduplicated=False, updated=True)
            # 2. The corpus check: an exact twin that is live reinforces, unless this capture brings
            #    a source_url or instructions the twin lacks.
            twin = self._reinforce_target(content, statuses=("active", "unfiled"))
            if twin is not None:
                twin_note = self.store.read(twin.path)
                lacks = (source_url and not twin_note.source.get("url")) or (
                    instructions and not twin_note.instructions
                )
                if not lacks:
                    note = self._reinforce(twin, "memory_capture")
                    self._finish(note, wait_commit)
                    return _capture_result(note, deduplicated=True)
            # 3. An idea that already has a card: append to the card.
            if kind == "idea":
                card = self._idea_card(contract, clean_title, content)
                if card is not None:
                    note = self._append_to_idea(card, content, source, "memory_capture")
                    self._finish(note, wait_commit)
                    return _capture_result(note, deduplicated=False, appended=True)
            now = self.clock()
            rules.check_cap(self.catalog.written_since(now.date()), contract, now.date(), "memory_capture")
            base = make_slug(clean_title) if clean_title else "capture-" + now.strftime("%Y%m%dt%H%M%Sz")
            note = self._create(
                directory=contract.class_dir(kind),
                slug_base=base,
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
                now=now,
                tool="memory_capture",
            )
            self._finish(note, wait_commit)
        return _capture_result(note, deduplicated=False)

    # -- memory_forget ----------------------------------------------------------------------
    def forget(self, note_id: str, reason: str | None = None, *, wait_commit: bool = False) -> dict[str, Any]:
        """Soft-delete a memory: status deleted, ``deleted_at`` stamped, the file kept.

        Returns ``{id, status: "deleted", already_deleted}``; an unknown id raises NotFound.
        """
        reason = rules.check_text_arg("reason", reason, rules.MAX_INSTRUCTIONS_CHARS)
        with self.lock:
            entry = self._entry_for_id(note_id)
            note = self.store.read(entry.path)  # the file, not the catalog, decides
            if note.status == "deleted":
                return {"id": note.id, "status": "deleted", "already_deleted": True}
            assert note.text is not None
            changes: dict[str, Any] = {"status": "deleted", "deleted_at": iso(self.clock())}
            if reason:
                changes["delete_reason"] = reason
            updated = self.store.write(note.path, fm.set_fields(note.text, changes))
            self.catalog.put(updated)
            self._commit(updated, "memory_forget", "delete")
            self._finish(updated, wait_commit)
        return {"id": updated.id, "status": "deleted", "already_deleted": False}

    # -- the write path's steps -------------------------------------------------------------
    def _reinforce_target(self, content: str, statuses: Sequence[str]) -> Entry | None:
        for entry in self.catalog.with_fingerprint(_fp(content)):
            if entry.status in statuses and not entry.always_load and entry.id:
                return entry
        return None

    def _reinforce(self, entry: Entry, tool: str, extra_tags: Sequence[str] = ()) -> Note:
        note = self.store.read(entry.path)
        assert note.text is not None
        changes: dict[str, Any] = {"occurrences": note.occurrences + 1, "updated": iso(self.clock())}
        new_tags = [t for t in extra_tags if t and t not in note.tags]
        if new_tags:
            changes["tags"] = [*note.tags, *new_tags]
        updated = self.store.write(note.path, fm.set_fields(note.text, changes))
        self.catalog.put(updated)
        self._commit(updated, tool, "reinforce")
        return updated

    def _source_home(self, title: str, source_id: str | None, source_url: str | None) -> Entry | None:
        wanted = title.casefold()
        for entry in self.catalog.entries():
            if entry.status not in ("active", "unfiled") or entry.title.casefold() != wanted:
                continue
            if (source_id and entry.source_id == source_id) or (
                source_url and entry.source_url == source_url
            ):
                return entry
        return None

    def _update_in_place(self, entry: Entry, content: str, tool: str) -> Note:
        note = self.store.read(entry.path)
        assert note.text is not None
        body = content if content.endswith("\n") else content + "\n"
        text = fm.set_fields(fm.with_body(note.text, body), {"updated": iso(self.clock())})
        updated = self.store.write(note.path, text)
        self.catalog.put(updated)
        self._commit(updated, tool, "update in place")
        return updated

    def _idea_card(self, contract: Contract, title: str | None, content: str) -> Entry | None:
        ideas_dir = contract.class_dir("idea")
        slug = make_slug(title) if title else None
        for entry in self.catalog.entries():
            if not entry.path.startswith(ideas_dir + "/") or entry.status not in ("active", "unfiled"):
                continue
            if slug and entry.slug == slug:
                return entry
            if title and rules.word_overlap(title, entry.title) >= contract.idea_overlap:
                return entry
        for entry in self.catalog.entries():
            if not entry.path.startswith(ideas_dir + "/") or entry.status not in ("active", "unfiled"):
                continue
            body = self.store.read(entry.path).body
            if rules.word_overlap(content, body) >= contract.idea_overlap:
                return entry
        return None

    def _append_to_idea(self, entry: Entry, content: str, source: dict[str, Any], tool: str) -> Note:
        note = self.store.read(entry.path)
        assert note.text is not None
        nl = note.text.newline
        now = self.clock()
        origin = source.get("url") or source.get("transport", "operator-direct")
        body = note.body
        if body and not body.endswith(("\n", "\r")):
            body += nl
        added = content.strip().replace("\r\n", "\n").replace("\n", nl)
        addition = (
            f"{nl}## Added by capture {now.date().isoformat()}{nl}{nl}{added}{nl}{nl}Source: {origin}{nl}"
        )
        text = fm.set_fields(fm.with_body(note.text, body + addition), {"updated": iso(now)})
        updated = self.store.write(note.path, text)
        self.catalog.put(updated)
        self._commit(updated, tool, "append to idea card")
        return updated

    def _create(
        self,
        *,
        directory: str,
        slug_base: str,
        title: str,
        content: str,
        fields: dict[str, Any],
        now: dt.datetime,
        tool: str,
    ) -> Note:
        note_id = uuid7()
        slug = resolve_collision(
            slug_base,
            lambda s: self.catalog.name_taken(directory, s),
            meaningful_words(title, content),
            hash_source=note_id,
        )
        stamp = iso(now)
        all_fields: dict[str, Any] = {
            "id": note_id,
            "title": title,
            **fields,
            "created": stamp,
            "updated": stamp,
            "importance": DEFAULT_IMPORTANCE,
            "occurrences": 1,
        }
        if not all_fields.get("tags"):
            all_fields["tags"] = []
        text = new_note_text(all_fields, content)
        note = self.store.write(f"{directory}/{slug}.md", text, create=True)
        self.catalog.put(note)
        self._commit(note, tool, "add")
        return note

    def _commit(self, note: Note, tool: str, action: str) -> None:
        self._last_commit.future = self.commits.submit([note.path], commit_message(note, tool, action))

    def _finish(self, note: Note, wait_commit: bool) -> None:
        """Tell the listeners (read your writes); optionally wait for this thread's commit."""
        for listener in self.listeners:
            try:
                listener.note_written(note)
            except VaultmemError as exc:  # the note is safe on disk; the index catches up later
                log.warning("index update failed for %s: %s", note.path, exc)
        if wait_commit:
            pending: Future[None] | None = getattr(self._last_commit, "future", None)
            if pending is not None:
                pending.result(timeout=120)


def commit_message(note: Note, tool: str, action: str) -> str:
    """A commit message naming the tool, the note, its id, kind and project."""
    return (
        f"{tool}: {action} {note.slug}\n\n"
        f"tool: {tool}\nid: {note.id}\nslug: {note.slug}\npath: {note.path}\n"
        f"kind: {note.kind}\nproject: {note.project or '-'}\nstatus: {note.status}\n"
    )


def _fp(content: str) -> str:
    return fingerprint(content)


def _capture_result(
    note: Note, *, deduplicated: bool, updated: bool = False, appended: bool = False
) -> dict[str, Any]:
    result: dict[str, Any] = {"success": True, "id": note.id, "slug": note.slug, "deduplicated": deduplicated}
    if updated:
        result["updated"] = True
    if appended:
        result["appended"] = True
    return result


__all__ = ["InvalidInput", "NotFound", "VaultService"]
