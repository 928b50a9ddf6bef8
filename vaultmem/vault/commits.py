"""The commit queue: one thread makes every commit of a vault's writes, one author per commit.

Writes that queue while a commit runs are grouped into the next commit, whose message names each of
them; a run of writes by one author (an agent, the person, vaultmem itself) is one commit, so two
agents' writes never land under one name. A commit git refused (a held lock) is retried with backoff
while the files stay safe on disk; waiters get the error of the failed attempt so nobody blocks
forever. While git is busy the whole line waits, in order; a commit git refuses for a reason of its
own is retried alone and holds back no other commit. Commit subjects name what changed
(:func:`names_in_subject`, :func:`hand_edit_message`).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import socket
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from vaultmem.caller import Caller
from vaultmem.errors import GitLocked
from vaultmem.vault.history import Author, GitRepo
from vaultmem.vault.reading import shown

log = logging.getLogger(__name__)
_ALREADY_RECORDED = (
    "(no file changes: this write's content was committed with the previous commit, which took the "
    "note as this write left it)"
)


def author_of(caller: Caller) -> Author | None:
    """The author of what ``caller`` writes: an MCP agent by its token's name, the person at the
    CLI by their OS user (``user@host``, as git itself would say); None for vaultmem's own work."""
    if caller.transport == "internal":
        return None
    if caller.transport == "mcp":
        return Author(caller.agent, caller.address)
    return Author(caller.agent, f"{caller.agent}@{socket.gethostname() or 'localhost'}")


#: Notes named in a subject before it says how many more there are.
SUBJECT_NAMES = 3


def names_in_subject(names: Sequence[str], sep: str = ", ") -> str:
    """Up to :data:`SUBJECT_NAMES` names for a commit subject, then how many more."""
    shown_names = sep.join(shown(n) for n in names[:SUBJECT_NAMES])
    more = len(names) - SUBJECT_NAMES
    return f"{shown_names} and {more} more" if more > 0 else shown_names


def hand_edit_message(
    paths: Sequence[str],
    deleted: Collection[str] = (),
    renamed: Mapping[str, str] | None = None,
    added: Collection[str] = (),
) -> str:
    """The message of the watcher's commit of hand edits; a deletion says it is one, a move too.

    One file: ``hand edit: <path>`` or ``hand deletion: <path>``; one note moved or renamed (its
    old and new path, ``renamed`` mapping the new to the old): ``hand rename: <old> -> <new>``.
    Several: ``hand edits: N files (A added, R renamed, K deleted): a, b, c and 2 more``, naming the
    notes by file name, a renamed note once; the body lists each path as ``added`` (new to git:
    ``added``), ``edited``, ``deleted`` or ``renamed``. Without ``renamed`` a move reads as its new
    path edited (or added) and its old one deleted, as git's own status would without rename detection.
    """
    moves = {new: old for new, old in (renamed or {}).items() if new in paths and old in paths}
    sources = set(moves.values())
    entries = [p for p in paths if p not in sources]
    if len(entries) == 1 and entries[0] in moves:
        title = f"hand rename: {shown(moves[entries[0]])} -> {shown(entries[0])}"
    elif len(entries) == 1:
        verb = "deletion" if entries[0] in deleted else "edit"
        title = f"hand {verb}: {shown(entries[0])}"
    else:
        gone = sum(1 for p in entries if p in deleted)
        new = sum(1 for p in entries if p in added and p not in moves and p not in deleted)
        said = [
            f"{new} added" if new else "",
            f"{len(moves)} renamed" if moves else "",
            f"{gone} deleted" if gone else "",
        ]
        extra = ", ".join(w for w in said if w)
        count = f"{len(entries)} files" + (f" ({extra})" if extra else "")
        stems = [shown(p.rsplit("/", 1)[-1].removesuffix(".md")) for p in entries]
        title = f"hand edits: {count}: {names_in_subject(stems)}"

    def line(p: str) -> str:
        if p in moves:
            return f"- renamed {shown(moves[p])} -> {shown(p)}"
        verb = "deleted" if p in deleted else "added" if p in added else "edited"
        return f"- {verb} {shown(p)}"

    lines = "\n".join(line(p) for p in entries[:50])
    more = f"\n- … and {len(entries) - 50} more" if len(entries) > 50 else ""
    return f"{title}\n\nRecorded by the vaultmem watcher.\n\n{lines}{more}\n"


@dataclass(frozen=True)
class StagedChanges:
    """What git's index holds against HEAD, as a hand-edit message names it."""

    #: New path -> old path, for a file moved whole.
    renamed: dict[str, str]
    #: Paths new to git (HEAD has no file there).
    added: frozenset[str]


def staged_changes(repo: GitRepo) -> StagedChanges:
    """The renames and additions among the changes staged in git's index. A rename is a file moved
    whole (git's ``R100``, what Obsidian's move or rename does): a note deleted while a similar one
    was written is not taken for a rename of it, and the new one is an addition."""
    fields = repo.git("diff", "--cached", "--name-status", "-M", "-z", errors="surrogateescape").split("\0")
    renamed: dict[str, str] = {}
    added: set[str] = set()
    i = 0
    while i < len(fields):
        status = fields[i]
        width = 2 if status[:1] in ("R", "C") else 1  # a rename or copy names its old and new path
        if status == "R100" and i + 2 < len(fields):
            renamed[fields[i + 2]] = fields[i + 1]
        elif status[:1] in ("R", "C") and i + 2 < len(fields):
            added.add(fields[i + 2])
        elif status == "A" and i + 1 < len(fields):
            added.add(fields[i + 1])
        i += 1 + (width if status else 0)
    return StagedChanges(renamed, frozenset(added))


def hand_edit_describe(repo: GitRepo, changed: list[str], deleted: Collection[str]) -> str:
    """The message of a commit of the person's edits from what git staged (``describe`` of
    :meth:`GitRepo.commit_paths`): a moved note named as one, a file new to git as added."""
    staged = staged_changes(repo)
    return hand_edit_message(changed, deleted, staged.renamed, staged.added)


@dataclass
class _Job:
    paths: list[str]
    message: str
    #: True for an agent's write, whose message must reach history even when an earlier commit
    #: already took its content (see ``_commit``); False for the watcher's hand-edit commits.
    record: bool = True
    #: Who wrote it (None: vaultmem itself). A commit groups the writes of one author only.
    author: Author | None = None
    done: Future[None] = field(default_factory=Future)
    #: Makes the message from the paths that still differ once staged (``GitRepo.commit_paths``).
    describe: Callable[[list[str]], str] | None = None


class CommitWriter:
    """The single writer of commits. ``submit`` returns a future that resolves once committed.

    Jobs that queue while a commit runs are grouped into the next commit, whose message names each;
    one commit holds the writes of one author, so a queue holding two agents' writes (or an
    agent's and a person's) makes one commit per run of the same author, in order.
    A failed commit is retried with backoff (the files are safe on disk meanwhile); waiters get the
    error of the failed attempt so nobody blocks forever.
    """

    def __init__(self, repo: GitRepo, *, max_group: int = 256, retry_delay: float = 1.0) -> None:
        self.repo = repo
        self.max_group = max_group
        self.retry_delay = retry_delay
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._retry: list[_Job] = []
        self.commits = 0
        self._failing: set[str] = set()  # the errors of the attempts failing in a row (logged once)
        #: Held around every commit (the vault's writer passes its commit gate, so no commit lands
        #: while a sync round merges); told after every commit that landed (automatic sync rounds).
        self.gate: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext
        self.on_commit: Callable[[], None] = lambda: None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="vaultmem-git", daemon=True)
            self._thread.start()

    def submit(
        self,
        paths: Sequence[str],
        message: str,
        *,
        record: bool = True,
        author: Author | None = None,
        describe: Callable[[list[str]], str] | None = None,
    ) -> Future[None]:
        job = _Job(list(paths), message, record, author, describe=describe)
        if self._thread is None:  # no writer thread (one-shot CLI): commit inline
            # Writes whose commit failed earlier (a held index.lock) ride along with this one.
            retry, self._retry = self._retry, []
            self._commit([*retry, job])
            return job.done
        self._queue.put(job)
        return job.done

    def flush(self, timeout: float = 60.0) -> None:
        """Wait until everything submitted so far is committed (or has failed)."""
        marker = self.submit([], "")
        marker.result(timeout=timeout)

    def commit_now(self, commits: Sequence[tuple[Sequence[str], str, Author | None]]) -> None:
        """Commit each ``(paths, message, author)`` now, in order, consecutive ones of one author
        together (the writes a start found uncommitted, as their journal recorded them); one that
        fails waits for the next attempt, as a queued commit would."""
        self._commit([_Job(list(p), m, record=False, author=a) for p, m, a in commits])

    @property
    def waiting(self) -> bool:
        """Whether a commit that failed waits for its retry."""
        return bool(self._retry)

    def defer(self, paths: Sequence[str], message: str) -> None:
        """Commit ``paths`` with the next attempt (an earlier one failed: git was locked)."""
        job = _Job(list(paths), message, record=False)
        if self._thread is None:
            self._retry.append(job)  # the writer starts later, or commits inline with the next write
        else:
            self._queue.put(job)

    def close(self, timeout: float = 60.0) -> None:
        if self._thread is None:
            return
        self._queue.put(None)
        self._thread.join(timeout)
        self._thread = None

    def _loop(self) -> None:
        stop = False
        while not stop:
            timeout = self.retry_delay if self._retry else None
            try:
                first = self._queue.get(timeout=timeout)
            except queue.Empty:
                first = None if not self._retry else _Job([], "")
                if first is None:
                    continue
            if first is None:
                stop = True
                batch: list[_Job] = []
            else:
                batch = [first]
            while len(batch) < self.max_group:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                if job is None:
                    stop = True
                    break
                batch.append(job)
            jobs = self._retry + batch
            self._retry = []
            if jobs:
                self._commit(jobs)

    def _commit(self, jobs: list[_Job]) -> None:
        real = [j for j in jobs if j.paths]
        before = self.commits
        runs: list[list[_Job]] = []
        for job in real:  # consecutive writes of one author share a commit; order is kept
            if runs and runs[-1][0].author == job.author:
                runs[-1].append(job)
            else:
                runs.append([job])
        errors: list[Exception] = []
        for i, run in enumerate(runs):
            try:
                self._commit_run(run)
            except Exception as exc:  # GitError, OSError: keep the jobs, tell the waiters
                errors.append(exc)
                if str(exc) not in self._failing:  # once, not every second of a person's long rebase
                    log.warning("commit failed, will retry: %s", exc)
                    self._failing.add(str(exc))
                # git busy (a held lock, the person's rebase): every commit after this one waits,
                # in order. A refusal of this commit's own (a path git will not take) holds back
                # no other author's commit.
                locked = isinstance(exc, GitLocked)
                held = [j for later in (runs[i:] if locked else [run]) for j in later]
                self._retry.extend(held)
                for job in held:
                    if not job.done.done():
                        job.done.set_exception(exc)
                if locked:
                    break
                continue
            for job in run:
                if not job.done.done():  # a retried job's waiter was told of the failed attempt
                    job.done.set_result(None)
        if not errors:
            self._failing.clear()
        for job in jobs:  # a flush's marker: told of the first failure, if there was one
            if not job.done.done():
                if errors:
                    job.done.set_exception(errors[0])
                else:
                    job.done.set_result(None)
        if self.commits > before:
            self.on_commit()

    def _commit_run(self, run: list[_Job]) -> None:
        """One commit of ``run``'s paths, all written by one author (never while a sync round
        merges: the gate)."""
        with self.gate():
            self._commit_under_gate(run)

    def _commit_under_gate(self, run: list[_Job]) -> None:
        author = run[0].author
        paths = [p for j in run for p in j.paths]
        if len(run) == 1:
            message = run[0].message
        else:
            # A summary line per write, then each write's own message in full, so a grouped
            # commit still names every write's tool, id, slug, kind and project; the subject
            # names the first few writes, so `git log --oneline` shows them too.
            subjects = [(j.message.splitlines() or [""])[0] for j in run]
            lines = "\n".join(f"- {s}" for s in subjects)
            details = "\n\n".join(j.message.strip() for j in run)
            title = f"vaultmem: {len(run)} writes: {names_in_subject(subjects, sep='; ')}"
            message = f"{title}\n\n{lines}\n\n{details}\n"
        describe = run[0].describe if len(run) == 1 else None
        if self.repo.commit_paths(paths, message, author, describe):
            self.commits += 1
        elif any(j.record for j in run):
            # Two writes to one note in quick succession: the commit for the first took the
            # file as the second left it. Record the second's message anyway, so `git log`
            # still names every write's tool and id.
            self.repo.commit_empty(f"{message.rstrip()}\n\n{_ALREADY_RECORDED}\n", author)
            self.commits += 1
