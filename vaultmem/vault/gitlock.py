"""git's lock files (``index.lock``, ``HEAD.lock``, ``refs/heads/<branch>.lock``): live or stale.

git takes a lock by creating ``<file>.lock`` and removes it by renaming it over ``<file>``. A git
killed mid-commit (a supervisor stopping the daemon's whole process group, the OOM killer, a power
cut) leaves the lock behind, and every later git command that needs it fails until someone removes
it. The rule vaultmem follows: a *live* lock is never touched; a lock is *stale* when it is older
than the lock timeout, no process holds it open, and no git process is running in the repository
(``git commit`` closes ``index.lock`` while the person's editor is open). Only a stale lock is
removed, and the removal is logged.

Whether a process holds the file open is read from ``/proc`` (Linux; only this user's processes are
visible, which covers a person's own git), else from ``lsof`` when it is installed; when neither can
tell, the lock is treated as live.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

_LOCK_IN_MESSAGE = re.compile(r"Unable to create '([^']+\.lock)'")
_PROC = Path("/proc")


class GitLockInfo(TypedDict):
    """A lock as doctor and health report it."""

    path: str
    age_s: float
    held: bool | None
    stale: bool


@dataclass(frozen=True)
class GitLock:
    """One lock file in a git directory, as it is now."""

    path: Path
    age_s: float
    #: True: a process holds it open or git runs in the repository; False: none does; None: unknown.
    held: bool | None

    def stale(self, timeout: float) -> bool:
        return self.held is False and self.age_s >= timeout

    def to_dict(self, timeout: float) -> GitLockInfo:
        return {
            "path": str(self.path),
            "age_s": round(self.age_s, 1),
            "held": self.held,
            "stale": self.stale(timeout),
        }


def lock_named_in(message: str, git_dir: Path) -> Path | None:
    """The lock file a git error message names, when it lies inside ``git_dir``."""
    found = _LOCK_IN_MESSAGE.search(message)
    if found is None:
        return None
    path = Path(found.group(1))
    try:
        path.resolve().relative_to(git_dir.resolve())
    except (OSError, ValueError):
        return None
    return path


def inspect(path: Path, work_tree: Path, git_dir: Path) -> GitLock | None:
    """The state of the lock at ``path``, or None when there is none."""
    try:
        age = time.time() - path.stat().st_mtime
    except OSError:
        return None
    return GitLock(path, max(0.0, age), _held(path, (work_tree, git_dir)))


def find_locks(work_tree: Path, git_dir: Path) -> list[GitLock]:
    """Every lock a commit can leave: ``index.lock``, ``HEAD.lock`` and the branches' ref locks."""
    candidates = [git_dir / "index.lock", git_dir / "HEAD.lock"]
    heads = git_dir / "refs" / "heads"
    if heads.is_dir():
        candidates += sorted(heads.rglob("*.lock"))
    found = (inspect(p, work_tree, git_dir) for p in candidates)
    return [lock for lock in found if lock is not None]


def _held(path: Path, repo_dirs: tuple[Path, ...]) -> bool | None:
    held = held_open({str(path)})
    if held is not False:
        return held
    return _git_runs_in(repo_dirs) if _PROC.is_dir() else None


def held_open(paths: Collection[str]) -> bool | None:
    """True when a process has one of ``paths`` open, False when none has, None when this system
    cannot tell (no ``/proc`` and no ``lsof``)."""
    wanted = set(paths)
    if _PROC.is_dir():
        return any(_open_in(entry, wanted) for entry in _PROC.iterdir() if entry.name.isdigit())
    lsof = shutil.which("lsof")
    if lsof is None:
        return None
    try:
        result = subprocess.run(
            [lsof, "-t", "--", *sorted(wanted)], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return bool(result.stdout.strip())


def _open_in(process: Path, wanted: set[str]) -> bool:
    try:
        descriptors = list((process / "fd").iterdir())
    except OSError:  # gone meanwhile, or another user's process: not visible
        return False
    for fd in descriptors:
        try:
            if str(fd.readlink()) in wanted:
                return True
        except OSError:  # closed meanwhile
            continue
    return False


def _git_runs_in(repo_dirs: tuple[Path, ...]) -> bool:
    """True if a git process works in the repository (``git commit`` with its editor open keeps
    ``index.lock`` without holding it open)."""
    dirs = [str(d.resolve()) for d in repo_dirs]
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if not (entry / "comm").read_text(encoding="utf-8", errors="replace").strip().startswith("git"):
                continue
            cwd = str((entry / "cwd").readlink())
        except OSError:
            continue
        if any(cwd == d or cwd.startswith(d + os.sep) for d in dirs):
            return True
    return False
