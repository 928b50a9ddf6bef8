"""Project spaces and the project registry (``desk/projects/<slug>/project.yaml``)."""

from __future__ import annotations

import os
import re
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

from vaultmem.errors import InvalidInput, MalformedNote
from vaultmem.filing.contract import Contract
from vaultmem.notes.slugs import make_slug
from vaultmem.safe_yaml import load_yaml_mapping
from vaultmem.vault.reading import read_regular_text

MAX_PROJECT_CHARS = 100
#: Namespace of the ids of projects whose project.yaml carries no ``id``: uuid5(namespace, slug).
PROJECT_ID_NAMESPACE = uuid.UUID("6d1c9a4e-2b7f-5e30-8c41-9f0a7b3d2e15")
#: ``status`` of a project.yaml whose project was deleted (the file is kept, like a forgotten note).
DELETED = "deleted"
_BAD_PROJECT = re.compile(r"[\x00-\x1f\x7f/\\:*?\"<>|]")


def validate_project(project: str | None) -> str | None:
    """A project name usable as a folder name, or InvalidInput saying what to change."""
    if project is None:
        return None
    name = project.strip()
    if not name:
        return None
    if len(name) > MAX_PROJECT_CHARS:
        raise InvalidInput(f"project name is {len(name)} characters; use at most {MAX_PROJECT_CHARS}")
    if _BAD_PROJECT.search(name) or name in (".", "..") or name.startswith("."):
        raise InvalidInput(
            f"project {project!r} cannot be a folder name: use letters, digits, spaces, '-' or '_' "
            "(no '/', '\\', '..', control characters or a leading '.')"
        )
    return name


def project_id_for(slug: str) -> str:
    """The stable id of a project without an ``id`` in its project.yaml (derived from its folder)."""
    return str(uuid.uuid5(PROJECT_ID_NAMESPACE, slug))


@dataclass(frozen=True)
class Project:
    slug: str
    name: str
    code_paths: tuple[str, ...]
    description: str | None
    #: project.yaml's ``id`` when it has one, else :func:`project_id_for` of the folder name.
    id: str = ""
    #: The ids of the same project another machine created before they met (``merged_ids``:
    #: ``notes/project_merge.py``), still accepted wherever a project id is.
    merged_ids: tuple[str, ...] = ()


class ProjectRegistry:
    """Reads project.yaml files under the contract's desk folder, re-reading when they change."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._stamp: tuple[tuple[str, int], ...] = ()
        self._projects: list[Project] = []
        self.problems: dict[str, str] = {}

    def projects(self, contract: Contract) -> list[Project]:
        desk = self.root / contract.projects_desk
        files = sorted(desk.glob("*/project.yaml")) if desk.is_dir() else []
        stamp = tuple((str(f), _mtime(f)) for f in files)
        with self._lock:
            if stamp != self._stamp:
                self._projects, self.problems = _read_all(files)
                self._stamp = stamp
            return list(self._projects)

    def for_cwd(self, contract: Contract, cwd: str) -> Project | None:
        """The project whose ``code_paths`` holds ``cwd``; the longest listed path wins."""
        found = self.match(contract, cwd)
        return found[0] if found else None

    def match(self, contract: Contract, cwd: str) -> tuple[Project, str] | None:
        """The project whose ``code_paths`` holds ``cwd``, and the listed path that holds it."""
        here = _normal(cwd)
        best: tuple[int, Project, str] | None = None
        for project in self.projects(contract):
            for listed in project.code_paths:
                base = _normal(listed)
                if here == base or base in here.parents:
                    depth = len(base.parts)
                    if best is None or depth > best[0]:
                        best = (depth, project, listed)
        return (best[1], best[2]) if best else None

    def by_id(self, contract: Contract, project_id: str) -> Project | None:
        wanted = project_id.strip().lower()
        for project in self.projects(contract):
            if wanted == project.id.lower() or wanted in (m.lower() for m in project.merged_ids):
                return project
        return None

    def by_name(self, contract: Contract, name: str) -> Project | None:
        """The registered project whose display name (or folder) is ``name``, case-insensitively."""
        wanted = name.casefold()
        for project in self.projects(contract):
            if project.name.casefold() == wanted or project.slug.casefold() == wanted:
                return project
        return None

    def space_for(self, contract: Contract, project: str) -> str:
        """The vault-relative folder a project's entries are filed in.

        ``Projects/<project>`` in vaultmem's folder (the vault root, or ``Memory/`` in a vault
        adopted in place) when that folder exists (matched exactly, then case-insensitively), else
        ``desk/projects/<project slug>`` there.
        """
        root_dir = self.root / contract.projects_root
        if root_dir.is_dir():
            exact = root_dir / project
            if exact.is_dir():
                return f"{contract.projects_root}/{project}"
            lowered = project.lower()
            for child in sorted(root_dir.iterdir()):
                if child.is_dir() and child.name.lower() == lowered:
                    return f"{contract.projects_root}/{child.name}"
        return f"{contract.projects_desk}/{make_slug(project, fallback='project')}"


def _normal(path: str) -> Path:
    """``path`` with ``~`` expanded and ``.``/``..`` folded, so ``/code/shop/../other`` is not
    inside ``/code/shop``."""
    return Path(os.path.normpath(Path(path).expanduser()))


def _listed(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def _read_all(files: list[Path]) -> tuple[list[Project], dict[str, str]]:
    projects: list[Project] = []
    problems: dict[str, str] = {}
    for file in files:
        try:
            data = load_yaml_mapping(read_regular_text(file), source=str(file))  # never blocks
        except (OSError, UnicodeDecodeError, MalformedNote) as exc:
            problems[str(file)] = str(exc)
            continue
        if data.get("status") == DELETED:
            continue  # deleted with memory_manage: the file stays (nothing is unlinked), the project is gone
        paths = data.get("code_paths") or []
        if isinstance(paths, str):
            paths = [paths]
        if not isinstance(paths, list):
            problems[str(file)] = f"{file}: code_paths must be a list of folders"
            paths = []
        name = data.get("name")
        description = data.get("description")
        given_id = data.get("id")
        projects.append(
            Project(
                slug=file.parent.name,
                name=str(name) if isinstance(name, str) and name else file.parent.name,
                code_paths=tuple(str(p) for p in paths if isinstance(p, str) and p),
                description=str(description) if isinstance(description, str) else None,
                id=str(given_id)
                if isinstance(given_id, str | int) and str(given_id).strip()
                else project_id_for(file.parent.name),
                merged_ids=tuple(m for m in _listed(data.get("merged_ids")) if isinstance(m, str)),
            )
        )
    return projects, problems
