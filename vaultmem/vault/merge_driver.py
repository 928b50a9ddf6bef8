"""git's merge driver for notes: ``python -m vaultmem.vault.merge_driver %O %A %B %P``.

A vault's ``.gitattributes`` says ``*.md merge=vaultmem-note`` and its repository config defines
that driver (:func:`configure`, run by ``clone`` and by every sync round), so a merge a person
makes by hand (``git pull``, ``git merge``) merges notes through ``notes/merge.py``: field by field,
never with conflict markers. git hands the driver three temp files (ancestor, ours, theirs) and the
path; it writes the merged note over ``%A`` and exits 0. What must become a file of its own (a
conflict note, a second note created at one path) is written as a *record* under the git directory,
for the next sync round to file (``vault/merge_state.py``). A sync round does not start this driver
per note: it merges them all in its own process by the same function (docs/architecture.md, "git's
side"). git's criss-cross inner merges run the ``--virtual-base`` form: the same merge, no record.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from vaultmem.notes.merge import NoteMerge, conflict_file, merge_note, merge_text
from vaultmem.notes.project_merge import is_project_file, merge_project
from vaultmem.vault.atomic import atomic_write
from vaultmem.vault.history import GitRepo

DRIVER = "vaultmem-note"
BASE_DRIVER = "vaultmem-note-base"
ATTRIBUTES_LINE = f"*.md merge={DRIVER}"
_ATTRIBUTES_COMMENT = "# vaultmem: notes merge field by field between machines (see docs/sync.md)"
#: The records of the merge in progress, one JSON object a line, under the git directory.
RECORDS_FILE = "vaultmem-merge.jsonl"


@dataclass(frozen=True)
class MergeRecord:
    """What the driver did to one path, for the sync round to finish and to report."""

    path: str
    #: sha256 of the bytes the driver left at ``path``.
    merged_sha256: str
    mode: str
    described: tuple[str, ...]
    #: A side the merged file does not carry in full, as it was (empty when none).
    lost: bytes = b""
    #: The conflict file that keeps ``lost`` (``None`` for a distinct note, filed by a new name).
    conflict_path: str | None = None
    conflict_data: bytes = b""

    @property
    def distinct(self) -> bool:
        """A second, different note created at ``path``: the round files ``lost`` by a new name."""
        return self.mode == "distinct"

    def to_json(self) -> str:
        data = asdict(self)
        for key in ("lost", "conflict_data"):
            data[key] = base64.b64encode(data[key]).decode("ascii")
        return json.dumps(data, sort_keys=True)

    @staticmethod
    def from_json(text: str) -> MergeRecord:
        data = json.loads(text)
        for key in ("lost", "conflict_data"):
            data[key] = base64.b64decode(data[key])
        data["described"] = tuple(data["described"])
        return MergeRecord(**data)


def record_of(path: str, merge: NoteMerge) -> MergeRecord:
    """The record of ``merge`` at ``path``."""
    copy = conflict_file(path, merge)
    return MergeRecord(
        path=path,
        merged_sha256=hashlib.sha256(merge.merged).hexdigest(),
        mode=merge.mode,
        described=tuple(merge.describe()),
        lost=merge.lost.data if merge.lost is not None else b"",
        conflict_path=copy[0] if copy else None,
        conflict_data=copy[1] if copy else b"",
    )


def merge_file(path: str, base: bytes, ours: bytes, theirs: bytes) -> NoteMerge:
    """Merge one file of the vault: a note field by field, a project's file key by key, anything
    else as lines."""
    if path.endswith(".md"):
        return merge_note(base, ours, theirs)
    return merge_project(base, ours, theirs) if is_project_file(path) else merge_text(base, ours, theirs)


# -- records ----------------------------------------------------------------------------------------
def records_path(git_dir: Path) -> Path:
    return git_dir / RECORDS_FILE


def write_record(path: Path, record: MergeRecord) -> None:
    """Append ``record`` as one line: one ``write`` on an ``O_APPEND`` file, so a kill leaves whole
    lines and at most one partial last line, which :func:`read_records` skips. Not fsynced, like
    git's own merge state: a kill loses nothing that is in the page cache."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as log:
        log.write(record.to_json().encode("utf-8") + b"\n")


def read_records(path: Path) -> list[MergeRecord]:
    """The records in ``path``, the last one of each path, sorted by path."""
    by_path: dict[str, MergeRecord] = {}
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        return []
    for line in lines:
        try:
            record = MergeRecord.from_json(line.decode("utf-8"))
        except (ValueError, TypeError, KeyError):
            continue
        by_path[record.path] = record
    return [by_path[p] for p in sorted(by_path)]


def clear_records(path: Path) -> None:
    path.unlink(missing_ok=True)


# -- configuring a vault ----------------------------------------------------------------------------
def driver_command(python: str, *, virtual_base: bool = False) -> str:
    """The shell command git runs (``-P``: the vault, git's working folder, is never on the import path)."""
    flag = " --virtual-base" if virtual_base else ""
    return f"{shlex.quote(python)} -P -m vaultmem.vault.merge_driver{flag} %O %A %B %P"


def configure(repo: GitRepo, home: str = "", python: str | None = None) -> bool:
    """Register the note driver in ``repo``; return True when the attributes file changed.

    The driver runs with ``python`` (this interpreter by default, so git uses the same
    installation). The attributes file is ``<home>/.gitattributes``, vaultmem's folder's (the
    root's in a vault vaultmem made; in a vault adopted in place it covers vaultmem's notes, not the
    person's); it gets the line appended when missing, every other byte kept. The caller commits it
    when it changed.
    """
    python = python or sys.executable
    settings = {
        f"merge.{DRIVER}.name": "vaultmem: notes merged field by field",
        f"merge.{DRIVER}.driver": driver_command(python),
        f"merge.{DRIVER}.recursive": BASE_DRIVER,
        f"merge.{BASE_DRIVER}.name": "vaultmem: notes merged into a virtual merge base",
        f"merge.{BASE_DRIVER}.driver": driver_command(python, virtual_base=True),
    }
    listed = repo.git("config", "--local", "-z", "--get-regexp", r"^merge\.vaultmem-", check=False)
    current = dict(item.split("\n", 1) for item in listed.split("\0") if "\n" in item)
    for key, value in settings.items():
        if current.get(key) != value:
            repo.git("config", "--local", key, value)
    attributes = repo.work_tree / home / ".gitattributes" if home else repo.work_tree / ".gitattributes"
    try:
        existing = attributes.read_bytes()
    except FileNotFoundError:
        existing = b""
    if any(line.strip() == ATTRIBUTES_LINE.encode() for line in existing.splitlines()):
        return False
    prefix = existing if not existing or existing.endswith(b"\n") else existing + b"\n"
    atomic_write(attributes, prefix + f"{_ATTRIBUTES_COMMENT}\n{ATTRIBUTES_LINE}\n".encode())
    return True


# -- the driver -------------------------------------------------------------------------------------
def _records_here() -> Path:
    out = subprocess.run(["git", "rev-parse", "--absolute-git-dir"], capture_output=True, check=True)
    return records_path(Path(out.stdout.decode("utf-8").strip()))


def main(argv: Sequence[str]) -> int:
    """git's entry point: merge ``%O %A %B`` for path ``%P``, leave the result in ``%A``."""
    args = list(argv)
    virtual_base = "--virtual-base" in args
    args = [a for a in args if a != "--virtual-base"]
    if len(args) != 4:
        print("usage: python -m vaultmem.vault.merge_driver [--virtual-base] %O %A %B %P", file=sys.stderr)
        return 2
    base_file, ours_file, theirs_file, path = args
    base, ours, theirs = (Path(f).read_bytes() for f in (base_file, ours_file, theirs_file))
    merge = merge_file(path, base, ours, theirs)
    if not virtual_base:  # every merge the driver made is reported; a lost side is filed from it
        write_record(_records_here(), record_of(path, merge))
    Path(ours_file).write_bytes(merge.merged)
    return 0


if __name__ == "__main__":  # pragma: no cover - run by git
    sys.exit(main(sys.argv[1:]))
