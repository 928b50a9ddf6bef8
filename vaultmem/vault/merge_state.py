"""Finishing a sync round's merge, and recovering one that a kill interrupted.

A round merges with ``git merge --no-commit``; :func:`conclude` then resolves whatever git left
unmerged (by the note merge's rules, never with markers), writes the files the merge driver's
records ask for (conflict notes, a second note created at one path renamed by the collision rule)
and makes the merge commit, whose message says what was merged how. Before its merge a round writes
a marker (``<git dir>/vaultmem-sync.json``) that :func:`recover`, run before every round and at
start, reads after a crash: the merge committed, concluded, or rolled back, and stale git locks
removed only while a round was under way (docs/architecture.md, "Kill -9 at any point").
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from vaultmem.errors import GitError, InvalidInput, MalformedNote, VaultError
from vaultmem.notes.model import note_from_text
from vaultmem.notes.slugs import meaningful_words, resolve_collision
from vaultmem.vault.atomic import atomic_write
from vaultmem.vault.gitlock import held_open
from vaultmem.vault.history import GitRepo
from vaultmem.vault.layout import VaultLayout
from vaultmem.vault.merge_driver import (
    MergeRecord,
    clear_records,
    merge_file,
    read_records,
    record_of,
    records_path,
    write_record,
)

log = logging.getLogger(__name__)
MARKER = "vaultmem-sync.json"
_LOCKS = (
    "index.lock",
    "HEAD.lock",
    "ORIG_HEAD.lock",
    "MERGE_HEAD.lock",
    "AUTO_MERGE.lock",
    "packed-refs.lock",
)


@dataclass(frozen=True)
class Marker:
    """The round in progress: the commit it merges into (``ours``) and the one it merges (``theirs``)."""

    ours: str
    theirs: str


def write_marker(git_dir: Path, marker: Marker) -> None:
    atomic_write(git_dir / MARKER, json.dumps({"ours": marker.ours, "theirs": marker.theirs}).encode("utf-8"))


def read_marker(git_dir: Path) -> Marker | None:
    try:
        data = json.loads((git_dir / MARKER).read_text(encoding="utf-8"))
        return Marker(str(data["ours"]), str(data["theirs"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def clear_marker(git_dir: Path) -> None:
    (git_dir / MARKER).unlink(missing_ok=True)


_ROUND_ATTRIBUTES = (
    b"# vaultmem sync round: notes merged by vaultmem itself (these two lines go when it ends)\n"
    b"*.md merge=binary\n"
)


@contextlib.contextmanager
def notes_left_unmerged(git_dir: Path) -> Iterator[None]:
    """While a round's ``git merge`` runs, leave every note both sides changed unmerged for
    :func:`conclude` to merge in this process.

    ``$GIT_DIR/info/attributes`` outranks the vault's ``.gitattributes``; git's ``binary`` merge
    runs in git's own process, keeps ours in the work tree (no markers) and all three versions in
    the index. Starting the note driver once per note instead costs a process each (~90 ms).
    """
    path = git_dir / "info" / "attributes"
    try:
        before = path.read_bytes()
    except FileNotFoundError:
        before = b""
    prefix = before if not before or before.endswith(b"\n") else before + b"\n"
    atomic_write(path, prefix + _ROUND_ATTRIBUTES, durable=False)
    try:
        yield
    finally:
        strip_round_attributes(git_dir)


def strip_round_attributes(git_dir: Path) -> None:
    """Remove what :func:`notes_left_unmerged` added (a kill may have left it); keep the rest."""
    path = git_dir / "info" / "attributes"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    if _ROUND_ATTRIBUTES in data:
        kept = data.replace(_ROUND_ATTRIBUTES, b"")
        if kept:
            atomic_write(path, kept, durable=False)
        else:
            path.unlink()


@dataclass
class Concluded:
    """What finishing a merge did."""

    commit: str
    #: One line per path the merge did more to than take one side, for the report and the message.
    described: list[str] = field(default_factory=list)
    #: (conflict file, the path whose lost side it keeps).
    conflict_files: list[tuple[str, str]] = field(default_factory=list)
    #: (path, new path) of a note filed by a new name because another note took its path.
    renamed: list[tuple[str, str]] = field(default_factory=list)
    #: Paths git left unmerged that were merged here.
    resolved: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _add(repo: GitRepo, paths: list[str]) -> None:
    if paths:
        listed = "\0".join(sorted(set(paths))).encode("utf-8")
        repo.git("add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", input_bytes=listed)


def blob(repo: GitRepo, spec: str) -> bytes:
    return repo.run("cat-file", "blob", spec).stdout


def blobs(repo: GitRepo, shas: list[str]) -> dict[str, bytes]:
    """Many blobs with one ``git cat-file --batch`` (a process per blob costs ~5 ms)."""
    unique = sorted(set(shas))
    if not unique:
        return {}
    out = repo.run("cat-file", "--batch", input_bytes="".join(f"{s}\n" for s in unique).encode()).stdout
    found: dict[str, bytes] = {}
    pos = 0
    while pos < len(out):
        end = out.index(b"\n", pos)
        header = out[pos:end].decode("ascii").split()
        pos = end + 1
        if len(header) == 3:
            size = int(header[2])
            found[header[0]] = out[pos : pos + size]
            pos += size + 1
    return found


def _unmerged(repo: GitRepo) -> dict[str, dict[int, str]]:
    out: dict[str, dict[int, str]] = {}
    for record in repo.git("ls-files", "-u", "-z").split("\0"):
        if "\t" in record:
            info, path = record.split("\t", 1)
            _, sha, stage = info.split()
            out.setdefault(path, {})[int(stage)] = sha
    return out


def _resolve_unmerged(repo: GitRepo, layout: VaultLayout, log_path: Path) -> list[str]:
    """Merge here every path git left unmerged (the notes both sides changed, with the driver off;
    anything git's text merge could not merge); return the paths.

    Each path's record is written before its file, as the driver does, so a kill part-way leaves
    nothing a second ``conclude`` would not find again. The files are not fsynced (git's own
    checkout is not either): a kill loses nothing in the page cache, and the commit follows.
    """
    unmerged = _unmerged(repo)
    content = blobs(repo, [sha for stages in unmerged.values() for sha in stages.values()])
    resolved: list[str] = []
    for path, stages in sorted(unmerged.items()):
        base = content[stages[1]] if 1 in stages else b""
        if 2 in stages and 3 in stages:
            merge = merge_file(path, base, content[stages[2]], content[stages[3]])
            write_record(log_path, record_of(path, merge))
            data = merge.merged
        elif 2 in stages or 3 in stages:  # changed on one side, deleted on the other: keep the change
            data = content[stages[2] if 2 in stages else stages[3]]
        else:  # gone on both sides: each machine renamed it (see _twin_renames)
            with contextlib.suppress(FileNotFoundError):
                layout.resolve(path).unlink()
            resolved.append(path)
            continue
        atomic_write(layout.resolve(path), data, durable=False)
        resolved.append(path)
    _add(repo, resolved)
    return resolved


def _twin_renames(repo: GitRepo, layout: VaultLayout, gone: dict[str, str]) -> list[str]:
    """A note each machine renamed by hand, to a different name, both with its bytes unchanged: the
    merge holds it twice (one id in two files, held by a different one on each machine). The first
    name by path stays, on every machine; the other goes (it had the same bytes). Renamed and edited,
    both stay. Returns a line for the message per name dropped."""
    if not gone:
        return []
    base = repo.git("merge-base", "HEAD", "MERGE_HEAD", check=False).strip()
    before = _tree(repo, base) if base else {}
    now: dict[str, list[str]] = {}
    for record in repo.git("ls-files", "-s", "-z").split("\0"):
        if "\t" in record:
            info, path = record.split("\t", 1)
            if path not in before:
                now.setdefault(info.split()[1], []).append(path)
    lines: list[str] = []
    dropped: list[str] = []
    for path, sha in sorted(gone.items()):
        names = sorted(now.get(sha, []))
        for other in names[1:]:
            with contextlib.suppress(FileNotFoundError):
                layout.resolve(other).unlink()
            dropped.append(other)
            lines.append(f"{path}: renamed on both machines, to {names[0]} and {other}: kept {names[0]}")
    _add(repo, dropped)
    return lines


def _taken_names(folder: Path) -> set[str]:
    try:
        return {p.name.lower() for p in folder.iterdir()}
    except OSError:
        return set()


def _new_name(layout: VaultLayout, path: str, data: bytes, planned: set[str]) -> str:
    """A free name beside ``path`` for the note ``data``, by the collision rule."""
    folder, _, name = path.rpartition("/")
    stem = name.removesuffix(".md")
    digest = hashlib.sha256(data).hexdigest()
    words: list[str] = []
    source = digest
    with contextlib.suppress(UnicodeDecodeError, MalformedNote):
        note = note_from_text(data.decode("utf-8"), path, persons=not layout.writable(path))
        words, source = meaningful_words(note.title, note.body), note.id or digest
    names = _taken_names(layout.root / folder) | planned

    def taken(slug: str) -> bool:
        if f"{slug}.md".lower() not in names:
            return False
        # A file with exactly these bytes is this note, filed by a conclude a kill interrupted.
        mine = layout.root / folder / f"{slug}.md"
        return not (slug != stem and mine.is_file() and mine.read_bytes() == data)

    slug = resolve_collision(stem, taken, words, hash_source=source)
    return f"{folder}/{slug}.md" if folder else f"{slug}.md"


def _file_sides(repo: GitRepo, layout: VaultLayout, records: list[MergeRecord], done: Concluded) -> list[str]:
    """Write the files the records ask for; return their paths."""
    written: list[str] = []
    planned: set[str] = set()
    for record in records:
        if record.distinct and record.lost:
            target = _new_name(layout, record.path, record.lost, planned)
            planned.add(target.rsplit("/", 1)[-1].lower())
            atomic_write(layout.resolve(target), record.lost, durable=False)
            written.append(target)
            done.renamed.append((record.path, target))
            done.described.append(
                f"{record.path}: a different note created at this path elsewhere is now {target}"
            )
            continue
        if record.conflict_path is None:
            continue
        target_file = layout.resolve(record.conflict_path)
        if target_file.exists() and target_file.read_bytes() != record.conflict_data:
            done.errors.append(
                f"{record.conflict_path} exists with other content; the side it would keep is in the "
                f"history of {record.path}"
            )
            continue
        atomic_write(target_file, record.conflict_data, durable=False)
        written.append(record.conflict_path)
        done.conflict_files.append((record.conflict_path, record.path))
    _add(repo, written)
    return written


def conclude(repo: GitRepo, label: str, checkpoint: Callable[[str], None] | None = None) -> Concluded:
    """Finish the merge in progress (see the module docstring) and commit it; ``label`` names what
    was merged (``origin/main``) in the message. ``checkpoint("filed")`` is called before the commit."""
    layout = VaultLayout(repo.work_tree)
    log_path = records_path(repo.git_dir)
    gone = {path: stages[1] for path, stages in _unmerged(repo).items() if set(stages) == {1}}
    resolved = _resolve_unmerged(repo, layout, log_path)
    records = read_records(log_path)
    done = Concluded(commit="", resolved=resolved)
    for record in records:
        done.described.extend(f"{record.path}: {line}" for line in record.described)
    done.described += _twin_renames(repo, layout, gone)
    _file_sides(repo, layout, records, done)
    for copy, original in done.conflict_files:
        done.described.append(f"{original}: the side the merge could not keep is {copy}")
    if checkpoint is not None:
        checkpoint("filed")
    subject = f"vaultmem sync: merge {label}"
    counts = f"{len(records)} files merged by vaultmem, {len(done.conflict_files)} conflict notes"
    message = f"{subject}\n\n{counts}\n\n" + "".join(f"- {line}\n" for line in done.described)
    repo.git("commit", "-q", "--no-verify", "-F", "-", input_bytes=message.encode("utf-8"))
    done.commit = repo.git("rev-parse", "HEAD").strip()
    clear_records(log_path)
    return done


# -- recovery -----------------------------------------------------------------------------------------
@dataclass
class Recovery:
    action: Literal["none", "cleared", "concluded", "rolled back", "filed"] = "none"
    detail: list[str] = field(default_factory=list)
    concluded: Concluded | None = None


def _held_open(paths: set[str]) -> bool:
    """True when any process has one of ``paths`` open, or when the system cannot tell."""
    return held_open(paths) is not False


def _locks(git_dir: Path, *, merging: bool) -> list[Path]:
    found = sorted((git_dir / "refs" / "remotes").rglob("*.lock"))  # a fetch's
    if merging:
        found += [git_dir / name for name in _LOCKS if (git_dir / name).exists()]
        found += sorted((git_dir / "refs" / "heads").rglob("*.lock"))
    return found


def clear_stale_locks(repo: GitRepo, *, merging: bool = True, wait: float | None = None) -> list[str]:
    """Remove the lock files a killed round's git left (see the module docstring); return them.

    Without a round's marker (``merging=False``) only a fetch's remote-tracking ref locks are
    considered: the index and branch locks are then a person's or the commit writer's business.
    Waits up to ``wait`` seconds (the repository's lock timeout) for a lock to be released or to
    grow old enough; raises :class:`GitError` when one is still held.
    """
    wait = repo.lock_timeout if wait is None else wait
    deadline = time.monotonic() + wait
    removed: list[str] = []
    while locks := _locks(repo.git_dir, merging=merging):
        held = _held_open({str(p) for p in locks})
        youngest = min((time.time() - p.stat().st_mtime for p in locks if p.exists()), default=0.0)
        if not held and youngest >= wait:
            for lock in locks:
                lock.unlink(missing_ok=True)
                log.warning("removed %s, left by a sync round that was killed", lock)
                removed.append(str(lock))
            break
        if time.monotonic() >= deadline:
            names = ", ".join(p.name for p in locks)
            raise GitError(
                f"git is busy in {repo.work_tree} ({names}); vaultmem will sync once the other git "
                "command has finished"
            )
        time.sleep(0.05)
    return removed


def _tree(repo: GitRepo, commit: str) -> dict[str, str]:
    """``{path: blob id}`` of every file in ``commit`` (one ``ls-tree``: 10k paths in ~50 ms)."""
    entries: dict[str, str] = {}
    for record in repo.git("ls-tree", "-r", "-z", commit).split("\0"):
        if "\t" in record:
            info, path = record.split("\t", 1)
            entries[path] = info.split()[2]
    return entries


def _roll_back(repo: GitRepo, marker: Marker) -> list[str]:
    """Put back what an interrupted merge wrote; return those paths (see the module docstring)."""
    merged = {r.merged_sha256 for r in read_records(records_path(repo.git_dir))}
    changed = {p for p in repo.git("diff", "--name-only", "-z", "HEAD").split("\0") if p}
    changed |= {p for p in repo.git("ls-files", "-o", "--exclude-standard", "-z").split("\0") if p}
    layout = VaultLayout(repo.work_tree)
    head, incoming = _tree(repo, "HEAD"), _tree(repo, marker.theirs)
    present = sorted(p for p in changed if (repo.work_tree / p).is_file())
    listed = "".join(f"{p}\n" for p in present).encode("utf-8")
    hashes = repo.git("hash-object", "--stdin-paths", input_bytes=listed).split() if present else []
    blob_of = dict(zip(present, hashes, strict=True))
    restore: list[str] = []
    remove: list[str] = []
    for path in sorted(changed):
        full = repo.work_tree / path
        # Gone: the merge removes a file the other side removed, and git replaces a file by removing
        # it first; a person's delete is not worth the risk of a lost note. Put it back either way.
        written = path not in blob_of or blob_of[path] == incoming.get(path)
        if not written and full.is_file():
            written = hashlib.sha256(full.read_bytes()).hexdigest() in merged
        if not written:
            continue  # a person's edit: it stays, and the next round commits it
        (restore if path in head else remove).append(path)
    if restore:
        spec = "\0".join(restore).encode("utf-8")
        repo.git("checkout", "HEAD", "--pathspec-from-file=-", "--pathspec-file-nul", input_bytes=spec)
    for path in remove:  # new files the merge brought in: they come back with the next merge
        with contextlib.suppress(FileNotFoundError, InvalidInput):
            layout.resolve(path).unlink()
    repo.git("reset", "-q")  # the index back to HEAD; a person's edits stay in the work tree
    return sorted(restore + remove)


def abandon(repo: GitRepo, marker: Marker) -> list[str]:
    """Undo a round's merge that failed (a fault in the merge, not a kill, which :func:`recover`
    finishes): git forgets the merge, whatever it wrote is put back as a rolled-back round's is (a
    person's edit stays), and commits work again; returns the paths put back."""
    repo.git("merge", "--quit", check=False)
    restored = _roll_back(repo, marker)
    clear_records(records_path(repo.git_dir))
    clear_marker(repo.git_dir)
    return restored


def recover(repo: GitRepo, label: str = "the remote") -> Recovery:
    """Finish or roll back a round a crash interrupted (see the module docstring)."""
    git_dir = repo.git_dir
    strip_round_attributes(git_dir)
    marker = read_marker(git_dir)
    merging = (git_dir / "MERGE_HEAD").exists()
    if marker is None:
        if merging:
            raise GitError(
                f"a merge vaultmem did not start is in progress in {repo.work_tree}: finish it "
                "(git commit) or abort it (git merge --abort), then sync again"
            )
        cleared = clear_stale_locks(repo, merging=False)
        filed = _file_hand_merge_sides(repo)
        filed.detail[:0] = [f"removed {p}" for p in cleared]
        return filed
    cleared = clear_stale_locks(repo)
    detail = [f"removed {p}" for p in cleared]
    head = repo.git("rev-parse", "HEAD").strip()
    if head != marker.ours:
        clear_records(records_path(git_dir))
        clear_marker(git_dir)
        return Recovery("cleared", [*detail, "the interrupted round had already committed its merge"])
    if merging:
        try:
            done = conclude(repo, label)
        except (VaultError, OSError):
            raise  # git busy, a disk full: the next round finishes it
        except Exception as exc:  # it would fail again every round: undo it, so that commits work
            abandon(repo, marker)
            return Recovery("rolled back", [*detail, f"could not finish the interrupted merge ({exc!r})"])
        clear_marker(git_dir)
        return Recovery("concluded", [*detail, f"finished the interrupted merge as {done.commit[:12]}"], done)
    restored = _roll_back(repo, marker)
    clear_records(records_path(git_dir))
    clear_marker(git_dir)
    return Recovery("rolled back", [*detail, f"rolled back an interrupted merge ({len(restored)} paths)"])


def _file_hand_merge_sides(repo: GitRepo) -> Recovery:
    """Records with no round under way come from a merge a person made with the driver (``git
    pull``): file the sides it set aside when that merge was committed, drop the rest."""
    log_path = records_path(repo.git_dir)
    records = read_records(log_path)
    if not records:
        return Recovery()
    layout = VaultLayout(repo.work_tree)
    committed = []
    for record in records:
        at_head = repo.run("cat-file", "blob", f"HEAD:{record.path}", check=False)
        if at_head.returncode == 0 and hashlib.sha256(at_head.stdout).hexdigest() == record.merged_sha256:
            committed.append(record)
    if not committed:
        clear_records(log_path)
        return Recovery()
    done = Concluded(commit="")
    written = _file_sides(repo, layout, committed, done)
    if written:
        lines = "".join(f"- {p}\n" for p in written)
        message = f"vaultmem sync: keep what a hand merge set aside\n\n{lines}"
        repo.commit_paths(written, message)
    clear_records(log_path)
    return Recovery("filed", [f"kept {p}" for p in written], done)


def needs_recovery(git_dir: Path) -> bool:
    """Whether a round (or a hand merge's driver) left something behind: a cheap look, no git call."""
    attributes = git_dir / "info" / "attributes"
    try:
        round_attributes = _ROUND_ATTRIBUTES in attributes.read_bytes()
    except OSError:
        round_attributes = False
    return round_attributes or (git_dir / MARKER).exists() or records_path(git_dir).exists()


def recover_at_start(repo: GitRepo) -> list[str]:
    """At a start (after the temp files are swept, before the changes found are committed, which
    git refuses while a merge is unfinished): finish or roll back a round a kill interrupted.
    Never raises: what cannot be recovered now is logged, and the next round reports it."""
    try:
        if not needs_recovery(repo.git_dir):
            return []
        done = recover(repo)
    except (GitError, OSError) as exc:
        log.warning("could not finish an interrupted sync round at start: %s", exc)
        return []
    for line in done.detail:
        log.warning("sync recovery at start: %s", line)
    return done.detail
