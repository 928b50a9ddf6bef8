"""Git history of the vault: the audit trail of every change.

The git CLI runs in a subprocess (more robust in a long-lived daemon than library objects). One
writer thread makes every commit, grouping writes that queue up under load into one commit that
names each of them. A lock held by a person's git (``index.lock``) gets bounded retries and then a
clear error; vaultmem never deletes a lock a process holds, and never loses the write: the file is
already durable on disk and the next attempt (or the next start) commits it. A lock nobody holds
that is older than the lock timeout was left by a git killed mid-commit: it is removed and logged
(:mod:`vaultmem.vault.gitlock`).
"""

from __future__ import annotations

import logging
import os
import queue
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from vaultmem.errors import GitError, GitLocked
from vaultmem.vault.gitlock import GitLock, find_locks, inspect, lock_named_in
from vaultmem.vault.reading import shown

log = logging.getLogger(__name__)
_ALREADY_RECORDED = (
    "(no file changes: this write's content was committed with the previous commit, which took the "
    "note as this write left it)"
)

AUTHOR_NAME = "vaultmem"
AUTHOR_EMAIL = "vaultmem@localhost"
_NOTHING_TO_COMMIT = ("nothing to commit", "no changes added", "nothing added to commit")
_LOCK_MARKERS = ("index.lock", "Unable to create", "another git process")
#: A commit's list of paths, written to the git directory for ``--pathspec-from-file``.
PATHSPEC_PREFIX = "vaultmem-paths-"
#: A pathspec file this old was left by a commit that was killed (a live one lasts milliseconds).
PATHSPEC_MAX_AGE_S = 3600.0


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME=AUTHOR_NAME,
        GIT_AUTHOR_EMAIL=AUTHOR_EMAIL,
        GIT_COMMITTER_NAME=AUTHOR_NAME,
        GIT_COMMITTER_EMAIL=AUTHOR_EMAIL,
        GIT_TERMINAL_PROMPT="0",
        LC_ALL="C",
    )
    return env


class Commit(TypedDict):
    """One commit of a note's history."""

    commit: str
    date: str
    author: str
    message: str


class GitRepo:
    """The vault's repository, in the vault (``.git``) or in a separate git directory."""

    def __init__(self, work_tree: Path, lock_timeout: float = 5.0) -> None:
        self.work_tree = work_tree
        self.lock_timeout = lock_timeout
        self._env = _git_env()
        self._git_dir: Path | None = None

    @property
    def git_dir(self) -> Path:
        """The repository's git directory (``.git``, or a separate one for a synced vault)."""
        if self._git_dir is None:
            self._git_dir = Path(self.git("rev-parse", "--absolute-git-dir").strip())
        return self._git_dir

    def sweep_pathspec_files(self, older_than_s: float = PATHSPEC_MAX_AGE_S) -> int:
        """Remove pathspec files a commit killed mid-way left in the git directory; return how many.

        Only old ones: another vaultmem process on the same vault may be committing right now.
        """
        removed = 0
        now = time.time()
        try:
            leftovers = list(self.git_dir.glob(f"{PATHSPEC_PREFIX}*"))
        except (OSError, GitError):
            return 0
        for path in leftovers:
            try:
                if now - path.stat().st_mtime > older_than_s:
                    path.unlink()
                    removed += 1
            except OSError:
                continue
        return removed

    @staticmethod
    def init(work_tree: Path, git_dir: Path | None = None) -> GitRepo:
        """Create the repository (``git init``, or ``--separate-git-dir`` for a synced vault)."""
        args = ["git", "init", "-q", "-b", "main"]
        if git_dir is not None:
            args += ["--separate-git-dir", str(git_dir)]
        args.append(str(work_tree))
        _run(args, cwd=None, env=_git_env())
        return GitRepo(work_tree)

    def run(
        self,
        *args: str,
        check: bool = True,
        input_bytes: bytes | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run a git command in the work tree; its output as bytes (a blob, say).

        ``env`` adds variables to vaultmem's git environment (a sync's ssh setup, say).
        """
        base = ["git", "-c", "core.quotepath=off", "-c", "commit.gpgsign=false"]
        result = subprocess.run(
            [*base, *args],
            cwd=self.work_tree,
            env={**self._env, **env} if env else self._env,
            input=input_bytes,
            capture_output=True,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            detail = (result.stderr or result.stdout).decode("utf-8", "replace").strip()
            raise GitError(f"git {' '.join(args[:2])} failed in {self.work_tree}: {detail}")
        return result

    def git(
        self,
        *args: str,
        check: bool = True,
        input_bytes: bytes | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 120,
        errors: str = "replace",
    ) -> str:
        """Run a git command in the work tree and return its standard output.

        ``errors="surrogateescape"`` keeps paths that are not UTF-8 usable as file names (git
        prints a path's bytes as they are, with ``core.quotepath=off``).
        """
        result = self.run(*args, check=check, input_bytes=input_bytes, env=env, timeout=timeout)
        return result.stdout.decode("utf-8", errors)

    def is_repo(self) -> bool:
        """True when the work tree is the top of a git repository of its own.

        A folder inside another repository (notes kept in a project's repo, say) is not one: its
        commits would land in that repository, and ``git add -A`` would take the whole of it.
        """
        try:
            top = self.git("rev-parse", "--show-toplevel").strip()
        except GitError:
            return False
        return bool(top) and Path(top).resolve() == Path(self.work_tree).expanduser().resolve()

    def _with_lock_retries(self, *args: str, input_bytes: bytes | None = None) -> str:
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.02
        while True:
            try:
                return self.git(*args, input_bytes=input_bytes)
            except GitError as exc:
                if not any(m in str(exc) for m in _LOCK_MARKERS):
                    raise
                lock = lock_named_in(str(exc), self.git_dir)
                if lock is not None and self.remove_if_stale(lock):
                    continue  # a lock a killed git left behind: gone now, try again at once
                if time.monotonic() >= deadline:
                    shown_lock = lock.name if lock is not None else "index.lock"
                    raise GitLocked(
                        f"git is locked by another process ({shown_lock}) and stayed locked for "
                        f"{self.lock_timeout:.0f}s; vaultmem leaves a lock a running process holds alone. "
                        "The change is safe on disk and will be committed on the next attempt: finish "
                        "or abort the other git command"
                    ) from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.5)

    def remove_if_stale(self, lock: Path) -> bool:
        """Remove ``lock`` if it is stale (older than the lock timeout, held by no process, no git
        running in the repository: see :mod:`vaultmem.vault.gitlock`); True if it is gone now."""
        state = inspect(lock, self.work_tree, self.git_dir)
        if state is None:
            return True  # released meanwhile
        if not state.stale(self.lock_timeout):
            return False
        try:
            lock.unlink()
        except FileNotFoundError:
            return True
        except OSError as exc:
            log.warning("could not remove the stale git lock %s: %s", lock, exc)
            return False
        log.warning(
            "removed a stale git lock %s: %.0f s old and no process held it open (a git killed "
            "mid-commit, say by a supervisor stopping the whole process group)",
            lock,
            state.age_s,
        )
        return True

    def locks(self) -> list[GitLock]:
        """git's lock files in this repository now, live or stale (``vaultmem doctor`` lists them)."""
        try:
            return find_locks(self.work_tree, self.git_dir)
        except (OSError, GitError):
            return []

    def commit_paths(self, paths: Sequence[str], message: str) -> bool:
        """Commit exactly ``paths`` (vault-relative) with ``message``; False when nothing changed.

        Only the named paths are committed, so whatever a person has staged stays staged.
        """
        unique = sorted(set(paths))
        if not unique:
            return False
        # A path that is neither on disk nor tracked (created and removed between two commits), or
        # that git cannot record (a named pipe, a socket), would make git refuse the whole
        # pathspec: leave such paths out.
        tracked_missing = self._tracked(unique)
        unique = [p for p in unique if p in tracked_missing or _committable(self.work_tree / p)]
        if not unique:
            return False
        # Paths and message go through stdin and a file, not argv: a batch of thousands of notes
        # would pass the kernel's argument limits (128 KiB for one argument, a few MiB in all). The
        # file lives in the git directory (never synced, never committed, swept at start if a kill
        # left it), not in the system temp folder.
        listed = "\0".join(unique).encode("utf-8", "surrogateescape")  # a name's own bytes
        self._with_lock_retries(
            "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", input_bytes=listed
        )
        with tempfile.NamedTemporaryFile(prefix=PATHSPEC_PREFIX, dir=self.git_dir, delete=False) as spec:
            spec.write(listed)
        try:
            self._with_lock_retries(
                "commit", "-q", "--no-verify", "--allow-empty-message", "-F", "-",
                f"--pathspec-from-file={spec.name}", "--pathspec-file-nul",
                input_bytes=message.encode("utf-8", "replace"),
            )  # fmt: skip
        except GitError as exc:
            # Another commit already took these paths' current content (git words it three ways;
            # "nothing added" is the one when untracked files lie elsewhere in the vault).
            if any(m in str(exc) for m in _NOTHING_TO_COMMIT):
                return False
            raise
        finally:
            Path(spec.name).unlink(missing_ok=True)
        return True

    def commit_empty(self, message: str) -> None:
        """A commit that changes no file: an audit line for a write an earlier commit carried.

        Made with plumbing on HEAD's tree, so nothing a person has staged is swept into it.
        """
        head = self.git("rev-parse", "HEAD").strip()
        tree = self.git("rev-parse", "HEAD^{tree}").strip()
        new = self.git(
            "commit-tree", tree, "-p", head, "-F", "-", input_bytes=message.encode("utf-8")
        ).strip()
        self._with_lock_retries("update-ref", "-m", "vaultmem: audit line", "HEAD", new, head)

    def _tracked(self, paths: Sequence[str]) -> frozenset[str]:
        missing = [p for p in paths if not _committable(self.work_tree / p)]
        if not missing:
            return frozenset()
        out = self.git("ls-files", "-z", "--", *missing, errors="surrogateescape")
        return frozenset(p for p in out.split("\0") if p)

    def pending_changes(self) -> list[str]:
        """Vault-relative paths git sees as changed or untracked (ignored files excluded)."""
        out = self.git("status", "--porcelain=v1", "-z", "--untracked-files=all", errors="surrogateescape")
        paths: list[str] = []
        records = out.split("\0")
        i = 0
        while i < len(records):
            record = records[i]
            i += 1
            if len(record) < 4:
                continue
            status, path = record[:2], record[3:]
            paths.append(path)
            if "R" in status or "C" in status:
                paths.append(records[i])  # the rename's source path follows
                i += 1
        return paths

    def commit_all_pending(self, message: str, include: Callable[[str], bool] | None = None) -> list[str]:
        """Commit every pending change in the work tree (those ``include`` accepts); return the paths."""
        paths = [p for p in self.pending_changes() if include is None or include(p)]
        if paths and self.commit_paths(paths, message):
            return paths
        return []

    def log_for(self, path: str) -> list[Commit]:
        """The history of one note, following renames: newest first."""
        fmt = "%H%x1f%aI%x1f%an%x1f%B%x1e"
        out = self.git("log", "--follow", f"--format={fmt}", "--", path, check=False)
        entries = []
        for record in out.split("\x1e"):
            record = record.strip("\n")
            if not record:
                continue
            sha, date, author, body = [*record.split("\x1f"), "", "", ""][:4]
            entries.append(Commit(commit=sha, date=date, author=author, message=body.strip()))
        return entries


def _committable(path: Path) -> bool:
    """True for what git can record at ``path``: a file or a symlink (not a pipe, not a socket)."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


#: Notes named in a subject before it says how many more there are.
SUBJECT_NAMES = 3


def names_in_subject(names: Sequence[str], sep: str = ", ") -> str:
    """Up to :data:`SUBJECT_NAMES` names for a commit subject, then how many more."""
    shown_names = sep.join(shown(n) for n in names[:SUBJECT_NAMES])
    more = len(names) - SUBJECT_NAMES
    return f"{shown_names} and {more} more" if more > 0 else shown_names


def hand_edit_message(paths: Sequence[str], deleted: Collection[str] = ()) -> str:
    """The message of the watcher's commit of hand edits; a deletion says it is one.

    One file: ``hand edit: <path>`` or ``hand deletion: <path>``. Several: ``hand edits: N files
    (K deleted): a, b, c and 2 more``, naming the notes by file name; the body lists each path.
    """
    if len(paths) == 1:
        verb = "deletion" if paths[0] in deleted else "edit"
        title = f"hand {verb}: {shown(paths[0])}"
    else:
        gone = sum(1 for p in paths if p in deleted)
        count = f"{len(paths)} files" + (f" ({gone} deleted)" if gone else "")
        stems = [shown(p.rsplit("/", 1)[-1].removesuffix(".md")) for p in paths]
        title = f"hand edits: {count}: {names_in_subject(stems)}"
    lines = "\n".join(f"- {'deleted' if p in deleted else 'edited'} {shown(p)}" for p in paths[:50])
    more = f"\n- … and {len(paths) - 50} more" if len(paths) > 50 else ""
    return f"{title}\n\nRecorded by the vaultmem watcher.\n\n{lines}{more}\n"


def _run(args: list[str], cwd: Path | None, env: dict[str, str]) -> str:
    try:
        result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, timeout=120)
    except FileNotFoundError as exc:
        raise GitError("git is not installed; install git and retry") from exc
    if result.returncode != 0:
        raise GitError(f"{' '.join(args[:3])} failed: {result.stderr.decode('utf-8', 'replace').strip()}")
    return result.stdout.decode("utf-8", "replace")


@dataclass
class _Job:
    paths: list[str]
    message: str
    #: True for an agent's write, whose message must reach history even when an earlier commit
    #: already took its content (see ``_commit``); False for the watcher's hand-edit commits.
    record: bool = True
    done: Future[None] = field(default_factory=Future)


class CommitWriter:
    """The single writer of commits. ``submit`` returns a future that resolves once committed.

    Jobs that queue while a commit runs are grouped into the next commit, whose message names each.
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

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="vaultmem-git", daemon=True)
            self._thread.start()

    def submit(self, paths: Sequence[str], message: str, *, record: bool = True) -> Future[None]:
        job = _Job(list(paths), message, record)
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
        try:
            if real:
                paths = [p for j in real for p in j.paths]
                if len(real) == 1:
                    message = real[0].message
                else:
                    # A summary line per write, then each write's own message in full, so a grouped
                    # commit still names every write's tool, id, slug, kind and project; the
                    # subject names the first few writes, so `git log --oneline` shows them too.
                    subjects = [(j.message.splitlines() or [""])[0] for j in real]
                    lines = "\n".join(f"- {s}" for s in subjects)
                    details = "\n\n".join(j.message.strip() for j in real)
                    title = f"vaultmem: {len(real)} writes: {names_in_subject(subjects, sep='; ')}"
                    message = f"{title}\n\n{lines}\n\n{details}\n"
                if self.repo.commit_paths(paths, message):
                    self.commits += 1
                elif any(j.record for j in real):
                    # Two writes to one note in quick succession: the commit for the first took the
                    # file as the second left it. Record the second's message anyway, so `git log`
                    # still names every write's tool and id.
                    self.repo.commit_empty(f"{message.rstrip()}\n\n{_ALREADY_RECORDED}\n")
                    self.commits += 1
        except Exception as exc:  # GitError, OSError: keep the jobs, tell the waiters
            log.warning("commit failed, will retry: %s", exc)
            self._retry.extend(real)
            for job in jobs:
                if not job.done.done():
                    job.done.set_exception(exc)
            return
        for job in jobs:
            if not job.done.done():
                job.done.set_result(None)
