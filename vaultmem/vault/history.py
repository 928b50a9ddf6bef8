"""Git history of the vault: the audit trail of every change, and reading it back.

The git CLI runs in a subprocess (more robust in a long-lived daemon than library objects). One
writer thread makes every commit (:mod:`vaultmem.vault.commits`); a commit's author is who wrote it
(an agent, the person, vaultmem itself), its committer vaultmem. A lock held by a person's git
(``index.lock``) gets bounded retries and then a clear error; vaultmem never deletes a lock a
process holds, and never loses the write: the file is already durable on disk and the next attempt
(or the next start) commits it. A lock nobody holds that is older than the lock timeout was left by
a git killed mid-commit: it is removed and logged (:mod:`vaultmem.vault.gitlock`).
"""

from __future__ import annotations

import datetime as dt
import getpass
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vaultmem.errors import GitBusy, GitError, GitLocked, VaultError
from vaultmem.vault.gitlock import GitLock, find_locks, inspect, lock_named_in
from vaultmem.vault.sizes import is_committable, leave_out_big

log = logging.getLogger(__name__)
AUTHOR_NAME = "vaultmem"
AUTHOR_EMAIL = "vaultmem@localhost"
_NOTHING_TO_COMMIT = ("nothing to commit", "no changes added", "nothing added to commit")
_LOCK_MARKERS = ("index.lock", "Unable to create", "another git process")
#: How `git add` refuses a path by name that the person's ignore rules leave out.
_IGNORED = "are ignored by one of your .gitignore files"
#: A commit's list of paths, written to the git directory for ``--pathspec-from-file``.
PATHSPEC_PREFIX = "vaultmem-paths-"
#: A pathspec file this old was left by a commit that was killed (a live one lasts milliseconds).
PATHSPEC_MAX_AGE_S = 3600.0
#: What git keeps in its directory while an operation of the person's is under way. A commit made
#: meanwhile is taken into the operation, or thrown away by its ``--abort`` (a reset to where it
#: began), with the files it holds (git removes a file it tracks that the reset target lacks).
_IN_PROGRESS = {
    "rebase-merge": "a rebase",
    "rebase-apply": "a rebase (or `git am`)",
    "MERGE_HEAD": "a merge",
    "CHERRY_PICK_HEAD": "a cherry-pick",
    "REVERT_HEAD": "a revert",
}


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME=AUTHOR_NAME,
        GIT_AUTHOR_EMAIL=AUTHOR_EMAIL,
        GIT_COMMITTER_NAME=AUTHOR_NAME,
        GIT_COMMITTER_EMAIL=AUTHOR_EMAIL,
        GIT_TERMINAL_PROMPT="0",
        LC_ALL="C",
        # Every path vaultmem names is a file's name, never a pattern: a note called `:memo.md` is
        # not pathspec magic (`:` = the top of the tree), `[draft] *.md` no glob.
        GIT_LITERAL_PATHSPECS="1",
    )
    return env


@dataclass(frozen=True)
class Author:
    """Who a commit says wrote it. The committer is always vaultmem, which made the commit."""

    name: str
    email: str

    def env(self) -> dict[str, str]:
        return {"GIT_AUTHOR_NAME": self.name, "GIT_AUTHOR_EMAIL": self.email}


@dataclass(frozen=True)
class Version:
    """One commit of a note's history: who wrote it and when, where the note was, how it changed."""

    commit: str
    #: The author's date, ISO 8601 with its offset.
    at: str
    author: str
    email: str
    #: The note's path in this commit (renames followed).
    path: str
    #: git's letter for the change: ``A`` added (a copy of another file too), ``M`` modified, ``R``
    #: renamed, ``D`` deleted.
    change: str
    #: The note's blob in this commit (None for a deletion): :meth:`GitRepo.blobs` reads it.
    blob: str | None
    message: str

    @property
    def subject(self) -> str:
        return (self.message.splitlines() or [""])[0]


@dataclass(frozen=True)
class BlameLine:
    """Who last wrote one line of a file (``commit`` is all zeros for a line not committed yet)."""

    commit: str
    author: str
    email: str
    at: str
    text: str


class GitRepo:
    """The vault's repository, in the vault (``.git``) or in a separate git directory."""

    def __init__(self, work_tree: Path, lock_timeout: float = 5.0, size_limit: int = 0) -> None:
        self.work_tree = work_tree
        self.lock_timeout = lock_timeout
        #: A file above this many bytes that is not a note is never committed (0: no limit).
        self.size_limit = size_limit
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

    def require_repo(self) -> None:
        """Raise :class:`VaultError` saying what to do unless :meth:`is_repo`."""
        if not self.is_repo():
            raise VaultError(
                f"{self.work_tree} is not the top of a git repository of its own; run `vaultmem init "
                f"{self.work_tree}` to make it a vault (existing notes are kept)"
            )

    def person(self) -> Author:
        """The person's git identity (``user.name``/``user.email`` of the repository or their
        global config): a hand edit is theirs. Without one, their OS user, as git would say."""
        out = self.git("config", "--get-regexp", r"^user\.(name|email)$", check=False)
        found = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
        try:
            user = getpass.getuser()
        except (KeyError, OSError):  # no name for this uid (a container)
            user = f"uid-{os.getuid()}"
        name = found.get("user.name", "").strip() or user
        return Author(name, found.get("user.email", "").strip() or f"{user}@{socket.gethostname()}")

    def _with_lock_retries(
        self, *args: str, input_bytes: bytes | None = None, author: Author | None = None
    ) -> str:
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.02
        while True:
            try:
                return self.git(*args, input_bytes=input_bytes, env=author.env() if author else None)
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

    def operation_in_progress(self) -> str | None:
        """What the person's git is in the middle of (a rebase, a merge, a cherry-pick, a revert,
        a checkout of one commit: a detached HEAD), or None. Only files are looked at: no git runs."""
        git_dir = self.git_dir
        for name, what in _IN_PROGRESS.items():
            if os.path.lexists(git_dir / name):
                return what
        head = git_dir / "HEAD"
        try:  # (a symlink is the old form of a branch's HEAD: core.preferSymlinkRefs)
            detached = not head.is_symlink() and not head.read_bytes().startswith(b"ref:")
        except OSError:
            return None
        return "a checkout of one commit (a detached HEAD)" if detached else None

    def _require_branch(self) -> None:
        """Refuse to commit while :meth:`operation_in_progress` (retryable: the commit queue waits)."""
        what = self.operation_in_progress()
        if what is not None:
            raise GitBusy(
                f"git is in the middle of {what} in {self.work_tree}: vaultmem commits nothing until it "
                "is over, so that no commit of its own is taken into it or undone by an --abort. The "
                "changes are safe on disk and are committed once it is finished or aborted (or a "
                "branch is checked out again)"
            )

    def commit_paths(
        self,
        paths: Sequence[str],
        message: str,
        author: Author | None = None,
        describe: Callable[[list[str]], str] | None = None,
    ) -> bool:
        """Commit exactly ``paths`` (vault-relative) with ``message``; False when nothing changed.

        Only the named paths are committed, so whatever a person has staged stays staged. The
        commit's author is ``author`` (vaultmem when None); its committer is always vaultmem. With
        ``describe``, the message is made from the paths that differ from HEAD once staged (a path
        another process's commit already took, such as a sync's merge, is not named).
        """
        # A folder the person replaced by a symlink (moved into a synced folder and linked back):
        # git refuses a path beyond it ("beyond a symbolic link", for good, and every commit
        # queued behind it); the symlink itself is what changed, and committing it records the
        # files that were under it as deleted, as `git add -A` would. A note in a repository of
        # its own inside the vault (a submodule, a clone) is that repository's to commit.
        unique = sorted({c for p in paths if (c := self._committed_as(p)) is not None})
        if not unique:
            return False
        self._require_branch()
        # A path that is neither on disk nor tracked (created and removed between two commits), or
        # that git cannot record (a named pipe, a socket), would make git refuse the whole
        # pathspec: leave such paths out. A deletion the person staged themselves (`git rm`,
        # `git mv`) is in HEAD but no longer in git's index: `git add` would refuse its path, the
        # commit takes it.
        # A conflict the person is resolving (a `git stash pop` that conflicted: no merge is in
        # progress, yet the index holds both sides): `git add` would mark it resolved, conflict
        # markers and all. It is theirs to resolve and commit.
        unmerged = self._unmerged()
        unique = [p for p in unique if p not in unmerged]
        in_index, staged_gone = self._tracked(unique)
        unique = [
            p for p in unique if p in in_index or p in staged_gone or is_committable(self.work_tree / p)
        ]
        unique = leave_out_big(self.work_tree, unique, self.size_limit)  # (vault/sizes.py says why)
        if not unique:
            return False
        to_add = [p for p in unique if p not in staged_gone]
        # Paths and message go through stdin and a file, not argv: a batch of thousands of notes
        # would pass the kernel's argument limits (128 KiB for one argument, a few MiB in all). The
        # file lives in the git directory (never synced, never committed, swept at start if a kill
        # left it), not in the system temp folder.
        try:
            self._add(to_add)
        except GitError as exc:
            # A note the person keeps out of git (.gitignore, .git/info/exclude): git refuses to
            # add it by name, and the whole commit (and every one queued behind it) failed, for
            # good. Their choice: such a path is left out, the others are committed.
            if _IGNORED not in str(exc):
                raise
            ignored = self._ignored(to_add)
            unique = [p for p in unique if p not in ignored]
            if not unique:
                return False
            to_add = [p for p in to_add if p not in ignored]
            self._add(to_add)
        listed = "\0".join(unique).encode("utf-8", "surrogateescape")  # a name's own bytes
        if describe is not None:
            # --no-renames: a rename would list only the new name, and leave the deletion staged
            out = self.git("diff", "--cached", "--name-only", "--no-renames", "-z", errors="surrogateescape")
            staged = set(out.split("\0"))
            unique = [p for p in unique if p in staged]
            if not unique:
                return False
            listed, message = "\0".join(unique).encode("utf-8", "surrogateescape"), describe(unique)
        with tempfile.NamedTemporaryFile(prefix=PATHSPEC_PREFIX, dir=self.git_dir, delete=False) as spec:
            spec.write(listed)
        try:
            self._with_lock_retries(
                "commit", "-q", "--no-verify", "--allow-empty-message", "-F", "-",
                f"--pathspec-from-file={spec.name}", "--pathspec-file-nul",
                input_bytes=message.encode("utf-8", "replace"), author=author,
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

    def _committed_as(self, rel: str) -> str | None:
        """``rel``; or the symlinked folder on its way (the nearest the root); or None when a
        folder on its way is a repository of its own (a submodule or a clone: it has a ``.git``)."""
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            leading = self.work_tree / "/".join(parts[:depth])
            if leading.is_symlink():
                return "/".join(parts[:depth])
            if os.path.lexists(leading / ".git"):
                return None
        return rel

    def _unmerged(self) -> frozenset[str]:
        """The paths git's index holds unmerged (a conflict not resolved yet)."""
        out = self.git("ls-files", "-u", "-z", errors="surrogateescape")
        return frozenset(entry.split("\t", 1)[1] for entry in out.split("\0") if "\t" in entry)

    def _add(self, paths: Sequence[str]) -> None:
        if paths:
            self._with_lock_retries(
                "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul",
                input_bytes="\0".join(paths).encode("utf-8", "surrogateescape"),
            )  # fmt: skip

    def _ignored(self, paths: Sequence[str]) -> frozenset[str]:
        """Those of ``paths`` git ignores and does not track."""
        listed = "\0".join(paths).encode("utf-8", "surrogateescape")
        # (paths, not pathspecs, to check-ignore, which refuses the literal setting of _git_env)
        plain = {"GIT_LITERAL_PATHSPECS": "0"}
        out = self.run("check-ignore", "-z", "--stdin", input_bytes=listed, check=False, env=plain).stdout
        return frozenset(out.decode("utf-8", "surrogateescape").split("\0")) - {""}

    def commit_empty(self, message: str, author: Author | None = None) -> None:
        """A commit that changes no file: an audit line for a write an earlier commit carried.

        Made with plumbing on HEAD's tree, so nothing a person has staged is swept into it.
        """
        self._require_branch()
        head = self.git("rev-parse", "HEAD").strip()
        tree = self.git("rev-parse", "HEAD^{tree}").strip()
        env = author.env() if author else None
        new = self.git(
            "commit-tree", tree, "-p", head, "-F", "-", input_bytes=message.encode("utf-8"), env=env
        ).strip()
        self._with_lock_retries("update-ref", "-m", "vaultmem: audit line", "HEAD", new, head)

    def _tracked(self, paths: Sequence[str]) -> tuple[frozenset[str], frozenset[str]]:
        """Of ``paths`` gone from disk: those in git's index, and those whose deletion is staged
        already (in HEAD, not in the index)."""
        missing = [p for p in paths if not is_committable(self.work_tree / p)]
        if not missing:
            return frozenset(), frozenset()
        out = self.git("ls-files", "-z", "--", *missing, errors="surrogateescape")
        in_index = frozenset(p for p in out.split("\0") if p)
        rest = [p for p in missing if p not in in_index]
        if not rest:
            return in_index, frozenset()
        out = self.git(
            "ls-tree", "-z", "--name-only", "HEAD", "--", *rest, check=False, errors="surrogateescape"
        )
        return in_index, frozenset(p for p in out.split("\0") if p) & set(rest)

    def pending_changes(self, among: Sequence[str] | None = None) -> list[str]:
        """Vault-relative paths git sees as changed or untracked (ignored files excluded); only
        those ``among`` the given ones when given (a few: they are passed as arguments)."""
        limit = ["--", *among] if among is not None and len(among) <= 200 else []
        out = self.git(
            "status", "--porcelain=v1", "-z", "--untracked-files=all", *limit,
            errors="surrogateescape", env={"GIT_LITERAL_PATHSPECS": "1"} if limit else None,
        )  # fmt: skip
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

    def versions(self, path: str) -> list[Version]:
        """Every commit that changed the file now at ``path``, newest first, renames followed
        (a merge counts with what it changed against its first parent)."""
        fmt = "%x1e%H%x1f%aI%x1f%an%x1f%ae%x1f%B%x1f"
        out = self.git(
            "log", "--follow", "--raw", "--no-abbrev", "-z", "--diff-merges=first-parent",
            f"--format={fmt}", "--", path, check=False, errors="surrogateescape",
        )  # fmt: skip
        found: list[Version] = []
        for record in out.split("\x1e")[1:]:
            head, _, raw = record.rpartition("\x1f")
            sha, at, name, email, body = [*head.split("\x1f", 4), "", "", "", ""][:5]
            fields = raw.lstrip("\0\n").split("\0")  # ":<modes> <old blob> <new blob> <letter>", paths
            if len(fields) < 2 or not fields[0].startswith(":"):
                continue  # a merge that left this file as its first parent had it
            meta = fields[0].split()
            letter, blob = meta[-1][:1], meta[3]
            where = fields[2] if letter in "RC" and len(fields) > 2 else fields[1]
            # `--follow` takes a new file for a copy of any similar one already there (a memory much
            # like an older one): the note was made here, older commits are the other's (first_added)
            copied, gone = letter == "C", set(blob) == {"0"}
            change = "A" if copied else letter
            found.append(Version(sha, at, name, email, where, change, None if gone else blob, body.strip()))
            if copied:
                break
        return found

    def first_added(self, path: str) -> int:
        """How early git first recorded the file now at ``path``: the number of commits in the
        history of the commit that added it (exact within one second too), renames followed but
        not a copy's (``--follow`` takes a copy for its original); a file no commit holds is later
        than every one."""
        out = self.git(
            "log", "--follow", "--format=%x00%H", "--name-status", "--", path, check=False,
            errors="surrogateescape",
        )  # fmt: skip
        born = ""
        for record in out.split("\0")[1:]:  # newest first: "<commit>\n\n<letter>[score]\t<paths>"
            commit, _, change = record.strip().partition("\n")
            letter = change.strip()[:1]
            if letter in ("A", "C"):
                born = commit
            if letter == "C":  # made as a copy here: what is older is its original's history
                break
        if not born:
            return sys.maxsize
        count = self.git("rev-list", "--count", born, check=False).strip()
        return int(count) if count.isdigit() else sys.maxsize

    def blobs(self, shas: Sequence[str]) -> list[bytes | None]:
        """The content of each blob (one ``git cat-file --batch`` for all); None where missing."""
        if not shas:
            return []
        out = self.run("cat-file", "--batch", input_bytes="".join(f"{s}\n" for s in shas).encode()).stdout
        found: list[bytes | None] = []
        at = 0
        for _ in shas:
            end = out.index(b"\n", at)
            header = out[at:end].split()
            if len(header) < 3 or header[1] != b"blob":
                found.append(None)
                at = end + 1
                continue
            size = int(header[2])
            found.append(out[end + 1 : end + 1 + size])
            at = end + 1 + size + 1
        return found

    def blame(self, path: str) -> list[BlameLine]:
        """Who last wrote each line of the file as it is on disk (``git blame``, renames followed)."""
        out = self.git("blame", "--porcelain", "--", path, errors="surrogateescape").split("\n")
        info: dict[str, dict[str, str]] = {}
        lines: list[BlameLine] = []
        sha: str | None = None
        for line in out:
            if line.startswith("\t") and sha is not None:  # the line itself, after its commit's header
                about = info[sha]
                when = dt.datetime.fromtimestamp(int(about.get("author-time", "0")), dt.UTC).isoformat()
                email = about.get("author-mail", "").strip("<>")
                lines.append(BlameLine(sha, about.get("author", ""), email, when, line[1:]))
                sha = None
            elif sha is None:
                if line:
                    sha = line.split(" ", 1)[0]
                    info.setdefault(sha, {})
            else:  # "author X", "author-time 17...": given the first time a commit appears
                key, _, value = line.partition(" ")
                info[sha][key] = value
        return lines


def _run(args: list[str], cwd: Path | None, env: dict[str, str]) -> str:
    try:
        result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, timeout=120)
    except FileNotFoundError as exc:
        raise GitError("git is not installed; install git and retry") from exc
    if result.returncode != 0:
        raise GitError(f"{' '.join(args[:3])} failed: {result.stderr.decode('utf-8', 'replace').strip()}")
    return result.stdout.decode("utf-8", "replace")
