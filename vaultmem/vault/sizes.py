"""Files too big for git: what vaultmem leaves out of its commits, and what it commits all the same.

A file above the size limit (``max_commit_file_mb`` in ``vaultmem.yaml``, 25 MiB by default) that is
not a note (a video, a disk image, a plugin's cache) is never committed by vaultmem: not by
``init``, not by a start, not by the watcher, not by a sync round. git keeps every version of a
file whole, so one such file would make ``.git`` (and every other machine's clone) that much bigger
for good, and a push to a host that refuses big files (GitHub: 100 MB) would fail for every commit
behind it. A note (``.md``) above the limit is committed all the same: a note is the person's
knowledge, and history never loses one without being told to (a ``.gitignore`` line). Both are named
once per process in the log, and ``vaultmem doctor`` lists them with what to do
(``docs/architecture.md``, "Big files and hidden folders in git").
"""

from __future__ import annotations

import logging
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)
MIB = 2**20
#: What was named in the log already, in this process: (work tree, path, size).
_told: set[tuple[str, str, int]] = set()


@dataclass(frozen=True)
class BigFile:
    """A file of the vault above the size limit: its vault-relative path and its size in bytes."""

    path: str
    size: int

    def __str__(self) -> str:
        return f"{self.path} ({self.size / MIB:.1f} MiB)"


def is_committable(path: Path) -> bool:
    """True for what git can record at ``path``: a file or a symlink (not a pipe, not a socket)."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


def size_above(path: Path, limit: int) -> int | None:
    """The size of the regular file at ``path`` when it is above ``limit`` (0: no limit), else None."""
    if limit <= 0:
        return None
    try:
        st = path.lstat()
    except OSError:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) and st.st_size > limit else None


def leave_out_big(root: Path, paths: Sequence[str], limit: int) -> list[str]:
    """``paths`` (vault-relative, to commit) without the files above ``limit`` that are not notes;
    a note above it stays. Each is named once in the log, with what to do."""
    kept: list[str] = []
    for rel in paths:
        size = size_above(root / rel, limit)
        if size is None:
            kept.append(rel)
            continue
        note = rel.endswith(".md")
        if note:
            kept.append(rel)
        key = (str(root), rel, size)
        if key not in _told:
            _told.add(key)
            _tell(BigFile(rel, size), limit, note)
    return kept


def _tell(big: BigFile, limit: int, note: bool) -> None:
    if note:
        log.warning(
            "the note %s is above the %.0f MiB limit (max_commit_file_mb): committed all the same (a "
            "note is never left out of history), but each change of it adds up to its size to .git; "
            "split it, or add it to .gitignore if a tool writes it",
            big,
            limit / MIB,
        )
    else:
        log.warning(
            "%s is above the %.0f MiB limit (max_commit_file_mb): vaultmem does not commit it, so "
            "your other machines do not get it through git; add it to .gitignore, or raise "
            "max_commit_file_mb in vaultmem.yaml",
            big,
            limit / MIB,
        )
