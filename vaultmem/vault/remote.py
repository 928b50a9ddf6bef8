"""Many machines, one memory: one sync round with the vault repository's git remote, and clone.

The remote is the repository's own (``origin`` unless told otherwise), reached with the person's
git setup (ssh keys, credential helpers); vaultmem stores no credentials. A round:

1. finishes or rolls back a round a crash interrupted (``merge_state.recover``);
2. fetches the remote's branch (outside the write lock: the network may be slow);
3. under the write lock: commits pending work (a person's edits are never discarded), then merges
   the fetched commit: a fast-forward when this machine has nothing new, else a merge commit whose
   notes both sides changed are merged field by field (``notes/merge.py``, in this process, see
   ``merge_driver.py``); never a rebase, never rewritten history;
4. pushes (never forced). A push the remote rejects because it moved meanwhile goes back to 2,
   at most ``max_attempts`` times in all.

The report says what came in (the paths the merge changed in the work tree, from the diff, so the
index re-reads only those), what went out, the ahead/behind counts and any error. Network and
remote errors are reported, not raised: the vault keeps working offline and the next round tries
again.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from vaultmem.config import memory_home
from vaultmem.errors import GitError, GitLocked, InvalidInput, VaultBusy, VaultError
from vaultmem.vault.detours import record_detour
from vaultmem.vault.history import GitRepo
from vaultmem.vault.init import init_vault
from vaultmem.vault.layout import in_home, is_never_committed
from vaultmem.vault.locks import flocked
from vaultmem.vault.merge_driver import clear_records, configure, records_path
from vaultmem.vault.merge_state import (
    Marker,
    abandon,
    clear_marker,
    conclude,
    notes_left_unmerged,
    recover,
    write_marker,
)

#: Variables of the person's environment a fetch, push or clone needs (ssh and proxy setup);
#: every other ``GIT_*`` variable is kept out of vaultmem's git, as for its commits.
REMOTE_ENV = (
    "GIT_SSH", "GIT_SSH_COMMAND", "GIT_SSH_VARIANT", "GIT_ASKPASS", "GIT_PROXY_COMMAND",
    "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "GIT_HTTP_USER_AGENT",
)  # fmt: skip
_REJECTED = ("[rejected]", "non-fast-forward", "fetch first", "stale info", "cannot lock ref")
_NO_BRANCH = ("couldn't find remote ref", "could not find remote ref")
_DIRTY = ("would be overwritten by merge", "commit your changes or stash them")
#: What git (ssh, curl) says when the remote cannot be reached, and when it refuses the person.
_OFFLINE = (
    "could not resolve host", "could not resolve hostname", "temporary failure in name resolution",
    "connection refused", "connection timed out", "operation timed out", "network is unreachable",
    "no route to host", "failed to connect", "connection reset", "connection closed",
    "ssh: connect to host", "couldn't connect to server",
)  # fmt: skip
_AUTH = (
    "authentication failed", "permission denied", "could not read username", "could not read password",
    "terminal prompts disabled", "access denied", "invalid username or password",
    "the requested url returned error: 401", "the requested url returned error: 403",
    "host key verification failed",
)  # fmt: skip
#: What a push into a repository with a work tree (another machine's vault) is refused with.
_CHECKED_OUT = "refusing to update checked out branch"
#: The kinds of error a report can end on (``SyncReport.error_kind``).
ErrorKind = Literal["no_remote", "offline", "auth", "busy", "remote", "git"]
ROUND_LOCK = "vaultmem-round.flock"
PENDING_MESSAGE = (
    "vaultmem sync: record changes made before the sync\n\nEdits not yet committed when the sync began."
)


def remote_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in REMOTE_ENV}


class SyncFailed(GitError):
    """A round could not finish; ``kind`` says why (the report's ``error_kind``)."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind


def network_failure(remote: str, action: str, detail: str) -> SyncFailed:
    """The error of a fetch or push git could not make, worded for what the person can do."""
    lowered = detail.lower()
    if any(m in lowered for m in _AUTH):
        return SyncFailed(
            "auth",
            f"the remote {remote!r} refused access ({detail}); vaultmem uses your own git setup and "
            f"stores no credentials: check that `git {action} {remote}` works in the vault (an ssh key "
            "loaded in ssh-agent, a credential helper) and sync again",
        )
    if any(m in lowered for m in _OFFLINE):
        return SyncFailed(
            "offline",
            f"cannot reach the remote {remote!r} ({detail}): offline, or the server is down. Nothing "
            "is lost: vaultmem keeps working here and the next sync sends and fetches what is waiting",
        )
    if _CHECKED_OUT in lowered:
        return SyncFailed(
            "remote",
            f"the remote {remote!r} is a vault itself (a repository with its branch checked out, another "
            "machine's vault): git does not push into it, so this machine's notes never reach it. Make "
            "a bare repository for the machines to meet at (`git init --bare -b main memory.git`, on a "
            "NAS, a server or one of the machines), push the vault there and point every vault's remote "
            "at it (`git remote set-url origin URL`); see docs/sync.md",
        )
    return SyncFailed("remote", f"could not {action} {remote!r}: {detail}; check its address and your access")


@dataclass(frozen=True)
class ChangedPath:
    """A path a merge changed in the work tree."""

    path: str
    change: Literal["added", "modified", "deleted"]


@dataclass
class SyncReport:
    """What one round did. ``ok`` is False when it ended on an error (``errors``)."""

    remote: str
    branch: str
    ok: bool = True
    #: Pending paths committed before merging.
    committed: list[str] = field(default_factory=list)
    #: What came in: every path the merge changed here (for the index: re-read only these).
    incoming: list[ChangedPath] = field(default_factory=list)
    #: What went out: the paths the pushed commits changed on the remote.
    outgoing: list[str] = field(default_factory=list)
    pushed_commits: int = 0
    merge_commit: str | None = None
    fast_forward: bool = False
    #: One line per file merged by more than taking one side (the merge commit's message).
    merged: list[str] = field(default_factory=list)
    #: (conflict note, original): a side a merge could not keep, kept beside the original.
    conflict_files: list[tuple[str, str]] = field(default_factory=list)
    #: (path, new path): a note another machine's note displaced, filed by a new name.
    renamed: list[tuple[str, str]] = field(default_factory=list)
    ahead: int = 0
    behind: int = 0
    attempts: int = 0
    recovery: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: Why the round ended on an error: no_remote, offline, auth (refused), busy (another round or
    #: git held the vault too long), remote (any other refusal), git (a local problem).
    error_kind: ErrorKind | None = None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view (``vaultmem sync --json``)."""
        return asdict(self)


class VaultSync:
    """Sync rounds of one vault repository with one remote.

    ``commit_pending`` commits whatever is not committed yet (the daemon flushes its commit queue
    and the watcher's hand edits; the default commits every pending path). ``write_lock`` returns
    the lock that keeps the daemon's writes out of the work tree while the round commits and
    merges; ``after_merge`` is told, still inside it, the paths each merge changed (the catalog
    reads them before any write decides again). ``checkpoint`` is called with the name of each
    step, for tests that kill a round there. One round runs at a time on a repository, across
    processes (an ``flock`` in the git directory, or at ``round_fallback`` where the git
    directory refuses ``flock``): a second one waits up to ``round_timeout``.
    """

    def __init__(
        self,
        repo: GitRepo,
        remote: str = "origin",
        *,
        commit_pending: Callable[[], list[str]] | None = None,
        write_lock: Callable[[], AbstractContextManager[object]] | None = None,
        max_attempts: int = 3,
        network_timeout: float = 300.0,
        checkpoint: Callable[[str], None] | None = None,
        after_merge: Callable[[list[ChangedPath]], None] | None = None,
        round_timeout: float = 600.0,
        round_fallback: Path | None = None,
    ) -> None:
        if not remote or remote.startswith("-") or any(c.isspace() for c in remote):
            raise InvalidInput(f"{remote!r} is not a git remote name")
        self.repo = repo
        self.remote = remote
        self.commit_pending = commit_pending or self._commit_all_pending
        self.write_lock = write_lock or contextlib.nullcontext
        self.max_attempts = max(1, max_attempts)
        self.network_timeout = network_timeout
        self.checkpoint = checkpoint or (lambda step: None)
        self.after_merge = after_merge or (lambda changed: None)
        self.round_timeout = round_timeout
        self.round_fallback = round_fallback

    # -- setup --------------------------------------------------------------------------------------
    def _commit_all_pending(self) -> list[str]:
        return self.repo.commit_all_pending(PENDING_MESSAGE, include=lambda rel: not is_never_committed(rel))

    def branch(self) -> str:
        name = self.repo.git("symbolic-ref", "--short", "-q", "HEAD", check=False).strip()
        if not name:
            raise GitError(f"{self.repo.work_tree} is on a detached HEAD; check out a branch and sync again")
        return name

    def has_remote(self) -> bool:
        return self.repo.run("remote", "get-url", self.remote, check=False).returncode == 0

    @property
    def tracking_ref(self) -> str:
        return f"refs/remotes/{self.remote}/{self.branch()}"

    def _rev(self, spec: str) -> str | None:
        return self.repo.git("rev-parse", "-q", "--verify", f"{spec}^{{commit}}", check=False).strip() or None

    def _is_ancestor(self, older: str, newer: str) -> bool:
        return self.repo.run("merge-base", "--is-ancestor", older, newer, check=False).returncode == 0

    def ahead_behind(self) -> tuple[int, int]:
        """Commits here the remote lacks, and commits there not merged here (as of the last fetch)."""
        tracking = self._rev(self.tracking_ref)
        if tracking is None:
            return int(self.repo.git("rev-list", "--count", "HEAD").strip() or 0), 0
        out = self.repo.git("rev-list", "--left-right", "--count", f"HEAD...{tracking}").split()
        return int(out[0]), int(out[1])

    # -- the round ----------------------------------------------------------------------------------
    def recover(self) -> list[str]:
        """Finish or roll back an interrupted round; call at start, before committing pending work."""
        return recover(self.repo, f"{self.remote}/{self.branch()}").detail

    def sync(self) -> SyncReport:
        """One round: recover, fetch, commit pending, merge, push (see the module docstring)."""
        report = SyncReport(self.remote, "")
        try:
            if not self.has_remote():
                raise SyncFailed(
                    "no_remote",
                    f"the vault's repository has no remote named {self.remote!r}; add one with "
                    f"`git remote add {self.remote} URL` (a bare repository, GitHub, ...) and sync again",
                )
            busy = (
                f"another sync of {self.repo.work_tree} (the daemon's, or another `vaultmem sync`) "
                f"was still running after {self.round_timeout:.0f}s; sync again later"
            )
            lock = self.repo.git_dir / ROUND_LOCK
            with flocked(lock, self.round_timeout, busy=busy, fallback=self.round_fallback):
                self._round(report)
        except SyncFailed as exc:
            report.ok, report.error_kind = False, exc.kind
            report.errors.append(str(exc))
        except subprocess.TimeoutExpired as exc:
            report.ok, report.error_kind = False, "offline"
            report.errors.append(
                f"git gave up after {exc.timeout:.0f}s talking to {self.remote!r} (a slow or silent "
                "network); nothing was lost, the next sync tries again"
            )
        except (GitError, VaultError, OSError) as exc:
            report.ok = False
            report.error_kind = "busy" if isinstance(exc, GitLocked | VaultBusy) else "git"
            report.errors.append(str(exc))
        with contextlib.suppress(GitError):
            report.ahead, report.behind = self.ahead_behind()
        report.incoming = list({c.path: c for c in report.incoming}.values())  # a retry merges again
        return report

    def _round(self, report: SyncReport) -> None:
        """Recover, then fetch, commit pending, merge and push, retrying a push the remote rejected."""
        report.branch = self.branch()
        with self.write_lock():
            report.recovery = recover(self.repo, f"{self.remote}/{report.branch}").detail
            _configure(self.repo)
        for attempt in range(1, self.max_attempts + 1):
            report.attempts = attempt
            incoming = self._fetch(report.branch)
            self.checkpoint("fetched")
            with self.write_lock():
                report.committed += self.commit_pending()
                self.checkpoint("committed pending")
                known = len(report.incoming)
                merged = self._merge(incoming, report)
                self.after_merge(report.incoming[known:])
                if not merged:
                    continue  # a file changed under the merge: commit it and merge again
            if self._push(report):
                break
        else:
            raise SyncFailed(
                "remote",
                f"the remote (or a file being merged) kept changing during {self.max_attempts} "
                "attempts; nothing was lost, the next sync merges and pushes again",
            )

    def _over_network(self, *args: str) -> tuple[bool, str]:
        """Run a fetch or push with the person's ssh setup; whether it worked, and git's message."""
        result = self.repo.run(*args, check=False, env=remote_env(), timeout=self.network_timeout)
        return result.returncode == 0, result.stderr.decode("utf-8", "replace").strip()

    def _fetch(self, branch: str) -> str | None:
        """Fetch the remote's branch; its commit, or ``None`` when the remote has no such branch yet."""
        refspec = f"+refs/heads/{branch}:refs/remotes/{self.remote}/{branch}"
        ok, detail = self._over_network(
            "fetch", "-q", "--no-tags", "--no-write-fetch-head", self.remote, refspec
        )
        if not ok:
            if any(m in detail for m in _NO_BRANCH):
                return None
            raise network_failure(self.remote, "fetch", detail)
        return self._rev(f"refs/remotes/{self.remote}/{branch}")

    def _merge(self, incoming: str | None, report: SyncReport) -> bool:
        """Merge ``incoming`` into HEAD; False when a file changed under the merge (retry)."""
        head = self._rev("HEAD")
        if incoming is None or head is None or self._is_ancestor(incoming, head):
            return True
        git_dir = self.repo.git_dir
        clear_records(records_path(git_dir))
        write_marker(git_dir, Marker(head, incoming))
        self.checkpoint("marked")
        label = f"{self.remote}/{report.branch}"
        if self._is_ancestor(head, incoming):
            result = self.repo.run("merge", "-q", "--ff-only", incoming, check=False)
            fast_forward = True
        else:
            with notes_left_unmerged(git_dir):  # ``conclude`` merges them, all in this process
                result = self.repo.run(
                    "merge", "-q", "--no-ff", "--no-commit", "--no-edit", incoming, check=False
                )
            fast_forward = False
        self.checkpoint("merged")
        if result.returncode != 0 and not (git_dir / "MERGE_HEAD").exists():
            clear_marker(git_dir)
            detail = (result.stderr or result.stdout).decode("utf-8", "replace").strip()
            if any(m in detail for m in _DIRTY):
                return False
            if "unrelated histories" in detail:
                raise GitError(
                    f"{label} shares no history with this vault: a vault joins a remote by "
                    "`vaultmem clone URL PATH`, not by adding the remote to another vault"
                )
            raise GitError(f"git could not merge {label}: {detail}")
        if fast_forward:  # onto another machine's merge of ours: as_of keeps this vault's line
            record_detour(self.repo, head, incoming, int(time.time()))
        else:
            try:
                done = conclude(self.repo, label, self.checkpoint)
            except (VaultError, OSError):
                raise  # git busy, a disk full: the next round's recovery finishes the merge
            except Exception as exc:  # it would fail again every round: undo it, so that commits work
                abandon(self.repo, Marker(head, incoming))
                raise GitError(
                    f"could not finish merging {label} ({exc!r}); the merge was undone and nothing was "
                    "lost: this vault keeps working and committing, and the next sync tries again"
                ) from exc
            self.checkpoint("concluded")
            report.merge_commit = done.commit
            report.merged += done.described
            report.conflict_files += done.conflict_files
            report.renamed += done.renamed
            report.errors += done.errors
        report.fast_forward = report.fast_forward or fast_forward
        clear_marker(git_dir)
        report.incoming += self._changed(head, "HEAD")
        return True

    def _changed(self, old: str, new: str) -> list[ChangedPath]:
        out = self.repo.git("diff", "--name-status", "--no-renames", "-z", old, new, "--").split("\0")
        kinds: dict[str, Literal["added", "modified", "deleted"]] = {"A": "added", "D": "deleted"}
        return [
            ChangedPath(path, kinds.get(status[:1], "modified"))
            for status, path in zip(out[0::2], out[1::2], strict=False)
            if path
        ]

    def _push(self, report: SyncReport) -> bool:
        """Push HEAD; False when the remote moved meanwhile (fetch and merge again)."""
        tracking = self._rev(self.tracking_ref)
        if tracking is not None and self._is_ancestor("HEAD", tracking):
            return True  # nothing here the remote lacks
        span = f"{tracking}..HEAD" if tracking else "HEAD"
        ahead = int(self.repo.git("rev-list", "--count", span).strip() or 0)
        if tracking:
            outgoing = self.repo.git("diff", "--name-only", "-z", tracking, "HEAD", "--").split("\0")
        else:
            outgoing = self.repo.git("ls-tree", "-r", "--name-only", "-z", "HEAD").split("\0")
        self.checkpoint("pushing")
        ok, detail = self._over_network("push", "-q", self.remote, f"HEAD:refs/heads/{report.branch}")
        if not ok:
            if any(m in detail for m in _REJECTED):
                return False
            raise network_failure(self.remote, "push", detail)
        self.checkpoint("pushed")
        report.pushed_commits += ahead
        report.outgoing = sorted({*report.outgoing, *(p for p in outgoing if p)})
        return True


def clone_vault(url: str, path: Path, *, git_dir: Path | None = None, remote: str = "origin") -> GitRepo:
    """Make a vault on this machine from a remote (``vaultmem clone URL PATH [--git-dir DIR]``).

    The note merge driver is configured; an empty remote gets the vault template as the first
    commit, pushed by the first sync.
    """
    path = path.expanduser().resolve()
    if "://" not in url and Path(url).expanduser().exists():
        url = str(Path(url).expanduser().resolve())  # a local path, as the person's cwd reads it
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise VaultError(f"{path} exists and is not an empty folder; clone into a new folder")
    args = ["git", "clone", "-q", "--origin", remote]
    if git_dir is not None:
        git_dir = git_dir.expanduser().resolve()
        if git_dir == path or path in git_dir.parents:
            raise VaultError(f"--git-dir {git_dir} must be outside the vault {path}")
        git_dir.parent.mkdir(parents=True, exist_ok=True)
        args += ["--separate-git-dir", str(git_dir)]
    path.parent.mkdir(parents=True, exist_ok=True)
    probe = GitRepo(path.parent)
    result = probe.run(*args[1:], "--", url, str(path), check=False, env=remote_env(), timeout=3600)
    if result.returncode != 0:
        detail = result.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"could not clone {url}: {detail}; check the address, the network and your access")
    repo = GitRepo(path)
    if repo.run("rev-parse", "-q", "--verify", "HEAD", check=False).returncode != 0:
        repo.git("symbolic-ref", "HEAD", "refs/heads/main")  # an empty remote: start its main branch
        init_vault(path)
    _configure(repo)
    return repo


def _configure(repo: GitRepo) -> None:
    """The note merge driver registered, its attributes file committed when it changed: at the
    root, or in vaultmem's own folder of a vault adopted in place (the person's notes keep git's
    own merge there when they pull by hand)."""
    home = memory_home(repo.work_tree)
    if configure(repo, home):
        repo.commit_paths([in_home(home, ".gitattributes")], "vaultmem: merge notes field by field")
