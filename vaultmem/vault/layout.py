"""Where things live in a vault, and which paths are never notes."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from stat import S_ISREG

from vaultmem.config import STATE_DIRNAME, memory_home
from vaultmem.errors import InvalidInput
from vaultmem.vault.atomic import TEMP_PREFIX
from vaultmem.vault.reading import is_valid_name, kind_of, shown

#: Directories never walked: git, vaultmem's state, Obsidian's settings, Obsidian's trash.
IGNORED_DIRS = frozenset({".git", STATE_DIRNAME, ".obsidian", ".trash", ".stfolder", "node_modules"})
#: Editors' and tools' leftovers (Emacs' locks and autosaves, backups, Vim's swap and probe files,
#: JetBrains' safe-write files, rsync's temp copy of a note, downloads in progress): never notes,
#: never committed.
_SWAP = re.compile(
    r"(^\.#|^#.*#$|~$|\.sw[a-p]$|\.swx$|\.tmp$|\.bak$|\.orig$|^4913$|\.crdownload$|\.part$"
    r"|___jb_(?:tmp|old|bak)___$|^\..+\.md\.[A-Za-z0-9]{6}$)"
)
#: Files in vaultmem's folder (the vault root, or its own folder) that are about the vault, not memories.
ROOT_NON_NOTES = frozenset({"README.md"})
#: Sync clients' conflict copies. Dropbox: ``name (Ann's conflicted copy 2026-01-01).md``; Drive and
#: others: ``name (1).md``; Syncthing: ``name.sync-conflict-20260101-101010-ABCDEFG.md``; vaultmem's
#: own git merge, for the side of a note it could not merge: ``name.conflict-1a2b3c4d.md``.
CONFLICT_COPY = re.compile(
    r"(\((?:[^()]*'s )?conflicted copy[^()]*\)|\s\(\d+\)$|\.sync-conflict-\d{8}-\d{6}-[A-Z0-9]+$"
    r"|\.conflict-[0-9a-f]{8}$)",
    re.IGNORECASE,
)
#: The numbered form (``name (1)``): a copy only beside its original (:func:`is_conflict_stem`).
_NUMBERED = re.compile(r"\s\(\d+\)")
#: Folders whose files are never committed, whatever the vault's .gitignore says.
NEVER_COMMITTED_DIRS = frozenset({STATE_DIRNAME, ".trash"})


def is_ignored_name(name: str) -> bool:
    """True for temp, swap and backup files that editors and sync clients leave around."""
    return name.startswith(TEMP_PREFIX) or bool(_SWAP.search(name))


def is_conflict_copy(rel: str, root: Path | None = None) -> bool:
    """True for a sync client's conflict copy of a note (indexed, flagged, never merged or deleted).
    With the vault's ``root``, a name that is only numbered (``Lecture (1).md``) is a copy only
    while its original (``Lecture.md``) is beside it: a person names notes that way too."""
    folder, _, name = rel.rpartition("/")
    return is_conflict_stem(name.removesuffix(".md"), root, folder)


def is_conflict_stem(stem: str, root: Path | None = None, folder: str = "") -> bool:
    """:func:`is_conflict_copy` of a file's stem (in the vault-relative ``folder`` of ``root``, when
    given). Every pattern holds a ")" or the word "conflict": a stem with neither (nearly all, at
    every start) is answered without the expression, and without a ``Path`` built for its folder
    (100k of them were 0.3 s of a start at 100k notes)."""
    if ")" not in stem and "conflict" not in stem.lower():
        return False
    found = CONFLICT_COPY.search(stem)
    if found is None or root is None or not _NUMBERED.fullmatch(found.group(0)):
        return found is not None
    return (root / folder / f"{stem[: found.start()]}.md").exists()  # numbered: only beside its original


def is_never_committed(rel: str) -> bool:
    """True for leftovers that must never enter history: temp, swap and backup files, the trash,
    vaultmem's state (at the root, or in its own folder of a vault adopted in place)."""
    parts = PurePosixPath(rel).parts
    return not parts or any(p in NEVER_COMMITTED_DIRS for p in parts[:-1]) or is_ignored_name(parts[-1])


def is_committed_at_start(rel: str) -> bool:
    """True for a file vaultmem commits when it starts rather than as it changes: what a hidden
    folder holds (Obsidian's settings and its plugins' data in ``.obsidian/``), or a hidden file.
    The watcher does not watch them (Obsidian rewrites ``workspace.json`` every few seconds)."""
    return any(part.startswith(".") for part in PurePosixPath(rel).parts)


#: vaultmem's own folder in a vault: the project registry and the slots live under it.
DESK_DIR = "desk"
#: Slot files (graph tools: memory_reflect, memory_status): Markdown a person reads and edits, global
#: ones in ``desk/``, a project's in its folder ``desk/projects/<slug>/``. Not memory notes.
SLOT_FILES = frozenset({"project_context.md", "active_goals.md"})
PROJECT_FILE = "project.yaml"
_DESK_PREFIX = DESK_DIR + "/"


def in_home(home: str, rel: str) -> str:
    """``rel`` (relative to vaultmem's folder ``home``) as a vault-relative path."""
    return f"{home}/{rel}" if home else rel


def is_side_file(rel: str, home: str = "") -> bool:
    """True for a vault file vaultmem writes that is not a note: a slot file or a ``project.yaml``
    under ``desk/`` (in vaultmem's folder ``home``). Committed like notes (by the tools, and by the
    watcher after a hand edit), but never catalogued or indexed."""
    if not rel.startswith(f"{home}/{DESK_DIR}/" if home else _DESK_PREFIX):  # called for every note
        return False
    name = rel.rsplit("/", 1)[-1]
    return name in SLOT_FILES or name == PROJECT_FILE


def is_vault_file(rel: str) -> bool:
    """True for a file of the vault that is no note but is the vault's all the same: an image or a
    PDF a person pasted into ``attachments/``, a canvas, a drawing's SVG export, ``filing.yaml``.
    Committed like notes (the watcher commits a person's change to one), never read or indexed.
    Not what hidden folders hold (``.obsidian/``, committed at vaultmem's start) nor leftovers."""
    parts = PurePosixPath(rel).parts
    if not parts or rel.endswith(".md") or parts[-1].startswith("."):
        return False
    return not any(p in IGNORED_DIRS or p.startswith(".") for p in parts[:-1]) and not is_never_committed(rel)


def bad_name_reason(rel: str) -> str | None:
    """Why a path that would be a note is skipped because of its name (not UTF-8), or None."""
    if is_valid_name(rel):
        return None
    return (
        f"{shown(rel)}: the name is not valid UTF-8 (made on a system with another encoding?); "
        "vaultmem does not read it: rename it"
    )


def not_a_file_reason(rel: str, mode: int) -> str | None:
    """Why a path named like a note is skipped because it is no file (a pipe, a socket...), or None."""
    kind = kind_of(mode)
    if kind is None:
        return None
    return f"{shown(rel)}: is {kind}, not a file; vaultmem never reads it: remove it or rename it"


def is_ignored_rel(rel: str, home: str = "") -> bool:
    """True when a vault-relative posix path is not a note vaultmem should read or index (``home``:
    vaultmem's folder in the vault, whose README is not a note)."""
    parts = PurePosixPath(rel).parts
    if not parts or not rel.endswith(".md") or is_side_file(rel, home):
        return True
    if any(p in IGNORED_DIRS or p.startswith(".") for p in parts[:-1]):
        return True
    if parts[-1] in ROOT_NON_NOTES and "/".join(parts[:-1]) == home:
        return True
    return is_ignored_name(parts[-1]) or parts[-1].startswith(".")


class VaultLayout:
    """Paths of one vault: its root, vaultmem's folder in it, its state directory and how
    vault-relative paths resolve.

    ``home`` is where vaultmem keeps its own files: the root for a vault it created (its class
    folders, ``filing.yaml`` and ``desk/`` beside nothing else), or one folder of its own
    (``Memory/``) in a vault that already held a person's notes when ``vaultmem init`` adopted
    it. It is read from the vault itself (:func:`vaultmem.config.memory_home`) unless given.
    Outside ``home`` every file is the person's: indexed and linked, never written
    (:meth:`check_writable`).
    """

    def __init__(self, root: Path, state_dir: Path | None = None, home: str | None = None) -> None:
        self.root = root.expanduser().resolve()
        self.home = memory_home(self.root) if home is None else home.strip("/")
        default_state = self.root / self.home / STATE_DIRNAME
        self.state_dir = (state_dir or default_state).expanduser().resolve()

    def in_home(self, rel: str) -> str:
        """``rel`` (relative to vaultmem's folder) as a vault-relative path."""
        return in_home(self.home, rel)

    def writable(self, rel: str) -> bool:
        """Whether vaultmem may write the file ``rel``: anything in its own folder (the whole vault
        when that is the root); never a person's file outside it."""
        return not self.home or rel.startswith(self.home + "/")

    def unwritable_reason(self, rel: str) -> str | None:
        """Why vaultmem may not write ``rel`` (a person's file outside its folder), or None."""
        if self.writable(rel):
            return None
        return (
            f"{rel} is the person's own note, outside vaultmem's folder {self.home}/: vaultmem "
            "reads, searches and links it but never changes it. Write a new memory instead (it "
            f"is filed under {self.home}/ and may link to this note), or ask the person to edit it"
        )

    def check_writable(self, rel: str) -> None:
        """Refuse a write to a person's file outside vaultmem's folder (invariant 6)."""
        reason = self.unwritable_reason(rel)
        if reason is not None:
            raise InvalidInput(reason)

    def is_side_file(self, rel: str) -> bool:
        """:func:`is_side_file` in this vault."""
        return is_side_file(rel, self.home)

    def is_ignored(self, rel: str) -> bool:
        """:func:`is_ignored_rel` in this vault."""
        return is_ignored_rel(rel, self.home)

    def resolve(self, rel: str) -> Path:
        """The absolute path of a vault-relative path, refusing anything that leaves the vault."""
        if not rel or "\0" in rel or rel.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", rel):
            raise InvalidInput(f"{rel!r} is not a path inside the vault")
        pure = PurePosixPath(rel.replace("\\", "/"))
        if any(part in ("..", "") for part in pure.parts):
            raise InvalidInput(f"{rel!r} is not a path inside the vault")
        target = (self.root / pure).resolve()
        if target != self.root and self.root not in target.parents:
            raise InvalidInput(f"{rel!r} resolves outside the vault")
        return target

    def rel(self, path: Path) -> str:
        """The vault-relative posix path of an absolute path inside the vault."""
        return path.resolve().relative_to(self.root).as_posix()

    def skip_reason(self, rel: str) -> str | None:
        """Why the file at ``rel`` is skipped rather than read as a note (its name is not UTF-8, or
        it is a pipe, socket or device, itself or through a symlink), or None."""
        reason = bad_name_reason(rel)
        if reason is not None:
            return reason
        try:
            mode = (self.root / rel).stat().st_mode
        except OSError:
            return None
        return not_a_file_reason(rel, mode)

    def iter_note_paths(
        self, skipped: dict[str, str] | None = None, temp_files: list[str] | None = None
    ) -> Iterator[tuple[str, os.stat_result]]:
        """Every note file in the vault with its stat, skipping ignored folders and files.

        Sorted by folder, then name. Plain strings and ``os.scandir`` rather than ``Path`` objects,
        and one loop over a stack of folders rather than a generator per folder: this walk is a
        third of a start's catalog scan (0.47 s at 100k notes, 0.26 s of it the ``stat`` calls).
        Symlinked folders are not walked into (as ``os.walk`` does by default). Paths that look like
        notes but are not readable as one (a name that is not UTF-8, a named pipe, a socket) are
        left out and, when ``skipped`` is given, recorded in it as ``{printable path: why}``. When
        ``temp_files`` is given, the temp files of vaultmem's atomic writes (``TEMP_PREFIX``) met on
        the way are appended to it, vault-relative: a start removes what a crash left behind
        without walking the vault a second time.
        """
        skip_state = str(self.state_dir)
        skipped = {} if skipped is None else skipped
        home_prefix = self.home + "/" if self.home else ""
        desk_prefix = in_home(self.home, _DESK_PREFIX)
        stack = [(str(self.root), "")]
        while stack:
            folder, prefix = stack.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = list(listing)
            except OSError:
                continue
            dirs: list[tuple[str, str]] = []
            files: list[str] = []
            for entry in entries:
                name = entry.name
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                if is_dir:
                    if name in IGNORED_DIRS or name.startswith(".") or entry.path == skip_state:
                        continue
                    if not is_valid_name(name):  # every note below would have an unprintable path
                        skipped[shown(prefix + name) + "/"] = (
                            f"{shown(prefix + name)}/: the folder's name is not valid UTF-8; vaultmem "
                            "does not look inside it: rename it"
                        )
                        continue
                    if not entry.is_symlink():
                        dirs.append((name, entry.path))
                elif name.endswith(".md") and not name.startswith("."):
                    # (no swap or backup pattern of is_ignored_name ends in ".md" or starts
                    # otherwise than with "."; tests/test_catalog_cache.py checks it stays so)
                    files.append(name)
                elif temp_files is not None and name.startswith(TEMP_PREFIX):
                    temp_files.append(prefix + name)
            files.sort()
            base = folder + os.sep
            in_desk = prefix.startswith(desk_prefix)
            at_home = prefix == home_prefix
            for name in files:
                if (at_home and name in ROOT_NON_NOTES) or (
                    in_desk and is_side_file(prefix + name, self.home)
                ):
                    continue  # vaultmem's README, a slot or project file under its desk/: never notes
                if not name.isascii() and not is_valid_name(name):  # the folders above are valid
                    skipped[shown(prefix + name)] = bad_name_reason(prefix + name) or ""
                    continue
                try:
                    st = os.stat(base + name)  # noqa: PTH116 (no Path objects: speed)
                except OSError:
                    continue
                if not S_ISREG(st.st_mode):  # a FIFO would block the read: never open it
                    skipped[prefix + name] = not_a_file_reason(prefix + name, st.st_mode) or ""
                    continue
                yield prefix + name, st
            dirs.sort(reverse=True)  # popped in name order, each folder's own before the next's
            stack.extend((path, f"{prefix}{name}/") for name, path in dirs)
