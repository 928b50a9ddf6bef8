"""The vault's write path, owned by one object: decide, stage, install, acknowledge, commit.

:class:`VaultWriter` alone holds the thread lock and the cross-process lock, the keys of the
writes in flight, the generation marker that tells this process another one wrote, the listeners
(the search index) and the commit queue. Every write of every operation goes through
:meth:`VaultWriter.run`: its ``decide`` (a planner, see :mod:`vaultmem.vault.plan`) runs under the
locks and returns a plan; the files are staged (temp file, fsync) without the lock, in parallel, so
a failure while staging leaves the vault as it was; the renames then run back to back under the
lock, each folder is fsynced, the listeners are told before the call returns, and one commit
records the whole plan (``docs/architecture.md``, "The write pipeline").
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from vaultmem import caller
from vaultmem.errors import GitError, VaultBusy, VaultmemError
from vaultmem.notes.ids import derived_id, uuid7
from vaultmem.notes.model import Note
from vaultmem.vault.atomic import remove_files
from vaultmem.vault.catalog import Catalog
from vaultmem.vault.commits import (
    CommitWriter,
    author_of,
    hand_edit_describe,
    hand_edit_message,
    names_in_subject,
)
from vaultmem.vault.hidden_commits import HiddenFolderClock, in_hidden_folder, pack_loose_objects
from vaultmem.vault.history import Author, GitRepo
from vaultmem.vault.layout import VaultLayout, is_never_committed
from vaultmem.vault.locks import CommitGate, ProcessLock
from vaultmem.vault.merge_state import needs_recovery, recover_at_start
from vaultmem.vault.pending_journal import PendingJournal
from vaultmem.vault.plan import FileWrite, Plan, WriteKey
from vaultmem.vault.reading import file_hash
from vaultmem.vault.store import NoteStore, StagedWrite, changed_on_disk

log = logging.getLogger(__name__)
R = TypeVar("R")
#: Files staged in parallel (their fsyncs overlap instead of queuing).
STAGE_THREADS = 16
#: Notes named one per line in a batch commit message before it summarises the rest.
MESSAGE_LINES = 2000
_GENERATION_BYTES = 64
#: In the git directory: the cross-process write lock, and the marker every write bumps under it.
WRITE_LOCK = "vaultmem-write.lock"
WRITE_GENERATION = "vaultmem-write.generation"


class NoteListener(Protocol):
    """Told about every note written, before the write returns (the search index listens)."""

    def notes_written(self, notes: list[Note]) -> None: ...


class PlanGuard(Protocol):
    """Checks every plan's files before anything is staged (the secret guard, :mod:`vaultmem.filing.guard`):
    returns the files to write (redacted, say) or raises, and then nothing is written."""

    def check(self, writes: list[FileWrite]) -> list[FileWrite]: ...


@dataclass(frozen=True)
class Written(Generic[R]):
    """What a write wrote (the notes, not the side files) and the answer its plan gave."""

    notes: list[Note]
    result: R

    def note_at(self, rel: str) -> Note:
        return next(n for n in self.notes if n.path == rel)


class VaultWriter:
    """The one writer of a vault's files (and, through its commit queue, of its git history)."""

    def __init__(
        self,
        layout: VaultLayout,
        repo: GitRepo,
        catalog: Catalog,
        store: NoteStore,
        *,
        lock_timeout: float,
        background_commits: bool = True,
        hidden_commit_interval: float = 0.0,
    ) -> None:
        self.layout = layout
        self.repo = repo
        self.catalog = catalog
        self.store = store
        self.lock_timeout = lock_timeout
        # Decisions serialise on the thread lock; the process lock keeps other vaultmem processes
        # out from a decision until its file is in place. It lives in the git directory, one per
        # repository, as the commit gate does: every process on the vault takes the same lock
        # whatever state directory it was given, and deleting the state directory (derived) never
        # leaves a holder locking a deleted file while another process locks the new one.
        self._lock = threading.RLock()
        self._process_lock = ProcessLock(
            repo.git_dir / WRITE_LOCK, lock_timeout, fallback=layout.state_dir / "write.lock"
        )
        self._inflight: dict[WriteKey, threading.Event] = {}
        self._listeners: list[NoteListener] = []
        #: The commit queue: one thread commits, grouping what queued meanwhile.
        self.commits = CommitWriter(repo)
        #: Set by the operations: every plan passes it before a byte is staged.
        self.guard: PlanGuard | None = None
        # Files with a commit still queued (its author and future), and the sha256 of what this
        # writer last put in each file: see _settle, which keeps one author's change per commit.
        self._pending: dict[str, tuple[Author | None, Future[None]]] = {}
        self._installed: dict[str, str] = {}
        #: Every queued commit recorded first, so a start after a crash words it as it would have been.
        self._journal = PendingJournal(repo.git_dir)
        self._gate = CommitGate(
            repo.git_dir / "vaultmem-commit.flock", lock_timeout, fallback=layout.state_dir / "commit.flock"
        )
        self.commits.gate = self._gate.shared
        # Bumped under the process lock by every write of every vaultmem process on this vault: a
        # value other than the last one seen means another process wrote, so rescan the catalog.
        self._generation_file = repo.git_dir / WRITE_GENERATION  # beside the lock it is read under
        self._generation = ""
        self._gen_fd: int | None = None
        #: What hidden folders hold (``.obsidian/``) is committed at most this often (hidden_commits.py).
        self._hidden = HiddenFolderClock(layout.state_dir, hidden_commit_interval)
        self._background_commits = background_commits
        self._clean_before = 0.0
        #: Whether :meth:`open` has run: the catalog holds the vault and writes may begin.
        self.opened = False
        layout.state_dir.mkdir(parents=True, exist_ok=True)

    def open(self, stop: threading.Event | None = None) -> None:
        """The start, which the opener calls (nothing may be written nor the catalog read before it):
        sweep what a crash left, scan the catalog with ``git status`` beside it, commit what was
        written but not committed, start the commit thread (``stop``: ProcessLock.acquire)."""
        layout, repo, catalog = self.layout, self.repo, self.catalog
        with self._process_lock.held(stop), self._lock:
            repo.sweep_pathspec_files()
            if needs_recovery(repo.git_dir):  # a sync round a kill interrupted: before the start-up
                # commit. Under the commit gate, which a round holds while it merges: a process whose
                # state directory (so write lock) is not the daemon's must not take its round for one
                # that was killed. A round still merging past the timeout finishes on its own.
                with contextlib.suppress(VaultBusy), self._gate.exclusive():
                    recover_at_start(repo)
            # `git status` (a subprocess: it stats every file too) runs while the catalog scans.
            with ThreadPoolExecutor(1, thread_name_prefix="vaultmem-git-status") as pool:
                pending = pool.submit(repo.pending_changes)
                leftovers: list[str] = []  # temp files a crash left behind, met by the scan's walk
                catalog.scan(temp_files=leftovers)
                remove_files(layout.root, leftovers)
                self._commit_found_at_start(pending.result())
            # Files not changed since now are committed: only later changes can be a person's.
            self._clean_before = time.time() - 2.0
            self._generation = self._read_generation()
            self.opened = True
        if self._background_commits:
            self.commits.start()

    def _commit_found_at_start(self, pending: list[str]) -> None:
        """Commit what was written but not committed (a crash) or edited while vaultmem was stopped
        (``pending``: what ``git status`` lists).

        A git lock that a running process holds does not stop the start: the commit waits in the
        queue and lands once git is free (a stale lock is removed by the attempt itself). What
        hidden folders hold is committed only when it is due (:meth:`commit_hidden_folders`).
        """
        paths = [p for p in pending if not is_never_committed(p)]
        hidden = self._hidden.due()
        if hidden:
            self._hidden.looked()
        else:
            paths = [p for p in paths if not in_hidden_folder(p)]
        self._commit_found(paths)
        if hidden and any(in_hidden_folder(p) for p in paths):
            pack_loose_objects(self.repo)

    def _commit_found(self, paths: list[str]) -> None:
        # Outside vaultmem's folder (an adopted vault) only the person writes: their edits made while
        # vaultmem was stopped are theirs, as the watcher commits them while it runs.
        theirs = [p for p in paths if not self.layout.writable(p)]
        if theirs:
            self._commit_persons_at_start(theirs)
            paths = [p for p in paths if self.layout.writable(p)]
        recorded, paths = self._journal.found(paths, lambda rel: file_hash(self.layout.root / rel))
        if recorded:  # an agent's write (or a hand edit) queued, not yet committed: its own words
            self.commits.commit_now([(r.paths, r.message, r.author) for r in recorded])
            log.info("committed %d recorded write(s) found at start", len(recorded))
        if not self.commits.waiting:
            self._journal.forget_the_dead()
        if not paths:
            return
        message = (
            f"vaultmem: record changes found at start: {names_in_subject(paths)}\n\n"
            "Writes acknowledged before a crash, or edits made while vaultmem was stopped.\n"
        )
        try:
            if self.repo.commit_paths(paths, message):
                log.info("committed %d change(s) found at start", len(paths))
        except GitError as exc:  # a held lock, or what git refuses: never a reason not to start
            log.warning("%s; vaultmem serves meanwhile and commits the changes found at start later", exc)
            self.commits.defer(paths, message)

    def commit_hidden_folders(self, *, now: bool = False) -> None:
        """Queue the commit of what changed in hidden folders (Obsidian's settings, its plugins'
        data, as the person's) when ``hidden_commit_interval`` has passed since they were last
        looked at, or ``now``: a daemon calls it at each rescan and when it stops, so a change
        reaches git within the interval and a rescan (``docs/architecture.md``, "Big files and
        hidden folders in git")."""
        if not (now or self._hidden.due()):
            return
        self._hidden.looked()
        try:
            changed = [
                p for p in self.repo.pending_changes() if in_hidden_folder(p) and not is_never_committed(p)
            ]
        except GitError as exc:  # looked at again at the next rescan, or the next start
            log.warning("could not list the changes in hidden folders: %s", exc)
            return
        if changed:
            self._commit_hand_edits(changed).add_done_callback(lambda _done: pack_loose_objects(self.repo))

    def _commit_persons_at_start(self, paths: list[str]) -> None:
        try:
            _message, describe = self._hand_edits(paths)
            self.repo.commit_paths(paths, "-", self.repo.person(), describe=describe)
        except GitError as exc:  # as below: the watcher's queue commits them once git is free
            log.warning("%s; vaultmem serves meanwhile and commits the person's edits later", exc)
            self._commit_hand_edits(paths)

    def add_listener(self, listener: NoteListener) -> None:
        self._listeners.append(listener)

    # -- the pipeline ---------------------------------------------------------------------------
    def run(
        self,
        decide: Callable[[], Plan[R]],
        *,
        tool: str,
        summary: str = "",
        keys: Sequence[WriteKey] = (),
        subject: Callable[[R], str] | None = None,
        single: bool = False,
        wait_commit: bool = False,
    ) -> Written[R]:
        """Decide, stage, install and commit one plan; return the notes written and its answer.

        ``decide`` runs under the locks once no write sharing one of ``keys`` (or one of the plan's
        paths) is in flight. The commit message names ``tool`` and every file written; its subject
        is ``<tool>: <summary>`` and the notes' names, or what ``subject`` makes of the answer.
        With ``single``, a plan writing one note is worded as a memory tool's write (its action,
        slug, id, path, kind, project and status).
        """
        self._process_lock.acquire()
        held: list[WriteKey] = []
        done = threading.Event()
        try:
            self._catch_up()
            while True:
                with self._lock:
                    busy = next((self._inflight[k] for k in keys if k in self._inflight), None)
                    if busy is None:
                        with self.store.recording() as read:
                            plan = decide()
                        if not plan.writes:
                            return Written([], plan.result)
                        for w in plan.writes:  # a person's note outside vaultmem's folder: never
                            self.layout.check_writable(w.rel)
                        paths = [WriteKey.path(w.rel) for w in plan.writes]
                        busy = next((self._inflight[k] for k in paths if k in self._inflight), None)
                        if busy is None:
                            held = [*keys, *paths]
                            for k in held:
                                self._inflight[k] = done
                            break
                busy.wait(timeout=self.lock_timeout)
            who = caller.current()
            author = author_of(who)
            staged: list[StagedWrite] = []
            try:
                if self.guard is not None:
                    plan = Plan(self.guard.check(plan.writes), plan.result)
                self._settle(plan.writes, read, author)
                staged = [StagedWrite(self.store, w.rel, w.text) for w in plan.writes]
                _stage_all(staged)
                with self._lock:
                    self._check_unchanged(plan.writes, read)
                    notes, side = self._install_all(staged, plan.writes, read, author)
                    self._bump_generation()
                    if single and len(notes) == 1 and not side:
                        text = note_message(notes[0], tool, plan.writes[0].action)
                    else:
                        words = subject(plan.result) if subject is not None else None
                        text = batch_message(tool, summary, notes, plan, side, words)
                    text += _who_line(who)
                    left = {s.rel: hashlib.sha256(s.data).hexdigest() for s in staged}
                    future = self._submit([*(n.path for n in notes), *side], text, author, hashes=left)
                    self._installed.update(left)
            except BaseException:
                for s in staged:
                    s.discard()
                raise
            finally:
                with self._lock:
                    for k in held:
                        self._inflight.pop(k, None)
                    done.set()
        finally:
            self._process_lock.release()
        for directory in {s.path.parent: s for s in staged}.values():
            directory.sync_directory()
        self._tell_listeners(notes)
        if wait_commit:
            future.result(timeout=120)
        return Written(notes, plan.result)

    def _submit(
        self,
        paths: list[str],
        message: str,
        author: Author | None,
        record: bool = True,
        describe: Callable[[list[str]], str] | None = None,
        hashes: dict[str, str] | None = None,
    ) -> Future[None]:
        """Queue a commit, remembering until it lands which files it holds and whose they are (and
        ``hashes``, the sha256 of what the write left in each, in the journal)."""
        self._journal.record(paths, message, author, hashes)
        future = self.commits.submit(paths, message, record=record, author=author, describe=describe)
        for rel in paths:
            self._pending[rel] = (author, future)

        def landed(done: Future[None]) -> None:
            for rel in paths:  # unless a later commit of the same file took its place
                if self._pending.get(rel, (None, None))[1] is done:
                    self._pending.pop(rel, None)

        future.add_done_callback(landed)
        future.add_done_callback(lambda _done: self._journal.landed())
        return future

    def _settle(self, writes: list[FileWrite], read: dict[str, str], author: Author | None) -> None:
        """Before this write replaces a file, commit another author's change still uncommitted in
        it, so that each commit holds only what its author wrote (a commit takes the file as it is
        on disk): another caller's write still queued, or a person's edit the watcher has not
        committed yet (its quiet period), which is committed now as theirs."""
        replaced = [w.rel for w in writes if not w.create]
        for rel in replaced:
            pending = self._pending.get(rel)
            if pending is not None and pending[0] != author and not pending[1].done():
                with contextlib.suppress(Exception):  # a failed commit is retried; the file is safe
                    pending[1].result(timeout=self.lock_timeout)
        maybe_hand = [rel for rel in replaced if self._maybe_edited_by_hand(rel, read.get(rel))]
        if not maybe_hand:
            return
        try:
            edited = [p for p in self.repo.pending_changes(maybe_hand) if p in maybe_hand]
            if edited:
                self._commit_hand_edits(edited).result(timeout=self.lock_timeout * 4)
        except Exception as exc:  # the write goes on; its commit then holds the person's edit too
            log.warning("could not commit a hand edit before writing over it: %s", exc)

    def _maybe_edited_by_hand(self, rel: str, read_hash: str | None) -> bool:
        """Whether ``rel`` may hold an uncommitted change by someone else: it is not what this writer
        last put there, and it changed since the start (which committed everything found)."""
        if read_hash is not None and self._installed.get(rel) == read_hash:
            return False
        try:
            return (self.layout.root / rel).stat().st_mtime >= self._clean_before
        except OSError:
            return False

    def name_taken(self, directory: str, slug: str) -> bool:
        """Whether a new note in ``directory`` may not be called ``slug``: a note, or a write in
        flight, already has that file name in that folder *or anywhere else in the vault*
        (compared case-insensitively). Names are kept unique vault-wide so that a bare
        ``[[slug]]`` link, Obsidian's shortest form, never becomes ambiguous because vaultmem
        wrote a note (a planner asks it, under the write lock)."""
        if self.catalog.name_taken(directory, slug) or self.catalog.paths_named(slug):
            return True
        return any(key.names_file(f"{slug}.md") for key in self._inflight)

    def _check_unchanged(self, writes: list[FileWrite], read: dict[str, str]) -> None:
        """Refuse the plan if a file it replaces changed since the decision read it (under the
        lock, just before the renames).

        A person's save landing while the new version was being staged would otherwise be
        overwritten. Nothing is written then, and the error says to run the call again (it will
        read the new text). Each ``StagedWrite.install`` checks its file through the descriptor it
        keeps across its rename; a plan of several is also checked here first, so that a change
        to its last file cannot leave the first ones renamed (a partial write).
        """
        replaced = [w for w in writes if not w.create and w.rel in read]
        if len(replaced) < 2:  # one file: StagedWrite.install checks it, nothing else to keep whole
            return
        changed = [w.rel for w in replaced if file_hash(self.layout.root / w.rel) != read[w.rel]]
        if changed:
            raise changed_on_disk(changed[0], len(changed) - 1)

    def _install_all(
        self, staged: list[StagedWrite], writes: list[FileWrite], read: dict[str, str], author: Author | None
    ) -> tuple[list[Note], list[str]]:
        """Rename every staged file into place; return the notes written and the side files' paths."""
        notes: list[Note] = []
        side: list[str] = []
        try:
            for s, w in zip(staged, writes, strict=True):
                note = s.install(create=w.create, parsed=w.text, expected=read.get(w.rel))
                if w.note:
                    self.catalog.put(note)
                    notes.append(note)
                else:
                    side.append(w.rel)
        except VaultmemError:
            # A file appeared where a new note was going (written by hand meanwhile): the ones
            # already renamed are real files on disk, so they are kept and committed.
            done = [*(n.path for n in notes), *side]
            if done:
                names = names_in_subject([*(n.slug for n in notes), *side])
                self._submit(done, f"vaultmem: partial batch of {len(done)} files: {names}", author)
            raise
        return notes, side

    def _tell_listeners(self, notes: list[Note]) -> None:
        for listener in self._listeners:
            try:
                listener.notes_written(notes)
            except VaultmemError as exc:  # the notes are safe on disk; the index catches up later
                log.warning("index update failed for a batch of %d notes: %s", len(notes), exc)

    # -- other vaultmem processes on this vault -------------------------------------------------
    def _generation_fd(self) -> int:
        """The marker's descriptor, opened again when the file at its path is no longer the one
        held (the state directory deleted under a running process: ``rm -rf .vaultmem``,
        ``git clean -fdx``), whose writes the other processes would otherwise never see."""
        if self._gen_fd is not None:
            try:
                here, held = self._generation_file.stat(), os.fstat(self._gen_fd)
                if (here.st_ino, here.st_dev) == (held.st_ino, held.st_dev):
                    return self._gen_fd
            except OSError:
                pass
            os.close(self._gen_fd)
            self._gen_fd = None
        self._generation_file.parent.mkdir(parents=True, exist_ok=True)
        self._gen_fd = os.open(self._generation_file, os.O_RDWR | os.O_CREAT, 0o600)
        return self._gen_fd

    def _read_generation(self) -> str:
        try:
            return os.pread(self._generation_fd(), _GENERATION_BYTES, 0).decode("ascii", "replace").strip()
        except OSError:
            return ""

    def _catch_up(self) -> None:
        """Rescan the catalog if another process wrote since this one last looked (process lock held)."""
        with self._lock:
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

    # -- around the pipeline --------------------------------------------------------------------
    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No write of this process decides while the block runs (a catalog rescan; a sync round's
        merge holds off every process's writes and commits, :meth:`exclusive`)."""
        with self._lock:
            yield

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """No write and no commit of any vaultmem process on this vault while the block runs (a
        sync round commits pending work and merges in it). Commits queued before it land first;
        after it, the other processes rescan their catalogs before their next write."""
        with self._process_lock, self._lock:
            self.commits.flush()
            with self._gate.exclusive():
                yield
            self._bump_generation()

    def commit_hand_edits(self, paths: list[str]) -> None:
        """Queue the commit of a person's edits the watcher saw (``hand edit: <path>``, ...),
        authored by the person's git identity."""
        self._commit_hand_edits(paths)

    def _commit_hand_edits(self, paths: list[str]) -> Future[None]:
        message, describe = self._hand_edits(paths)
        return self._submit(paths, message, self.repo.person(), record=False, describe=describe)

    def _hand_edits(self, paths: list[str]) -> tuple[str, Callable[[list[str]], str]]:
        """A commit of the person's edits among ``paths``: its message as queued, and the message
        from what git staged once it commits (not what a merge took; a note the person moved or
        renamed is named as one)."""
        deleted = {p for p in paths if not os.path.lexists(self.layout.root / p)}
        return hand_edit_message(paths, deleted), lambda changed: hand_edit_describe(
            self.repo, changed, deleted
        )

    def close(self) -> None:
        """Commit everything pending and save derived state.

        A commit that still fails (git locked) raises GitError after the queue has stopped; the
        files are safe on disk and the next start commits them.
        """
        if not self.opened:  # never started (a start that failed or was stopped first): nothing to save
            self.commits.close()
            return
        flushed = False
        try:
            self.commits.flush()
            flushed = not self.commits.waiting
        finally:
            self.commits.close()
            self._journal.close(remove=flushed)
            self.catalog.save_cache(unless_saved=True)
            if self._gen_fd is not None:
                os.close(self._gen_fd)
                self._gen_fd = None


def _stage_all(staged: list[StagedWrite]) -> None:
    if len(staged) <= 2:
        for s in staged:
            s.stage()
        return
    with ThreadPoolExecutor(max_workers=min(STAGE_THREADS, len(staged))) as pool:
        for future in [pool.submit(s.stage) for s in staged]:
            future.result()


def _who_line(who: caller.Caller) -> str:
    """The message's lines naming the caller (the author says who too; the client is a detail)."""
    if who is caller.INTERNAL:
        return ""
    return f"agent: {who.agent}\n" + (f"client: {who.client}\n" if who.client else "")


def note_message(note: Note, tool: str, action: str) -> str:
    """A memory tool's commit message: the tool, the action, the note, its id, kind and project."""
    return (
        f"{tool}: {action} {note.slug}\n\n"
        f"tool: {tool}\nid: {note.id or derived_id(note.path)}\nslug: {note.slug}\npath: {note.path}\n"
        f"kind: {note.kind}\nproject: {note.project or '-'}\nstatus: {note.status}\n"
    )


def batch_message(
    tool: str,
    summary: str,
    notes: list[Note],
    plan: Plan[R],
    side: Sequence[str] = (),
    subject: str | None = None,
) -> str:
    """A commit message naming the tool, the action and every file written (notes: id, slug, path).

    The subject names the notes too (``memory_store: create espresso-ratio``; several:
    ``memory_store: bulk_create 5 thoughts: a, b, c and 2 more``), so ``git log --oneline`` reads
    as an audit trail; ``subject`` replaces it when the caller can say more (a link's two ends).
    """
    actions = {w.rel: w.action for w in plan.writes}
    lines = [f"- {actions.get(rel, 'edit')} {rel}" for rel in side]
    lines += [
        f"- {actions.get(n.path, 'edit')} {n.slug} id={n.id} path={n.path}" for n in notes[:MESSAGE_LINES]
    ]
    if len(notes) > MESSAGE_LINES:
        lines.append(f"- ... and {len(notes) - MESSAGE_LINES} more")
    body = "\n".join(lines)
    if subject is None:
        names = [n.slug for n in notes] or list(side)  # side files named when no note was written
        subject = f"{tool}: {summary}" + (
            f" {names[0]}" if len(names) == 1 else f": {names_in_subject(names)}" if names else ""
        )
    return f"{subject}\n\ntool: {tool}\nfiles: {len(notes) + len(side)}\n\n{body}\n"
