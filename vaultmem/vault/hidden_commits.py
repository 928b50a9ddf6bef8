"""When what hidden folders hold is committed, and keeping ``.git`` small when those files churn.

Obsidian and its plugins rewrite files in ``.obsidian/`` as the person works (a plugin's
``data.json`` at each setting, megabytes for some). The watcher does not watch hidden folders; a
start committed them, and every CLI command is a start: an 8 MB ``data.json`` a plugin rewrote
between commands went into git once per command. Now a start commits them only when
``hidden_commit_interval`` seconds (10 min) have passed since they were last looked at (a stamp in
the state directory, shared by every process on this machine), a daemon looks again at each rescan
and when it stops, and after such a commit git's loose objects are packed once they pass
:data:`LOOSE_PACK_BYTES` (``docs/architecture.md``, "Big files and hidden folders in git").
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path, PurePosixPath

from vaultmem.errors import GitError
from vaultmem.vault.history import GitRepo

log = logging.getLogger(__name__)
#: In the state directory: its mtime is when hidden folders were last looked at (derived, per machine).
STAMP = "hidden-folders.stamp"
#: Loose objects above this many bytes are packed after a commit of hidden folders: git's own
#: ``gc --auto`` counts objects (6,700), not bytes, so a few big versions are never packed by it.
LOOSE_PACK_BYTES = 32 * 2**20


def in_hidden_folder(rel: str) -> bool:
    """True for a file inside a hidden folder (``.obsidian/``, a plugin's folder under it), the files
    committed on the interval; a hidden file of its own (``.gitignore``) is committed at every start."""
    return any(part.startswith(".") for part in PurePosixPath(rel).parts[:-1])


class HiddenFolderClock:
    """Whether hidden folders are due to be looked at: never looked at from this state directory, or
    ``interval`` seconds ago or more (0: always)."""

    def __init__(self, state_dir: Path, interval: float) -> None:
        self.stamp = state_dir / STAMP
        self.interval = interval

    def due(self) -> bool:
        if self.interval <= 0:
            return True
        try:
            return time.time() - self.stamp.stat().st_mtime >= self.interval
        except OSError:
            return True

    def looked(self) -> None:
        """Hidden folders were looked at now (the change found is committed, or queued)."""
        try:
            self.stamp.parent.mkdir(parents=True, exist_ok=True)
            self.stamp.touch()
            os.utime(self.stamp)
        except OSError as exc:  # the next start looks again: more commits, nothing lost
            log.warning("could not write %s: %s", self.stamp, exc)


def pack_loose_objects(repo: GitRepo, threshold: int = LOOSE_PACK_BYTES) -> bool:
    """Pack git's loose objects into a pack (versions of one file stored as deltas) when they take
    more than ``threshold`` bytes; True when it packed. Never raises: a repository left unpacked is
    only bigger."""
    try:
        counted = repo.git("count-objects", "-v")
        loose_kib = next(
            (int(v) for k, _, v in (line.partition(": ") for line in counted.splitlines()) if k == "size"), 0
        )
        if loose_kib * 1024 <= threshold:
            return False
        started = time.monotonic()
        repo.git("repack", "-d", "-q")
        log.info(
            "packed %.0f MiB of loose git objects in %.1f s", loose_kib / 1024, time.monotonic() - started
        )
        return True
    except (GitError, ValueError) as exc:
        log.warning("could not pack git's loose objects (%s); `git gc` packs them", exc)
        return False
