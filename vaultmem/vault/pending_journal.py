"""Whose uncommitted files are whose: the journal that lets a start after a crash commit an agent's
acknowledged write under its own author and message.

A write is acknowledged once its file is in place; its commit follows from the queue. A process
killed in between (``kill -9``, the OOM killer, a power cut) leaves the file uncommitted, and the
next start commits what ``git status`` lists, which alone cannot say who wrote it. So every commit
queued is recorded first, one JSON line (its paths, message and author) appended to this process's
journal, ``<git dir>/vaultmem-pending/<pid>.jsonl``, beside the write lock it is written under. The
journal is emptied whenever no commit of the process is outstanding, and removed at a clean close.

At start, the journals of processes no longer running (and one of this process's own id, a
previous life of the same process number) say whose each pending file is: the last record naming a
path wins, as its file holds that write, unless the file's bytes are no longer those the write
left (each record keeps their sha256): the person changed it after the kill and before the start
(in Obsidian, say), so it holds their words too and is committed as a change found at start, not
under the agent's name alone. The records of a running process are read too (its file
is committed now either way) but left in place. The journal is a hint, not durable state: it is
never fsynced, so after a power cut a write may be committed under vaultmem's generic message, as
it always was; it never decides *whether* a file is committed, only how the commit is worded.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vaultmem.vault.history import Author

log = logging.getLogger(__name__)
DIRECTORY = "vaultmem-pending"
_SUFFIX = ".jsonl"


@dataclass(frozen=True)
class Recorded:
    """A commit a process queued and may not have made: the files and how to word it."""

    paths: list[str]
    message: str
    author: Author | None
    #: The sha256 of the bytes the write left in each of its files (none recorded: not checked).
    hashes: Mapping[str, str] | None = None


class PendingJournal:
    """This process's journal of queued commits (thread-safe), and the reading of the others'."""

    def __init__(self, git_dir: Path) -> None:
        self.directory = git_dir / DIRECTORY
        self.file = self.directory / f"{os.getpid()}{_SUFFIX}"
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._outstanding = 0
        self._broken = False  # could not be written (a read-only git directory): commits go on

    def record(
        self,
        paths: Sequence[str],
        message: str,
        author: Author | None,
        hashes: Mapping[str, str] | None = None,
    ) -> None:
        """Note a commit about to be queued, with the sha256 of what the write left in each file
        (``hashes``, when known); :meth:`landed` once it has been made (or failed)."""
        row: dict[str, object] = {
            "paths": list(paths),
            "message": message,
            "author": [author.name, author.email] if author else None,
        }
        if hashes:
            row["sha256"] = dict(hashes)
        line = json.dumps(row)
        with self._lock:
            self._outstanding += 1
            if self._broken:
                return
            try:
                if self._fd is None:
                    self.directory.mkdir(exist_ok=True)
                    self._fd = os.open(self.file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                os.write(self._fd, (line + "\n").encode("utf-8", "surrogateescape"))
            except OSError as exc:
                self._broken = True
                log.warning(
                    "could not keep %s (%s): a crash would commit pending writes as vaultmem's",
                    self.file,
                    exc,
                )

    def landed(self) -> None:
        """One recorded commit was made (or failed and waits for a retry); when none is outstanding
        the journal is emptied."""
        with self._lock:
            self._outstanding = max(0, self._outstanding - 1)
            if self._outstanding == 0 and self._fd is not None:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, 0)

    def close(self, *, remove: bool) -> None:
        """Close the journal; with ``remove`` (every commit made: a clean close), it goes."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            if remove:
                with contextlib.suppress(OSError):
                    self.file.unlink()

    # -- at start --------------------------------------------------------------------------------
    def found(
        self, pending: Sequence[str], hash_now: Callable[[str], str | None]
    ) -> tuple[list[Recorded], list[str]]:
        """The recorded commits of the ``pending`` paths (each path in the last record naming it,
        if its bytes, ``hash_now(path)``, are still those the record names), in the order recorded,
        and the pending paths no record names or whose file changed since."""
        wanted = set(pending)
        owner: dict[str, int] = {}
        records: list[Recorded] = []
        for journal in self._journals():
            for rec in _read(journal):
                for rel in rec.paths:
                    if rel in wanted:
                        owner[rel] = len(records)
                records.append(rec)
        for rel, i in list(owner.items()):
            written = (records[i].hashes or {}).get(rel)
            if written is not None and hash_now(rel) != written:
                del owner[rel]  # edited since the write: not the agent's bytes alone
        kept: list[Recorded] = []
        for i, rec in enumerate(records):
            mine = [p for p in dict.fromkeys(rec.paths) if owner.get(p) == i]
            if mine:
                kept.append(Recorded(mine, rec.message, rec.author))
        return kept, [p for p in pending if p not in owner]

    def forget_the_dead(self) -> None:
        """Remove the journals of processes no longer running (their pending files committed)."""
        for journal in self._journals():
            if not _running(journal):
                with contextlib.suppress(OSError):
                    journal.unlink()

    def _journals(self) -> list[Path]:
        try:
            found = [p for p in self.directory.iterdir() if p.name.endswith(_SUFFIX)]
        except OSError:
            return []

        def modified(path: Path) -> int:
            try:
                return path.stat().st_mtime_ns
            except OSError:
                return 0

        return sorted(found, key=lambda p: (modified(p), p.name))


def _running(journal: Path) -> bool:
    """Whether the process that keeps ``journal`` still runs (this process's own number is a
    previous life's: this process has written nothing yet when it reads the journals)."""
    try:
        pid = int(journal.name.removesuffix(_SUFFIX))
    except ValueError:
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: running
        return True
    return True


def _read(journal: Path) -> list[Recorded]:
    try:
        text = journal.read_bytes().decode("utf-8", "surrogateescape")
    except OSError:
        return []
    out: list[Recorded] = []
    for line in text.splitlines():  # a line cut short by the kill is skipped
        try:
            row = json.loads(line)
            who = row["author"]
            author = Author(str(who[0]), str(who[1])) if who else None
            paths = [str(p) for p in row["paths"]]
            hashes = {str(k): str(v) for k, v in (row.get("sha256") or {}).items()}
            out.append(Recorded(paths, str(row["message"]), author, hashes or None))
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            continue
    return out
