"""Sync with the vault repository's git remote, wired into an open vault.

:class:`Syncing` runs one round (``vault/remote.py: VaultSync``) through the vault's writer and
brings the catalog and the index up to date from the round's diff; in the daemon it also runs the
rounds on its own (after a commit, debounced, and every ``sync_interval`` seconds).

Where a round commits pending work and merges, it holds :meth:`VaultWriter.exclusive` (no write
and no commit of any vaultmem process on the vault), and an ``flock`` in the git directory for its
whole length (one round at a time per repository). Inside the lock the catalog re-reads the paths
the merge changed, so the next write decides against the other machines' notes; after it, the index
re-reads the same paths only. Each round's outcome is kept in ``<state>/sync.json`` (derived
state) for ``memory_status health``. Why: docs/architecture.md, "Sync wired into the product".
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from vaultmem.errors import VaultmemError
from vaultmem.notes.model import iso
from vaultmem.operations.context import Context
from vaultmem.operations.results import Row
from vaultmem.vault.commits import hand_edit_describe, hand_edit_message
from vaultmem.vault.hidden_commits import in_hidden_folder, pack_loose_objects
from vaultmem.vault.layout import VaultLayout, is_never_committed
from vaultmem.vault.remote import ChangedPath, SyncReport, VaultSync, clone_vault
from vaultmem.vault.statefile import read_state, write_state

if TYPE_CHECKING:
    from vaultmem.sync.keeper import IndexKeeper

__all__ = ["SyncReport", "Syncing", "clone_vault", "sync_health"]
log = logging.getLogger(__name__)
STATE_FILE = "sync.json"
_STATE_VERSION = 1
#: Seconds before the first retry of a round that failed (offline, say), doubling up to the interval.
RETRY_FIRST = 5.0


class _Stopping(Exception):
    """The daemon is stopping: a round between its fetch and its merge ends there, cleanly."""


def incoming_notes(layout: VaultLayout, changed: list[ChangedPath]) -> list[str]:
    """The note paths among a merge's changed paths (not side files, not ``.gitattributes``)."""
    return [c.path for c in changed if not layout.is_ignored(c.path)]


class Syncing:
    """Sync rounds of one open vault; the daemon's automatic rounds (:meth:`start`)."""

    def __init__(self, ctx: Context, keeper: IndexKeeper | None) -> None:
        self.ctx = ctx
        self.keeper = keeper
        #: Test seam: called with the name of each step of a round (see ``VaultSync``).
        self.checkpoint: Callable[[str], None] | None = None
        self._one_round = threading.Lock()  # one round at a time in this process
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._write_due = math.inf  # monotonic time of the round a commit asked for
        if keeper is not None:  # the automatic rounds run while the vault is watched (the daemon)
            keeper.companions.append((self.start, self.stop))

    # -- one round ----------------------------------------------------------------------------------
    def round(self) -> SyncReport:
        """One round: commit pending work, fetch, merge, push; the index re-reads what came in."""
        ctx = self.ctx
        with self._one_round:
            started = iso(ctx.now())
            report = VaultSync(
                ctx.repo,
                ctx.settings.sync_remote,
                commit_pending=self._commit_pending,
                write_lock=ctx.writer.exclusive,
                after_merge=self._read_merged,
                checkpoint=self._step,
                round_fallback=ctx.layout.state_dir / "sync-round.flock",
            ).sync()
        notes = incoming_notes(ctx.layout, report.incoming)
        if self.keeper is not None and notes:
            try:
                self.keeper.reconcile_paths(notes)
            except VaultmemError as exc:  # the notes are in the vault; the next rescan indexes them
                log.warning("could not index what the sync brought in: %s", exc)
        self._record(report, started)
        return report

    def _commit_pending(self) -> list[str]:
        """What is still uncommitted once the writer's queue is flushed (the round's lock does that)
        is a person's or a sync client's edit: committed as the watcher would have, never dropped."""
        repo, root = self.ctx.repo, self.ctx.layout.root
        paths = [p for p in repo.pending_changes() if not is_never_committed(p)]
        deleted = {p for p in paths if not os.path.lexists(root / p)}
        message = hand_edit_message(paths, deleted)

        def describe(changed: list[str]) -> str:
            return hand_edit_describe(repo, changed, deleted)

        committed = paths and repo.commit_paths(paths, message, repo.person(), describe)
        if committed and any(in_hidden_folder(p) for p in paths):  # a plugin's data.json, each round
            pack_loose_objects(repo)
        return paths if committed else []  # theirs

    def _read_merged(self, changed: list[ChangedPath]) -> None:
        """Under the round's lock, right after a merge: the catalog reads what it changed."""
        self.ctx.catalog.refresh_merged(incoming_notes(self.ctx.layout, changed))

    def _step(self, step: str) -> None:
        if self.checkpoint is not None:
            self.checkpoint(step)
        if step == "fetched" and self._stopping:
            raise _Stopping  # nothing merged yet: the next start's round fetches again

    def _record(self, report: SyncReport, started: str) -> None:
        path = self.ctx.layout.state_dir / STATE_FILE
        last = read_state(path, _STATE_VERSION, "the last sync's time is shown after the next round") or {}
        write_state(
            path,
            {
                "version": _STATE_VERSION,
                "remote": report.remote,
                "branch": report.branch,
                "last_attempt": started,
                "last_sync": started if report.ok else last.get("last_sync"),
                "ok": report.ok,
                "error": report.errors[-1] if report.errors else None,
                "error_kind": report.error_kind,
                "incoming": len(report.incoming),
                "outgoing": len(report.outgoing),
                "pushed_commits": report.pushed_commits,
                "conflict_notes": [copy for copy, _original in report.conflict_files],
            },
        )

    # -- the daemon's own rounds --------------------------------------------------------------------
    def start(self) -> None:
        """Sync on its own (with the watcher): ``sync_debounce`` s after a commit lands, every
        ``sync_interval`` s (and once at start), while the repository has the remote; failed rounds
        back off. Both settings 0 (as the stdio server sets them): nothing runs."""
        settings = self.ctx.settings
        if self._thread is not None or (settings.sync_interval <= 0 and settings.sync_debounce <= 0):
            return
        if settings.sync_debounce > 0:
            self.ctx.writer.commits.on_commit = self.changed
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="vaultmem-sync", daemon=True)
        self._thread.start()

    def changed(self) -> None:
        """A commit landed: push it ``sync_debounce`` seconds from the first such commit."""
        with self._cond:
            if self._write_due == math.inf:
                self._write_due = time.monotonic() + self.ctx.settings.sync_debounce
                self._cond.notify()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the automatic rounds; a round being merged finishes first, one still fetching is
        not waited for past ``timeout`` (it holds no lock, and ends before it merges)."""
        if self._thread is None:
            return
        self.ctx.writer.commits.on_commit = lambda: None
        with self._cond:
            self._stopping = True
            self._cond.notify()
        self._thread.join(timeout)
        self._thread = None

    def _loop(self) -> None:
        interval = self.ctx.settings.sync_interval
        every = interval if interval > 0 else math.inf
        next_round = time.monotonic() if interval > 0 else math.inf  # the first at start
        not_before, failures = 0.0, 0
        while True:
            with self._cond:
                while not self._stopping:
                    wait = max(min(next_round, self._write_due), not_before) - time.monotonic()
                    if wait <= 0:
                        break
                    self._cond.wait(None if math.isinf(wait) else wait)  # inf: until a commit
                if self._stopping:
                    return
                self._write_due = math.inf
            ok = self._automatic_round()
            if self._stopping:
                return
            now = time.monotonic()
            next_round = now + every
            failures = 0 if ok else failures + 1
            backoff = min(RETRY_FIRST * 2 ** (failures - 1), every, 300.0) if failures else 0.0
            not_before = now + backoff

    def _automatic_round(self) -> bool:
        try:
            if not VaultSync(self.ctx.repo, self.ctx.settings.sync_remote).has_remote():
                return True  # nothing to sync with (yet): no error, no record
            report = self.round()
        except _Stopping:
            return True
        except Exception:  # the loop must outlive any one round
            log.exception("sync: the automatic round failed")
            return False
        if not report.ok:
            log.warning("sync with %s failed: %s", report.remote, "; ".join(report.errors))
        elif report.incoming or report.pushed_commits:
            log.info(
                "synced with %s: %d paths in, %d commits out, %d conflict notes",
                report.remote, len(report.incoming), report.pushed_commits, len(report.conflict_files),
            )  # fmt: skip
        return report.ok


def sync_health(ctx: Context) -> Row:
    """What ``memory_status health`` says about syncing: the remote, the last round (from any
    process: the daemon's or a ``vaultmem sync``), and the ahead/behind counts as of the last fetch."""
    settings = ctx.settings
    row: Row = {
        "remote": settings.sync_remote,
        "configured": False,
        "interval_seconds": settings.sync_interval,
        "debounce_seconds": settings.sync_debounce,
        "ahead": None,
        "behind": None,
    }
    try:
        sync = VaultSync(ctx.repo, settings.sync_remote)
        if sync.has_remote():
            row["configured"] = True
            row["ahead"], row["behind"] = sync.ahead_behind()
    except VaultmemError as exc:  # a detached HEAD, a remote name that is not one
        row["problem"] = str(exc)
    state = read_state(ctx.layout.state_dir / STATE_FILE, _STATE_VERSION, "shown again after the next sync")
    last = state or {}
    row.update(
        last_sync=last.get("last_sync"),  # the last round that finished
        last_attempt=last.get("last_attempt"),
        last_ok=last.get("ok"),
        last_error=last.get("error"),
        last_error_kind=last.get("error_kind"),
        last_incoming=last.get("incoming"),
        last_outgoing=last.get("outgoing"),
    )
    return row
