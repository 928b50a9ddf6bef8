"""The vaultmem service: the one API the MCP tools, the HTTP server and the CLI call.

It owns the write path of the filing contract (append, capture, forget): input checks, routing,
idempotency keys, the exact-fingerprint reinforce, source updates in place, the idea ledger, the
daily cap, then an atomic write, the catalog, and a commit by the single git writer.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from vaultmem.config import Settings
from vaultmem.errors import GitLocked, InvalidInput, NotFound, VaultError, VaultmemError
from vaultmem.filing import rules
from vaultmem.filing.contract import Contract, load_contract
from vaultmem.filing.projects import ProjectRegistry, validate_project
from vaultmem.graph.pipeline import FileWrite, Plan, run_writes
from vaultmem.notes import frontmatter as fm
from vaultmem.notes.ids import canonical_id, derived_id, is_full_id, uuid7
from vaultmem.notes.model import Note, fingerprint, iso, new_note_text, utc_now
from vaultmem.notes.slugs import make_slug, meaningful_words, resolve_collision
from vaultmem.vault.atomic import sweep_temp_files
from vaultmem.vault.catalog import Catalog, Entry
from vaultmem.vault.history import CommitWriter, GitRepo, names_in_subject
from vaultmem.vault.layout import IGNORED_DIRS, VaultLayout, is_never_committed
from vaultmem.vault.locks import ProcessLock
from vaultmem.vault.store import NoteStore

log = logging.getLogger(__name__)
Clock = Callable[[], dt.datetime]
DEFAULT_IMPORTANCE = 0.5
_GENERATION_BYTES = 64


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
        # Decisions serialise on the thread lock; the process lock keeps other vaultmem processes
        # out from a decision until its file is in place.
        self.lock = threading.RLock()
        self.process_lock = ProcessLock(self.layout.state_dir / "write.lock", settings.write_lock_timeout)
        self._inflight: dict[str, threading.Event] = {}
        self.commits = CommitWriter(self.repo)
        self.listeners: list[NoteListener] = []
        self._contract: tuple[tuple[str, int, int], Contract] | None = None
        # Bumped under the process lock by every write of every vaultmem process on this vault: a
        # value other than the last one seen means another process wrote, so rescan the catalog.
        self._generation_file = self.layout.state_dir / "write.generation"
        self._generation = ""
        self._gen_fd: int | None = None
        self._open(background_commits)

    # -- lifecycle --------------------------------------------------------------------------
    def _open(self, background_commits: bool) -> None:
        self.layout.state_dir.mkdir(parents=True, exist_ok=True)
        with self.process_lock, self.lock:
            sweep_temp_files(self.layout.root, IGNORED_DIRS)
            self.repo.sweep_pathspec_files()
            self._commit_found_at_start()
            self.catalog.scan()
            self._generation = self._read_generation()
        if background_commits:
            self.commits.start()

    def _commit_found_at_start(self) -> None:
        """Commit what was written but not committed (a crash) or edited while vaultmem was stopped.

        A git lock that a running process holds does not stop the start: the commit waits in the
        writer's queue and lands once git is free (a stale lock is removed by the attempt itself).
        """
        paths = [p for p in self.repo.pending_changes() if not is_never_committed(p)]
        if not paths:
            return
        message = (
            f"vaultmem: record changes found at start: {names_in_subject(paths)}\n\n"
            "Writes acknowledged before a crash, or edits made while vaultmem was stopped.\n"
        )
        try:
            if self.repo.commit_paths(paths, message):
                log.info("committed %d change(s) found at start", len(paths))
        except GitLocked as exc:
            log.warning("%s; vaultmem serves meanwhile and commits the changes found at start later", exc)
            self.commits.defer(paths, message)

    def close(self) -> None:
        """Commit everything pending and save derived state.

        A commit that still fails (git locked) raises GitError after the writer has stopped; the
        files are safe on disk and the next start commits them.
        """
        try:
            self.commits.flush()
        finally:
            self.commits.close()
            self.catalog.save_cache()
            if self._gen_fd is not None:
                os.close(self._gen_fd)
                self._gen_fd = None

    def __enter__(self) -> VaultService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _now(self) -> dt.datetime:
        """The clock's time in UTC: the daily cap and timestamp slugs count UTC days."""
        now = self.clock()
        return now.astimezone(dt.UTC) if now.tzinfo else now.replace(tzinfo=dt.UTC)

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
            contract = load_contract(self.layout.root)
            # Also where this vault keeps git and its state (either may be configured elsewhere).
            contract.check_directories(self.layout.root, [self.layout.state_dir, self.repo.git_dir])
            self._contract = (stamp, contract)
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

    def entry_for_id(self, note_id: str) -> Entry | None:
        """The note a full id names: its ``id`` key, or the id derived from its path that the index
        (and so every read) reports for a note a person wrote without one, or for a copy whose id
        another file holds. Every id a read returns is accepted here."""
        wanted = canonical_id(note_id)
        entry = self.catalog.by_id(wanted)
        if entry is not None:
            return entry
        for candidate in self.catalog.entries():
            if candidate.id:
                owner = self.catalog.by_id(candidate.id)
                if owner is not None and owner.path == candidate.path:
                    continue  # indexed under its own id, which is not the one wanted
            if derived_id(candidate.path) == wanted:
                return candidate
        return None

    def _entry_for_id(self, note_id: str) -> Entry:
        if not isinstance(note_id, str) or not is_full_id(note_id):
            raise NotFound(f"{note_id!r} is not a memory id; ids look like 0192f0c1-8d2e-7b3a-9c4d-…")
        entry = self.entry_for_id(note_id)
        if entry is not None and not (self.layout.root / entry.path).is_file():
            # Removed by hand (Obsidian, a sync client) since the catalog last looked.
            self.catalog.refresh(entry.path)
            entry = self.entry_for_id(note_id)
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
        keys = [f"fp:{fingerprint(content)}"] + ([f"idem:{idem}"] if idem else [])

        def decide() -> dict[str, Any] | _Write:
            if idem is not None:
                existing = self.catalog.by_idempotency_tag(idem)
                if existing is not None:
                    return {"id": existing.id, "slug": existing.slug, "deduplicated": True}
            twin = self._reinforce_target(content, statuses=("active",))
            if twin is not None:
                return self._plan_reinforce(twin, "memory_append", extra_tags=[idem] if idem else [])
            now = self._now()
            rules.check_cap(self.catalog.written_since(now.date()), contract, now.date(), "memory_append")
            directory = self.projects.space_for(contract, project) if project else contract.class_dir(kind)
            final_title = clean_title or rules.title_from_content(content)
            return self._plan_create(
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

        outcome = self._run(keys, decide, wait_commit)
        if isinstance(outcome, dict):
            return outcome
        note, plan = outcome
        return {"id": note.id, "slug": note.slug, "deduplicated": plan.action == "reinforce"}

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
        fp = fingerprint(content)
        keys = [
            f"fp:{fp}",
            "ideas" if kind == "idea" else "",
            f"title:{clean_title.casefold()}" if clean_title else "",
        ]

        def decide() -> dict[str, Any] | _Write:
            # 1. The same source already home: update that card in place.
            if (source_id or source_url) and clean_title:
                home = self._source_home(clean_title, source_id, source_url)
                if home is not None:
                    if home.fingerprint == fp:
                        return self._plan_reinforce(home, "memory_capture")
                    return self._plan_update_in_place(home, content, "memory_capture")
            # 2. The corpus check: an exact live twin reinforces, unless this capture brings a
            #    source_url or instructions the twin lacks.
            twin = self._reinforce_target(content, statuses=("active", "unfiled"))
            if twin is not None:
                twin_note = self.store.read(twin.path)
                lacks = (source_url and not twin_note.source.get("url")) or (
                    instructions and not twin_note.instructions
                )
                if not lacks:
                    return self._plan_reinforce(twin, "memory_capture")
            # 3. An idea that already has a card: append to the card.
            if kind == "idea":
                card = self._idea_card(contract, clean_title, content)
                if card is not None:
                    return self._plan_idea_append(card, content, source, "memory_capture")
            now = self._now()
            rules.check_cap(self.catalog.written_since(now.date()), contract, now.date(), "memory_capture")
            base = make_slug(clean_title) if clean_title else "capture-" + now.strftime("%Y%m%dt%H%M%Sz")
            return self._plan_create(
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
                # An untitled capture's title is a timestamp: grow a taken name from the text only.
                grow_from=(clean_title, content) if clean_title else (content,),
            )

        outcome = self._run([k for k in keys if k], decide, wait_commit)
        if isinstance(outcome, dict):  # pragma: no cover - capture always writes something
            return outcome
        note, plan = outcome
        return _capture_result(
            note,
            deduplicated=plan.action == "reinforce",
            updated=plan.action == "update in place",
            appended=plan.action == "append to idea card",
        )

    # -- memory_forget ----------------------------------------------------------------------
    def forget(self, note_id: str, reason: str | None = None, *, wait_commit: bool = False) -> dict[str, Any]:
        """Soft-delete a memory: status deleted, ``deleted_at`` stamped, the file kept.

        Returns ``{id, status: "deleted", already_deleted}``; an unknown id raises NotFound.
        """
        reason = rules.check_text_arg("reason", reason, rules.MAX_INSTRUCTIONS_CHARS)

        def decide() -> dict[str, Any] | _Write:
            entry = self._entry_for_id(note_id)
            note = self.store.read(entry.path)  # the file, not the catalog, decides
            if note.status == "deleted":
                return {"id": canonical_id(note_id), "status": "deleted", "already_deleted": True}
            assert note.text is not None
            changes: dict[str, Any] = {"status": "deleted", "deleted_at": iso(self._now())}
            if reason:
                changes["delete_reason"] = reason
            # A person's note without an id keeps having none (its id stays the one derived from
            # its path); only the owned keys change, its body and other keys are kept byte for byte.
            return _Write(note.path, fm.set_fields(note.text, changes), False, "memory_forget", "delete")

        outcome = self._run([], decide, wait_commit)
        if isinstance(outcome, dict):
            return outcome
        return {"id": canonical_id(note_id), "status": "deleted", "already_deleted": False}

    # -- running a write: decide, stage, install ----------------------------------------------
    def _run(
        self, keys: list[str], decide: Callable[[], dict[str, Any] | _Write], wait_commit: bool
    ) -> dict[str, Any] | tuple[Note, _Write]:
        """Run one write through the write pipeline (``graph/pipeline.run_writes``, shared with the
        batch tools): wait out in-flight writes sharing a key, decide under the locks, stage and fsync
        unlocked, install under the lock, commit, tell the listeners before returning."""

        def plan() -> Plan[dict[str, Any] | _Write]:
            decision = decide()
            if isinstance(decision, dict):
                return Plan([], decision)
            write = FileWrite(decision.rel, decision.text, decision.create, decision.action)
            return Plan([write], decision)

        def message(notes: list[Note], decision: dict[str, Any] | _Write) -> str:
            assert isinstance(decision, _Write)
            return commit_message(notes[0], decision.tool, decision.action)

        notes, result = run_writes(
            self, plan, tool="", summary="", keys=keys, wait_commit=wait_commit, message=message
        )
        if isinstance(result, dict):
            return result
        return notes[0], result

    # -- other vaultmem processes on this vault -------------------------------------------------
    def _generation_fd(self) -> int:
        if self._gen_fd is None:
            self._gen_fd = os.open(self._generation_file, os.O_RDWR | os.O_CREAT, 0o600)
        return self._gen_fd

    def _read_generation(self) -> str:
        try:
            return os.pread(self._generation_fd(), _GENERATION_BYTES, 0).decode("ascii", "replace").strip()
        except OSError:
            return ""

    def _catch_up(self) -> None:
        """Rescan the catalog if another process wrote since this one last looked (process lock held)."""
        with self.lock:
            seen = self._read_generation()
            if seen != self._generation:
                self.catalog.scan()  # mtime-cached: only the files that changed are parsed
                self._generation = seen

    def _bump_generation(self) -> None:
        """Tell the other processes this one wrote (process lock and thread lock held).

        The marker is rewritten in place: it is read only under the same cross-process lock, so it
        needs neither a rename nor an fsync (it is a hint for this boot, not durable state).
        """
        value = f"{os.getpid()}-{uuid7()}"
        try:
            os.pwrite(self._generation_fd(), value.ljust(_GENERATION_BYTES).encode("ascii"), 0)
        except OSError as exc:  # the note is written; other processes rescan on their own start
            log.warning("could not update %s: %s", self._generation_file, exc)
        self._generation = value

    # -- planning each kind of write ----------------------------------------------------------
    def name_taken(self, directory: str, slug: str) -> bool:
        """Whether a new note in ``directory`` may not be called ``slug``: a note, or a write in
        flight, already has that file name in that folder *or anywhere else in the vault*
        (compared case-insensitively). Names are kept unique vault-wide so that a bare
        ``[[slug]]`` link, Obsidian's shortest form, never becomes ambiguous because vaultmem
        wrote a note (call with the write lock held)."""
        if self.catalog.name_taken(directory, slug) or self.catalog.paths_named(slug):
            return True
        name = f"{slug}.md".lower()
        return any(
            key.startswith("path:") and key.lower().rsplit("/", 1)[-1].removeprefix("path:") == name
            for key in self._inflight
        )

    def _reinforce_target(self, content: str, statuses: Sequence[str]) -> Entry | None:
        for entry in self.catalog.with_fingerprint(fingerprint(content)):
            if entry.status in statuses and not entry.always_load and entry.id:
                return entry
        return None

    def _plan_reinforce(self, entry: Entry, tool: str, extra_tags: Sequence[str] = ()) -> _Write:
        note = self.store.read(entry.path)
        assert note.text is not None
        changes: dict[str, Any] = {"occurrences": note.occurrences + 1, "updated": iso(self._now())}
        new_tags = [t for t in extra_tags if t and t not in note.tags]
        if new_tags:
            changes["tags"] = [*note.tags, *new_tags]
        return _Write(note.path, fm.set_fields(note.text, changes), False, tool, "reinforce")

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

    def _plan_update_in_place(self, entry: Entry, content: str, tool: str) -> _Write:
        note = self.store.read(entry.path)
        assert note.text is not None
        body = content if content.endswith("\n") else content + "\n"
        text = fm.set_fields(fm.with_body(note.text, body), {"updated": iso(self._now())})
        return _Write(note.path, text, False, tool, "update in place")

    def _idea_card(self, contract: Contract, title: str | None, content: str) -> Entry | None:
        ideas_dir = contract.class_dir("idea") + "/"
        cards = [
            e for e in self.catalog.entries()
            if e.path.startswith(ideas_dir) and e.status in ("active", "unfiled")
        ]  # fmt: skip
        slug = make_slug(title) if title else None
        for entry in cards:
            if slug and entry.slug == slug:
                return entry
            if title and rules.word_overlap(title, entry.title) >= contract.idea_overlap:
                return entry
        for entry in cards:
            if rules.word_overlap(content, self.store.read(entry.path).body) >= contract.idea_overlap:
                return entry
        return None

    def _plan_idea_append(self, entry: Entry, content: str, source: dict[str, Any], tool: str) -> _Write:
        note = self.store.read(entry.path)
        assert note.text is not None
        nl = note.text.newline
        now = self._now()
        origin = source.get("url") or source.get("transport", "operator-direct")
        body = note.body
        if body and not body.endswith(("\n", "\r")):
            body += nl
        added = content.strip().replace("\r\n", "\n").replace("\n", nl)
        addition = (
            f"{nl}## Added by capture {now.date().isoformat()}{nl}{nl}{added}{nl}{nl}Source: {origin}{nl}"
        )
        text = fm.set_fields(fm.with_body(note.text, body + addition), {"updated": iso(now)})
        return _Write(note.path, text, False, tool, "append to idea card")

    def _plan_create(
        self,
        *,
        directory: str,
        slug_base: str,
        title: str,
        content: str,
        fields: dict[str, Any],
        now: dt.datetime,
        tool: str,
        grow_from: Sequence[str] | None = None,
    ) -> _Write:
        note_id = uuid7()
        slug = resolve_collision(
            slug_base,
            lambda s: self.name_taken(directory, s),
            meaningful_words(*(grow_from if grow_from is not None else (title, content))),
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
        return _Write(f"{directory}/{slug}.md", new_note_text(all_fields, content), True, tool, "add")


@dataclass(frozen=True)
class _Write:
    """A decided write: the note's new text, where it goes, and what to call it in git."""

    rel: str
    text: fm.NoteText
    create: bool
    tool: str
    action: str


def commit_message(note: Note, tool: str, action: str) -> str:
    """A commit message naming the tool, the note, its id, kind and project."""
    return (
        f"{tool}: {action} {note.slug}\n\n"
        f"tool: {tool}\nid: {note.id or derived_id(note.path)}\nslug: {note.slug}\npath: {note.path}\n"
        f"kind: {note.kind}\nproject: {note.project or '-'}\nstatus: {note.status}\n"
    )


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
