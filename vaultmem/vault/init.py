"""Create a vault, or adopt a folder that already holds a person's notes, and commit the start.

Two layouts (``docs/architecture.md``, "Adopting a vault in place"):

- **A fresh folder** (missing, or empty but for ``.git``) gets the template at its root: the class
  folders, ``filing.yaml``, ``desk/``, ``Projects/``, ``README.md`` and ``.gitignore``. Vaults made
  by earlier versions have this layout and keep it: nothing is ever moved.
- **A folder that already holds anything** (a person's Obsidian vault) gets *one* folder of
  vaultmem's own, ``Memory/`` unless named otherwise, holding the template and a ``vaultmem.yaml``
  that marks it (so the same vault opened on another machine is read the same way), plus
  vaultmem's lines appended to the root ``.gitignore``. No other file at the root is created, and
  no file of the person's is opened for writing.

An existing git repository is reused, its history kept and only vaultmem's own files committed (a
person's uncommitted work stays uncommitted). A folder without one gets one, with the person's
files as they are in the first commit and vaultmem's folder in the second.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from vaultmem.config import CONFIG_FILE, DEFAULT_HOME, STATE_DIRNAME, find_homes
from vaultmem.errors import InvalidInput, VaultError
from vaultmem.resources import vault_template
from vaultmem.vault.atomic import TEMP_PREFIX, atomic_write
from vaultmem.vault.history import GitRepo
from vaultmem.vault.layout import IGNORED_DIRS, in_home, is_never_committed
from vaultmem.vault.merge_driver import configure

#: What a folder may hold and still count as empty (it gets the template at its root).
_EMPTY_FOLDER_ENTRIES = frozenset({".git", ".DS_Store"})
#: Obsidian's per-device window layout: rewritten on every click, not a note; kept out of the
#: first commit of a repository vaultmem makes, and ignored from then on.
OBSIDIAN_WORKSPACE = (".obsidian/workspace.json", ".obsidian/workspace-mobile.json")
#: Obsidian's trash (never committed: :data:`NEVER_COMMITTED_DIRS`) and macOS Finder's files, which
#: the template's own ``.gitignore`` ignores too: in an adopted vault the one showed in `git status`
#: for good, the other went into the first commit.
PER_DEVICE_LEFTOVERS = ("/.trash/", ".DS_Store")
_MARKER_TEXT = """\
# vaultmem's settings for this vault (every key is optional; see vaultmem's docs/architecture.md).
# This file also marks this folder as vaultmem's own: what agents write is filed below it, and the
# notes elsewhere in the vault are the person's, searched and linked but never changed.
"""


def init_vault(
    root: Path, git_dir: Path | None = None, folder: str | None = None, *, size_limit: int = 0
) -> tuple[Path, bool]:
    """Create (or complete) a vault at ``root``; return its path and whether anything was created.

    ``folder`` names vaultmem's own folder when the vault is adopted in place (default
    ``Memory``); giving it also adopts an empty folder that way. A vault vaultmem already knows
    is completed in its own layout (template files only added where missing). ``git_dir`` keeps
    a new repository outside the vault, which is what a Dropbox or Google Drive vault needs. A file
    above ``size_limit`` bytes that is not a note is left out of the commits (:mod:`vaultmem.vault.sizes`).
    """
    root = root.expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise VaultError(f"{root} exists and is not a folder; choose another path for the vault")
    homes = find_homes(root) if root.is_dir() else []
    if homes:
        home = homes[0]  # already a vault: its layout stays as it is
    elif folder is not None or _holds_files(root):
        home = _new_home(root, folder or DEFAULT_HOME)
    else:
        home = ""
    repo = GitRepo(root, size_limit=size_limit)
    had_repo = root.is_dir() and repo.is_repo()
    root.mkdir(parents=True, exist_ok=True)
    if not had_repo:
        _make_repo(root, git_dir)
        if home:  # the person's files as they are, before vaultmem adds anything
            repo.commit_all_pending("vaultmem init: the vault's notes as they were", include=_persons)
    written = _copy_template(root, home)
    if home:
        if _write_marker(root / home / CONFIG_FILE):
            written.append(f"{home}/{CONFIG_FILE}")
        if _add_ignore_lines(root / ".gitignore", _ignore_lines(home)):
            written.append(".gitignore")
    if configure(repo, home):  # notes merge field by field between machines (docs/sync.md)
        written.append(in_home(home, ".gitattributes"))
    if had_repo or home:
        if written:
            repo.commit_paths(written, _message(home))
    else:
        repo.commit_all_pending("vaultmem: create the vault")
    return root, bool(written) or not had_repo


def _holds_files(root: Path) -> bool:
    """Whether ``root`` holds anything of a person's (any entry but an empty repository's)."""
    try:
        with os.scandir(root) as listing:
            return any(entry.name not in _EMPTY_FOLDER_ENTRIES for entry in listing)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise VaultError(f"cannot read {root}: {exc.strerror}") from exc


def _new_home(root: Path, name: str) -> str:
    """``name`` checked as vaultmem's folder in ``root``: one visible folder, empty if it exists."""
    name = name.strip().strip("/")
    if (
        not name
        or "/" in name
        or "\\" in name
        or name in (".", "..")
        or name.startswith(".")
        or name in IGNORED_DIRS
    ):
        raise InvalidInput(
            f"--folder {name!r} must be the name of one visible folder at the vault's root, such as "
            f"{DEFAULT_HOME}"
        )
    target = root / name
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise InvalidInput(
            f"{target} already exists and holds your files; vaultmem needs a folder of its own: "
            f"name another one with `vaultmem init --folder NAME {root}`"
        )
    return name


def _make_repo(root: Path, git_dir: Path | None) -> None:
    if git_dir is not None:
        git_dir = git_dir.expanduser().resolve()
        if git_dir == root or root in git_dir.parents:
            raise VaultError(f"--git-dir {git_dir} must be outside the vault {root}")
        git_dir.parent.mkdir(parents=True, exist_ok=True)
    GitRepo.init(root, git_dir)


def _persons(rel: str) -> bool:
    """A path of the person's first commit: everything but leftovers and Obsidian's layout."""
    return not is_never_committed(rel) and rel not in OBSIDIAN_WORKSPACE and not rel.endswith(".DS_Store")


def _copy_template(root: Path, home: str) -> list[str]:
    """Copy the template's missing files into vaultmem's folder; return the paths written.

    At the root the template's ``.gitignore`` comes too; in vaultmem's own folder its lines are
    appended to the root's ``.gitignore`` instead (see :func:`_ignore_lines`).
    """
    template = vault_template()
    base = root / home
    written: list[str] = []
    for source in sorted(template.rglob("*")):
        rel = source.relative_to(template).as_posix()
        if home and rel == ".gitignore":
            continue
        target = base / rel
        if source.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            written.append(f"{home}/{rel}" if home else rel)
    return written


def _write_marker(path: Path) -> bool:
    if path.exists():
        return False
    atomic_write(path, _MARKER_TEXT.encode("utf-8"))
    return True


def _ignore_lines(home: str) -> list[str]:
    """What vaultmem needs in the root ``.gitignore`` of a vault with its own folder ``home``."""
    return [f"/{home}/{STATE_DIRNAME}/", f"{TEMP_PREFIX}*", *OBSIDIAN_WORKSPACE, *PER_DEVICE_LEFTOVERS]


def _add_ignore_lines(path: Path, lines: list[str]) -> bool:
    """Append the ``lines`` missing from the ignore file at ``path``, every other byte kept."""
    try:
        existing = path.read_bytes()
    except FileNotFoundError:
        existing = b""
    present = {line.strip() for line in existing.decode("utf-8", "replace").splitlines()}
    missing = [line for line in lines if line not in present]
    if not missing:
        return False
    prefix = existing if not existing or existing.endswith(b"\n") else existing + b"\n"
    block = "# vaultmem: its derived state and temp files, Obsidian's per-device layout and trash\n"
    atomic_write(path, prefix + (block + "\n".join(missing) + "\n").encode("utf-8"))
    return True


def _message(home: str) -> str:
    if not home:
        return "vaultmem: complete the vault"
    return (
        f"vaultmem init: add its folder {home}/\n\n"
        f"vaultmem keeps its own files in {home}/ (the class folders, projects and this vault's\n"
        "filing contract); the notes elsewhere are the person's, indexed and linked, never changed.\n"
    )
