"""The vault's main line read from git: its commits, what each changed in the notes, their blobs.

The *main line* is the first-parent chain of ``HEAD``: the commits this vault made, in the order it
made them (an agent's write, the watcher's hand-edit commit, a sync round's merge, whose changes are
its diff against the first parent); a round's fast-forward onto another machine's merge of this
vault's commits is one step of it, from the commit the round left (:mod:`vaultmem.vault.detours`).
:mod:`vaultmem.sync.versions` builds the memory's past from it. Everything here is the git CLI
in a subprocess, as for the rest of the vault's history.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from vaultmem.errors import GitError
from vaultmem.vault.detours import Detour, detours, on_first_parent_line
from vaultmem.vault.history import GitRepo
from vaultmem.vault.layout import bad_name_reason, is_ignored_rel

__all__ = ["LineCommit", "RefsWatch", "batches", "head_of", "main_line", "read_blobs"]

#: Blobs read per ``git cat-file`` call.
BLOB_BATCH = 4096
_REGULAR = (b"100644", b"100755")


@dataclass(frozen=True)
class LineCommit:
    """One commit of the main line: its id, first parent, committer time and the note files it
    changed against that parent (``blob`` None: removed)."""

    sha: str
    parent: str | None
    time: int
    changes: tuple[tuple[str, str | None], ...]


def head_of(repo: GitRepo) -> str:
    """The commit ``HEAD`` names ("" in a repository with no commit yet)."""
    return repo.git("rev-parse", "--verify", "--quiet", "HEAD", check=False).strip()


def main_line(repo: GitRepo, head: str, since: str | None = None) -> list[LineCommit]:
    """The main line up to ``head``, oldest first (only the commits after ``since`` when given):
    each commit's changes to note files, a merge's against its first parent. Where a sync round
    fast-forwarded onto another machine's merge of this vault's commits, the line goes from that
    merge back to the commit the round left (one step, at the time of the fast-forward, its changes
    against that commit: :mod:`vaultmem.vault.detours`) rather than down the other machine's line."""
    if not head:
        return []
    jumps = detours(repo.git_dir)
    segments: list[list[LineCommit]] = []  # newest first
    top = head
    while top != since:
        jump = None
        while jumps and jump is None:  # the newest record the line passes through (not a reset's)
            candidate = jumps.pop()
            if on_first_parent_line(repo, candidate.new, top):
                jump = candidate
        run = _log(repo, top, *(f"^{c}" for c in (jump.new if jump else None, since) if c))
        if jump is None or (since is not None and run and run[0].parent == since):
            segments.append(run)
            break
        segments.append([_step(repo, jump), *run])
        top = jump.old
    return [commit for segment in reversed(segments) for commit in segment]


def _step(repo: GitRepo, jump: Detour) -> LineCommit:
    """The fast-forward ``jump`` as one commit of the line: ``new`` after ``old``."""
    raw = repo.run(
        "diff-tree", "-r", "--raw", "--no-renames", "--no-abbrev", "-z", jump.old, jump.new, "--"
    ).stdout  # fmt: skip
    return LineCommit(jump.new, jump.old, jump.time, tuple(_changes(raw.split(b"\0"))))


def _log(repo: GitRepo, *spec: str) -> list[LineCommit]:
    """The first-parent commits ``spec`` names (a tip and exclusions), oldest first."""
    raw = repo.run(
        "log", "--first-parent", "--reverse", "--diff-merges=first-parent", "--raw", "--no-renames",
        "--no-abbrev", "-z", "--format=%x1e%H%x09%P%x09%ct", *spec, "--",
    ).stdout  # fmt: skip
    out: list[LineCommit] = []
    for record in raw.split(b"\x1e")[1:]:
        header, _, rest = record.partition(b"\0")
        sha, parents, stamp = header.decode("ascii").split("\t")
        first = parents.split(" ", 1)[0] or None
        out.append(LineCommit(sha, first, int(stamp), tuple(_changes(rest.lstrip(b"\n").split(b"\0")))))
    return out


def _changes(fields: list[bytes]) -> list[tuple[str, str | None]]:
    """``(path, blob or None)`` of each note file in ``--raw -z`` output's fields."""
    changes: list[tuple[str, str | None]] = []
    for meta, name in zip(fields[0::2], fields[1::2], strict=False):
        parts = meta.lstrip(b"\n:").split(b" ")
        if len(parts) < 5:
            continue
        path = name.decode("utf-8", "surrogateescape")
        if is_ignored_rel(path) or bad_name_reason(path) is not None:  # skipped, as the catalog does
            continue
        removed = parts[4].startswith(b"D") or parts[1] not in _REGULAR
        changes.append((path, None if removed else parts[3].decode("ascii")))
    return changes


def read_blobs(repo: GitRepo, shas: Sequence[str]) -> dict[str, bytes]:
    """The contents of these blobs (``GitRepo.blobs``, :data:`BLOB_BATCH` a call); missing ones are
    left out (a note over the size cap is judged by its path: ``catalog.note_of_bytes``)."""
    found: dict[str, bytes] = {}
    for start in range(0, len(shas), BLOB_BATCH):
        chunk = shas[start : start + BLOB_BATCH]
        for sha, raw in zip(chunk, repo.blobs(chunk), strict=True):
            if raw is not None:
                found[sha] = raw
    return found


def batches(commits: list[LineCommit]) -> Iterator[list[LineCommit]]:
    """Runs of commits whose changed blobs number about :data:`BLOB_BATCH`."""
    batch: list[LineCommit] = []
    count = 0
    for commit in commits:
        batch.append(commit)
        count += len(commit.changes)
        if count >= BLOB_BATCH:
            yield batch
            batch, count = [], 0
    if batch:
        yield batch


class RefsWatch:
    """Whether ``HEAD`` may have moved, from the files git keeps it in (a few ``stat``-sized reads
    instead of a ``git`` process per ``as_of`` read: a fork of a large daemon costs milliseconds).

    The stamp is ``HEAD``'s file, the file of the branch it names and ``packed-refs``' identity; a
    commit, a merge, a reset or a ref packing changes one of them. Where that cannot be told (a
    reftable repository, an unreadable file) :meth:`stamp` is None: ask git every time.
    """

    def __init__(self, repo: GitRepo) -> None:
        self.repo = repo
        self._dirs: tuple[Path, Path] | None = None

    def stamp(self) -> tuple[object, ...] | None:
        try:
            if self._dirs is None:
                common = Path(self.repo.git("rev-parse", "--git-common-dir").strip())
                self._dirs = (
                    self.repo.git_dir,
                    common if common.is_absolute() else self.repo.work_tree / common,
                )
            git_dir, common = self._dirs
            if (common / "reftable").exists():
                return None
            head = (git_dir / "HEAD").read_bytes()
            branch = b""
            if head.startswith(b"ref: "):
                try:
                    branch = (common / head[5:].strip().decode("utf-8")).read_bytes()
                except FileNotFoundError:
                    branch = b""  # packed
            try:
                packed = (common / "packed-refs").stat()
                packs: tuple[int, ...] = (packed.st_ino, packed.st_mtime_ns, packed.st_size)
            except FileNotFoundError:
                packs = ()
            return (head, branch, packs)
        except (OSError, GitError, UnicodeDecodeError):
            return None
