"""``memory_status``: slots, the frontier, the configuration and the health check. Reads only.

- ``slots``: the two stored slots (files; a project's file wins over the global one) and the two
  virtual ones (``pending_items`` from due pending thoughts, ``architecture_decisions`` from primers).
- ``frontier``: what needs attention, in this order: pending thoughts whose time has come, live
  thoughts joined by a ``contradicts`` edge, unfiled captures awaiting review, stale thoughts (active,
  not updated for ``stale_after_days``).
- ``config``: the effective settings as text.
- ``health``: checks over the vault, the index and git (``vaultmem doctor``'s), the project
  registry, ``contradiction_in_cluster``, and the sync with the git remote (its last round, the
  ahead/behind counts, conflict notes).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields

from vaultmem.errors import InvalidInput
from vaultmem.filing.projects import Project
from vaultmem.notes.model import DRAFT_STATUS, LIVE_STATUSES, iso, parse_time
from vaultmem.operations.context import Context
from vaultmem.operations.doctor import diagnose
from vaultmem.operations.note_facts import FactCache
from vaultmem.operations.primers import Primers
from vaultmem.operations.reflect import PENDING_TAG, same_project
from vaultmem.operations.results import Answer, Payload, Row, Thought
from vaultmem.operations.slots import (
    ARCHITECTURE_DECISIONS,
    PENDING_ITEMS,
    STORED_SLOTS,
    SlotFile,
    slot_file,
)
from vaultmem.operations.supersede import ARCHIVED_STATUSES
from vaultmem.operations.sync import sync_health
from vaultmem.vault.entry import Entry
from vaultmem.vault.sidefiles import read_side

SLOT_MAX_CHARS = 4000
DEFAULT_SLOTS_LIMIT = 20
MAX_SLOTS_LIMIT = 100
DEFAULT_FRONTIER_LIMIT = 10
MAX_FRONTIER_LIMIT = 50
FRONTIER_REASONS = ("pending", "contradiction", "unfiled", "stale")
#: Characters of a message kept when ``include_details`` is off.
SHORT_MESSAGE = 200
#: The health checks: (name, category, severity, what a finding is, what to do about it).
#: How long one health call reads notes it has no facts for (their secrets, their property links).
HEALTH_READ_BUDGET_S = 5.0
HEALTH_CHECKS: tuple[tuple[str, str, str, str, str], ...] = (
    ("malformed_notes", "vault", "error", "notes whose frontmatter vaultmem cannot read (never rewritten)",
     "fix each file by hand; `vaultmem doctor` lists them"),
    ("skipped_files", "vault", "warning",
     "files named like notes that vaultmem never reads: a name that is not UTF-8, a named pipe, a socket",
     "rename each file (or remove the pipe or socket); `vaultmem doctor` lists them"),
    ("sync_conflict_copies", "vault", "warning",
     "conflict copies a sync client left beside the original, and the side of a file that is not a note "
     "(a setting, a project.yaml) a sync merge could not keep",
     "merge each copy into its original by hand, then delete the copy"),
    ("sync_conflict_notes", "sync", "warning",
     "conflict notes a sync merge left beside a note two machines changed in the same lines (the side "
     "the note does not carry, in full)",
     "compare each with the note its conflict_of links to, copy into that note what you want to keep, "
     "then forget the conflict note (memory_forget) or delete its file"),
    ("sync_failed", "sync", "warning", "the last sync round with the git remote failed",
     "read the error: offline is fine (vaultmem keeps working and the next round retries); a refusal "
     "means `git fetch` does not work in the vault; `vaultmem sync` runs a round now"),
    ("dangling_links", "graph", "warning", "typed links whose target no note answers to",
     "fix the link in the note, or remove it"),
    ("index_usable", "index", "error", "the search index fails when it is read (searches fail)",
     "run `vaultmem reindex --full` (a running daemon switches to the rebuilt index), or restart "
     "vaultmem (it rebuilds a damaged index at start)"),
    ("index_missing", "index", "warning", "notes the index lacks",
     "run `vaultmem reindex` (or wait for the watcher's rescan)"),
    ("index_stale", "index", "warning", "notes whose index row is older than the file",
     "run `vaultmem reindex`"),
    ("index_extra", "index", "warning", "index rows whose note is gone", "run `vaultmem reindex`"),
    ("index_write_failures", "index", "warning",
     "notes whose last index write failed (a full disk under the state directory?); the vault has them",
     "free space under the state directory: vaultmem writes them again by itself (retrying every "
     "30 s at most), or run `vaultmem reindex`"),
    ("index_needs_rebuild", "index", "warning", "the index was built with another embedding model or schema",
     "run `vaultmem reindex`"),
    ("uncommitted_changes", "git", "warning", "files changed in the vault but not committed",
     "wait for the watcher's commit, or restart vaultmem (it commits them at start)"),
    ("git_operation_in_progress", "git", "warning",
     "the vault's git is in the middle of an operation of the person's (a rebase, merge, cherry-pick or "
     "revert stopped, or one commit checked out: a detached HEAD): vaultmem commits nothing meanwhile",
     "finish or abort it (`git rebase --continue` or `--abort`, `git merge --abort`, ...) or check out "
     "the branch again (`git switch main`): the changes waiting are committed then"),
    ("stale_git_locks", "git", "warning",
     "git lock files no process holds, older than the lock timeout (a git killed mid-commit)",
     "nothing to do: vaultmem removes a stale lock at its next commit (or remove it yourself)"),
    ("secrets_in_notes", "vault", "warning",
     "notes holding what looks like a secret (a key, a token, a password): edited in by hand, since "
     "agents' writes are guarded; git keeps every version",
     "remove the secret from the note (keep where it lives instead: a password manager entry); it "
     "stays in older commits until the history is rewritten (git filter-repo)"),
    ("notes_not_checked_yet", "vault", "warning",
     "notes whose secrets and property links this call had no time to read (the first check of a large "
     "vault, or the first after an upgrade: each call reads more, for a few seconds at most)",
     "call health again, or run `vaultmem doctor`, which reads every note"),
    ("project_registry", "projects", "error", "project.yaml files that cannot be read",
     "fix each file by hand"),
    ("contradiction_in_cluster", "semantic consistency", "warning",
     "two non-archived members of one cluster are joined by a 'contradicts' edge",
     "no autofix: unlink contradicts_edge_id, or retype it to supports/related, with memory_store "
     "(preview, then confirm: true), or archive the cluster thought with memory_supersede action=archive"),
)  # fmt: skip


def _line(thought: Thought) -> str:
    first = thought.content.strip().splitlines()[0] if thought.content.strip() else thought.title
    return f"- {first[:200]} (id {thought.id})"


def _clip(text: str, limit: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[:limit], True)


#: Said by ``slots`` when the call named no project.
SLOTS_WARNING = (
    "no project scope — the project-scoped slot overrides were not applied (pass cwd to read them)"
)


class Status:
    """The read actions of ``memory_status``."""

    def __init__(self, ctx: Context, primers: Primers) -> None:
        self.ctx = ctx
        self.lookup = ctx.lookup
        self.primers = primers
        self.settings = ctx.settings
        self.stale_days = ctx.settings.stale_after_days
        #: Set by the HTTP daemon: its MCP session counts, reported by ``health``.
        self.sessions: Callable[[], Mapping[str, int]] | None = None
        #: health's facts of each note (secrets, property links), kept while its content is the same.
        self._facts = FactCache(ctx.layout.state_dir)

    # -- shared -------------------------------------------------------------------------------------
    def _in_scope(self, entry: Entry, project: str | None) -> bool:
        return project is None or same_project(entry, project)

    def due_pending(self, project: str | None) -> list[Entry]:
        """Pending thoughts whose ``surface_after`` has passed, the earliest first (frontier and slot)."""
        now = self.ctx.now()
        rows: list[tuple[dt.datetime, Entry]] = []
        for e in self.ctx.catalog.entries():
            if e.status not in LIVE_STATUSES or PENDING_TAG not in e.tags or not self._in_scope(e, project):
                continue
            when = parse_time(e.surface_after) or parse_time(e.created) or now
            if when <= now:
                rows.append((when, e))
        rows.sort(key=lambda r: (r[0], self.lookup.id_of(r[1])))  # then creation order (UUIDv7)
        return [e for _when, e in rows]

    # -- slots --------------------------------------------------------------------------------------
    def slots(self, project: Project | None, slots_limit: int, offset: int, scoped: bool = True) -> Answer:
        """The slots of ``project``; unless ``scoped`` (the caller named no project) the answer warns
        that the project's own slot overrides were not applied."""
        answer = self._slots(project, slots_limit, offset)
        if not scoped:
            answer.warnings.append(SLOTS_WARNING)
        return answer

    def _slots(self, project: Project | None, slots_limit: int, offset: int) -> Answer:
        if (
            isinstance(slots_limit, bool)
            or not isinstance(slots_limit, int)
            or not 1 <= slots_limit <= MAX_SLOTS_LIMIT
        ):
            raise InvalidInput(f"slots_limit must be a whole number from 1 to {MAX_SLOTS_LIMIT}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidInput("offset must be a whole number, 0 or more")
        contract = self.ctx.contract()
        items: list[Row] = []
        for name in STORED_SLOTS:
            candidates = [slot_file(name, contract, project)] if project is not None else []
            candidates.append(slot_file(name, contract, None))
            items.append(self._stored(candidates))
        project_name = project.name if project is not None else None
        scope = "project" if project is not None else "global"
        pending = self.due_pending(project_name)
        page = pending[offset : offset + slots_limit]
        thoughts = self.lookup.thoughts(page)
        lines = [_line(thoughts[self.lookup.id_of(e)]) for e in page]
        items.append(self._virtual(PENDING_ITEMS, scope, lines, [e.updated for e in page]))
        primed = [
            (p, e) for p in self.primers.all()
            if (e := self.lookup.entry(p.thought_id)) is not None
            and self._unarchived(p.thought_id) and self._in_scope(e, project_name)
        ]  # fmt: skip
        decided = self.lookup.thoughts(e for _p, e in primed)
        items.append(
            self._virtual(
                ARCHITECTURE_DECISIONS,
                scope,
                [_line(decided[self.lookup.id_of(e)]) for _p, e in primed],
                [p.promoted_at for p, _e in primed],
            )
        )
        answer = Answer.many(
            "slots", items, pending_items=len(pending), slots_limit=slots_limit, offset=offset
        )
        return answer

    def _stored(self, candidates: list[SlotFile]) -> Row:
        for slot in candidates:
            text = read_side(self.ctx.layout, slot.rel)
            if text is None:
                continue
            content, truncated = _clip(text, SLOT_MAX_CHARS)
            stat = self.ctx.layout.resolve(slot.rel).stat()
            updated = iso(dt.datetime.fromtimestamp(stat.st_mtime, dt.UTC))
            return self._slot(slot.name, slot.scope, False, content, truncated, updated, slot.rel)
        last = candidates[-1]
        return self._slot(last.name, last.scope, False, "", False, None, last.rel)

    def _virtual(self, name: str, scope: str, lines: list[str], stamps: list[str | None]) -> Row:
        content, truncated = _clip("\n".join(lines), SLOT_MAX_CHARS)
        updated = max((s for s in stamps if s), default=None)
        return self._slot(name, scope, True, content, truncated, updated)

    @staticmethod
    def _slot(
        name: str,
        scope: str,
        virtual: bool,
        content: str,
        truncated: bool,
        updated: str | None,
        path: str | None = None,
    ) -> Row:
        """One slot row; ``path`` is the file a person edits (None for a virtual slot)."""
        return {
            "name": name,
            "scope": scope,
            "virtual": virtual,
            "content": content,
            "truncated": truncated,
            "max_chars": SLOT_MAX_CHARS,
            "updated_at": updated,
            "path": path,
        }

    # -- frontier -----------------------------------------------------------------------------------
    def frontier(self, project: str | None, limit: int) -> Answer:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_FRONTIER_LIMIT:
            raise InvalidInput(f"limit must be a whole number from 1 to {MAX_FRONTIER_LIMIT}")
        now = self.ctx.now()
        stale_before = now - dt.timedelta(days=self.stale_days)
        rows: list[tuple[str, Entry, Row]] = []
        for e in self.due_pending(project):
            rows.append(("pending", e, {"since": e.surface_after or e.created}))
        seen_pairs: set[frozenset[str]] = set()
        entries = [e for e in self.ctx.catalog.entries() if self._in_scope(e, project)]
        for e in sorted(entries, key=lambda e: (e.created or "", e.path)):
            if e.status not in LIVE_STATUSES:
                continue
            note_id = self.lookup.id_of(e)
            for edge in self.lookup.edges.edges_of(note_id):
                other = edge.target_id if edge.source_id == note_id else edge.source_id
                pair = frozenset({note_id, other})
                if edge.type != "contradicts" or pair in seen_pairs or not self.lookup.is_live(other):
                    continue
                seen_pairs.add(pair)
                rows.append(
                    (
                        "contradiction",
                        e,
                        {"since": edge.created_at, "edge_id": edge.id, "contradicted_by": [other]},
                    )
                )
        unfiled = [e for e in entries if e.status == DRAFT_STATUS and PENDING_TAG not in e.tags]
        for e in sorted(unfiled, key=lambda e: (e.created or "", e.path)):
            rows.append(("unfiled", e, {"since": e.created}))
        stale = [
            e for e in entries
            if e.status == "active" and not e.is_protected and not e.always_load
            and (parse_time(e.updated or e.created) or now) < stale_before
        ]  # fmt: skip
        for e in sorted(stale, key=lambda e: (e.updated or e.created or "", e.path)):
            rows.append(("stale", e, {"since": e.updated or e.created}))
        page = rows[:limit]
        thoughts = self.lookup.thoughts(e for _r, e, _x in page)
        items = [{"reason": r, "thought": thoughts[self.lookup.id_of(e)], **extra} for r, e, extra in page]
        per_reason = {reason: sum(1 for r, _e, _x in rows if r == reason) for reason in FRONTIER_REASONS}
        return Answer.many(
            "frontier", items, total=len(rows), filtered_out=len(rows) - len(items), limit=limit, **per_reason
        )

    # -- config -------------------------------------------------------------------------------------
    def config_text(self) -> str:
        contract = self.ctx.contract()
        projects = self.ctx.projects.projects(contract)
        lines = [
            "vaultmem configuration (read-only; the tool reference is docs/tools.md)",
            "",
            f"vault: {self.settings.vault}",
            f"state_dir: {self.settings.state_dir}",
            "",
            "settings (defaults < <vault>/vaultmem.yaml < environment < command-line flags):",
        ]
        for f in fields(self.settings):
            if f.name not in ("vault", "state_dir"):
                lines.append(f"  {f.name}: {getattr(self.settings, f.name)}")
        lines += [
            "",
            f"filing contract: {contract.path}",
            f"  daily_write_cap: {contract.daily_write_cap}",
            f"  kinds: {', '.join(f'{k} -> {v}' for k, v in sorted(contract.kinds.items()))}",
            f"  project registry: {contract.projects_desk}/<slug>/project.yaml",
            f"  project filing root: {contract.projects_root}/",
            "",
            f"projects ({len(projects)}):",
        ]
        for p in sorted(projects, key=lambda p: p.name):
            lines.append(f"  - {p.name} (id {p.id}): {', '.join(p.code_paths) or 'no code_paths'}")
        return "\n".join(lines) + "\n"

    # -- health -------------------------------------------------------------------------------------
    def health(self, include_details: bool) -> Answer:
        ctx = self.ctx
        with contextlib.suppress(Exception):  # let queued commits land; a failure shows as uncommitted
            ctx.writer.commits.flush(timeout=10.0)
        unusable = ctx.index.probe()  # as a search reads it: rows, vectors, full-text index
        report = diagnose(ctx.layout, ctx.catalog, ctx.index, ctx.repo, self._facts, HEALTH_READ_BUDGET_S)
        sync = sync_health(ctx)
        ctx.projects.projects(ctx.contract())  # re-reads project.yaml files, filling .problems
        found: dict[str, Sequence[Payload]] = {
            "malformed_notes": [{"path": p, "problem": m} for p, m in sorted(report.malformed.items())],
            "skipped_files": [{"path": p, "problem": m} for p, m in sorted(report.skipped.items())],
            "sync_conflict_copies": [{"path": p} for p in report.conflict_copies],
            "sync_conflict_notes": [{"path": p} for p in report.conflict_notes],
            "sync_failed": [
                {"error": sync["last_error"], "kind": sync["last_error_kind"], "at": sync["last_attempt"]}
            ]
            if sync["last_ok"] is False
            else [],
            "dangling_links": list(report.dangling_links),
            "index_usable": [{"problem": unusable}] if unusable else [],
            "index_missing": [{"path": p} for p in report.index_missing],
            "index_stale": [{"path": p} for p in report.index_stale],
            "index_extra": [{"path": p} for p in report.index_extra],
            "index_write_failures": [
                {"path": p, "problem": m} for p, m in sorted(ctx.index.failed_writes.items())
            ],
            "index_needs_rebuild": [{"needs_rebuild": True}] if report.index_needs_rebuild else [],
            "uncommitted_changes": [{"path": p} for p in report.uncommitted],
            "git_operation_in_progress": [{"operation": op} for op in [report.git_operation] if op],
            "stale_git_locks": [
                {"path": lock["path"], "age_s": lock["age_s"], "held": lock["held"], "stale": lock["stale"]}
                for lock in report.stale_git_locks
            ],
            "secrets_in_notes": list(report.secrets),
            "notes_not_checked_yet": [{"notes": report.unchecked}] if report.unchecked else [],
            "project_registry": [{"path": p, "problem": m} for p, m in sorted(ctx.projects.problems.items())],
            "contradiction_in_cluster": self.contradictions_in_clusters(),
        }
        counted = {"notes_not_checked_yet": report.unchecked}
        checks = [_check(spec, found[spec[0]], counted.get(spec[0])) for spec in HEALTH_CHECKS]
        worst = "ok"
        for check in checks:
            if not check["ok"]:
                worst = "error" if check["severity"] == "error" or worst == "error" else "warning"
            if not include_details:
                check.pop("details")
                check["message"] = str(check["message"])[:SHORT_MESSAGE]
        item: Row = {
            "status": worst,
            "notes": report.notes,
            "index_rows": report.index_rows,
            # A person's links to notes not written yet: counted, not a finding (Obsidian's idiom).
            "dangling_text_links": len(report.dangling_text_links),
            "checks": checks,
            "sync": sync,
        }
        if self.sessions is not None:  # served over HTTP: the MCP sessions open (server/sessions.py)
            sessions: Row = dict(self.sessions())
            item["mcp_sessions"] = sessions
        return Answer.one("health", item)

    def contradictions_in_clusters(self) -> list[dict[str, str]]:
        """Each ``contradicts`` edge joining two non-archived members of one live cluster."""
        findings: list[dict[str, str]] = []
        for cluster in self.ctx.catalog.entries():
            if not cluster.is_cluster or cluster.status not in LIVE_STATUSES:
                continue
            cluster_id = self.lookup.id_of(cluster)
            members = {
                e.target_id for e in self.lookup.edges.outgoing(cluster_id)
                if e.type == "cluster" and self._unarchived(e.target_id)
            }  # fmt: skip
            for member in sorted(members):
                for edge in self.lookup.edges.outgoing(member):
                    if edge.type == "contradicts" and edge.target_id in members:
                        findings.append(
                            {
                                "cluster_id": cluster_id,
                                "member_a": member,
                                "member_b": edge.target_id,
                                "contradicts_edge_id": edge.id,
                            }
                        )
        return findings

    def _unarchived(self, note_id: str) -> bool:
        entry = self.lookup.entry(note_id)
        return entry is not None and entry.status not in ARCHIVED_STATUSES and entry.status != "deleted"


def _check(spec: tuple[str, str, str, str, str], details: Sequence[Payload], count: int | None = None) -> Row:
    """One check's row; ``count`` when the details do not list each thing found one by one."""
    name, category, severity, what, remediation = spec
    count = len(details) if count is None else count
    check: Row = {
        "name": name,
        "category": category,
        "severity": severity,
        "ok": count == 0,
        "count": count,
        "message": f"{count} found: {what}" if count else f"none: {what}",
        "details": details,
    }
    if count:
        check["remediation"] = remediation
    return check
