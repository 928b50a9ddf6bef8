"""``memory_manage``: projects as vault folders, ``<desk>/<slug>/project.yaml`` (name, id, code_paths,
description).

The same registry (:class:`vaultmem.filing.projects.ProjectRegistry`) resolves every tool's ``cwd``
and ``memory_capture``'s project, so a project created here is used at once. Thoughts store their
project's *name*: renaming a project rewrites ``project:`` in its thoughts, and deleting one (preview
first) marks its ``project.yaml`` ``status: deleted`` (the file is kept: nothing is unlinked) and moves
its thoughts to the default project, which is no project. Each action is one git commit.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import yaml

from vaultmem.errors import Conflict, InvalidInput, MalformedNote, NotFound
from vaultmem.filing.contract import Contract
from vaultmem.filing.projects import DELETED, Project, validate_project
from vaultmem.notes import frontmatter as fm
from vaultmem.notes.ids import uuid7
from vaultmem.notes.model import iso
from vaultmem.notes.slugs import make_slug
from vaultmem.operations.context import Context
from vaultmem.operations.results import Answer, Json, Row, Scope
from vaultmem.safe_yaml import load_yaml_mapping
from vaultmem.vault.entry import Entry
from vaultmem.vault.layout import PROJECT_FILE
from vaultmem.vault.plan import Plan
from vaultmem.vault.sidefiles import edit_yaml, read_side, side_text

TOOL = "memory_manage"
NO_CWD_WARNING = "no cwd — the answer spans every project"
RESOLVE_HINT = "(check it with memory_manage action=resolve)"
MAX_DESCRIPTION_CHARS = 2000


def check_local_path(value: Json) -> str:
    """A project's code folder: an absolute path (``~`` expanded, ``..`` folded)."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("local_path is required: the absolute path of the project's code folder")
    path = Path(value.strip()).expanduser()
    if not path.is_absolute():
        raise InvalidInput(f"local_path {value!r} must be an absolute path, like /home/me/code/shop")
    return os.path.normpath(path)


def _description(value: Json) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_DESCRIPTION_CHARS:
        raise InvalidInput(f"description must be text of at most {MAX_DESCRIPTION_CHARS} characters")
    return value.strip()


class Projects:
    """The actions of ``memory_manage``."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.registry = ctx.projects

    # -- reading ------------------------------------------------------------------------------------
    def _folder(self, contract: Contract, project: Project) -> str:
        return f"{contract.projects_desk}/{project.slug}"

    def members(self, name: str) -> list[Entry]:
        """Every note stamped with this project (any status: a forgotten one moves too)."""
        wanted = name.casefold()
        return [e for e in self.ctx.catalog.entries() if e.project and e.project.casefold() == wanted]

    def row(self, contract: Contract, project: Project) -> Row:
        thoughts = sum(1 for e in self.members(project.name) if e.status != "deleted")
        return {
            "id": project.id,
            "name": project.name,
            "slug": project.slug,
            "local_path": project.code_paths[0] if project.code_paths else None,
            "code_paths": list(project.code_paths),
            "description": project.description,
            "folder": self._folder(contract, project),
            "thought_count": thoughts,
        }

    def require(self, contract: Contract, project_id: Json) -> Project:
        if not isinstance(project_id, str) or not project_id.strip():
            raise InvalidInput("project_id is required: pass the id of a project (memory_manage action=list)")
        project = self.registry.by_id(contract, project_id)
        if project is None:
            raise NotFound(f"no project has id {project_id}; list them with memory_manage action=list")
        return project

    def list(self, fields: Sequence[str] | None = None) -> Answer:
        contract = self.ctx.contract()
        rows = [self.row(contract, p) for p in sorted(self.registry.projects(contract), key=lambda p: p.name)]
        if fields is not None:
            wanted = set(fields)
            rows = [{k: v for k, v in r.items() if k in wanted} for r in rows]
        return Answer.many("list", rows)

    def resolve(self, cwd: Json) -> Answer:
        if not isinstance(cwd, str) or not cwd.strip():
            raise InvalidInput(
                "cwd is required for action=resolve: pass the path (your working directory) to resolve"
            )
        found = self.registry.match(self.ctx.contract(), cwd)
        if found is None:
            answer = Answer.one("resolve", None)
            answer.scope = Scope(payload={"project": None, "project_name": None, "global": True})
            answer.reason = "no_match"
            answer.warnings.append(
                f'cwd "{cwd}" matches no known project: no project lists it (or a folder above it) in '
                "code_paths; register one with memory_manage action=create"
            )
            return answer
        project, listed = found
        answer = Answer.one("resolve", {"id": project.id, "name": project.name, "local_path": listed})
        answer.scope = Scope(payload={"project": project.id, "project_name": project.name, "global": False})
        return answer

    # -- create / update ------------------------------------------------------------------------------
    def create(self, name: Json, local_path: Json, description: Json = None) -> Answer:
        contract = self.ctx.contract()
        if not isinstance(name, str) or not name.strip():
            raise InvalidInput("name is required to create a project")
        clean = validate_project(name)
        assert clean is not None
        path = check_local_path(local_path)
        about = _description(description)
        slug = make_slug(clean, fallback="project")
        rel = f"{contract.projects_desk}/{slug}/{PROJECT_FILE}"

        def decide() -> Plan[str]:
            if self.registry.by_name(contract, clean) is not None:
                raise Conflict(f"a project named {clean!r} already exists; pick another name")
            existing = read_side(self.ctx.layout, rel)
            if existing is not None and not _is_deleted(existing, rel):
                raise Conflict(f"{rel} already exists (another project's folder); pick another name")
            fields: dict[str, object] = {"name": clean, "id": uuid7(), "code_paths": [path]}
            if about:
                fields["description"] = about
            text = yaml.safe_dump(fields, allow_unicode=True, sort_keys=False, default_flow_style=False)
            draft = self.ctx.draft()
            draft.put(rel, side_text(text), "create project", create=existing is None, note=False)
            return draft.plan(str(fields["id"]))

        project_id = self.ctx.writer.run(decide, tool=TOOL, summary=f"create project {clean}").result
        assert project_id is not None
        project = self.registry.by_id(contract, project_id)
        assert project is not None
        return Answer.one("create", self.row(contract, project))

    def update(
        self, project_id: Json, name: Json = None, local_path: Json = None, description: Json = None
    ) -> Answer:
        contract = self.ctx.contract()
        new_name = validate_project(name) if isinstance(name, str) else None
        if name is not None and not isinstance(name, str):
            raise InvalidInput("name must be text")
        path = check_local_path(local_path) if local_path is not None else None
        about = _description(description)
        if new_name is None and path is None and about is None:
            raise InvalidInput("update needs at least one of name, local_path or description to change")

        def decide() -> Plan[str]:
            project = self.require(contract, project_id)
            rel = f"{self._folder(contract, project)}/{PROJECT_FILE}"
            text = read_side(self.ctx.layout, rel) or ""
            changes: dict[str, object] = {}
            draft = self.ctx.draft()
            if new_name is not None and new_name != project.name:
                other = self.registry.by_name(contract, new_name)
                if other is not None and other.id != project.id:
                    raise Conflict(f"a project named {new_name!r} already exists; pick another name")
                changes["name"] = new_name
                now = iso(self.ctx.now())
                for entry in self.members(project.name):  # thoughts store the name: follow the rename
                    note = draft.text_of(entry.path)
                    draft.put(
                        entry.path, fm.set_fields(note, {"project": new_name, "updated": now}), "rename"
                    )
            if path is not None:
                # First, and the others kept: each machine sharing the vault has its own checkout.
                changes["code_paths"] = [path, *(p for p in project.code_paths if p != path)]
            if about is not None:
                changes["description"] = about if about else fm.DELETE
            changes = {k: v for k, v in changes.items() if not (v is fm.DELETE and k not in _keys(text, rel))}
            if changes:
                draft.put(rel, side_text(edit_yaml(text, changes, source=rel)), "update project", note=False)
            return draft.plan(project.id)

        pid = self.ctx.writer.run(decide, tool=TOOL, summary="update project").result
        return Answer.one("update", {"success": True, "project_id": pid})

    # -- delete ---------------------------------------------------------------------------------------
    def delete(self, project_id: Json, confirm: bool, token: str | None) -> Answer:
        contract = self.ctx.contract()
        project = self.require(contract, project_id)
        args = {"project_id": project.id}
        row = self.row(contract, project)
        moving = len(self.members(project.name))
        if not confirm:
            item: Row = {
                "action": "preview",
                "status": "preview",
                "project": row,
                "thought_count": moving,
                "consequence": f"Deletes project {project.name!r}: its project.yaml is marked deleted (the "
                f"folder and files stay) and its {moving} thought(s) move to the default project (no "
                "project).",
                "instruction": f"Call memory_manage again with action=delete, project_id={project.id}, "
                "confirm=true and this preview_token to proceed.",
            }
            return self.ctx.tokens.preview_one(TOOL, "delete", args, item)
        self.ctx.tokens.redeem(
            token, TOOL, "delete", args, f"memory_manage action=delete project_id={project.id}"
        )

        def decide() -> Plan[int]:
            current = self.require(contract, project.id)  # revalidate: still there
            rel = f"{self._folder(contract, current)}/{PROJECT_FILE}"
            now = iso(self.ctx.now())
            draft = self.ctx.draft()
            members = self.members(current.name)
            for entry in members:
                note = draft.text_of(entry.path)
                draft.put(
                    entry.path, fm.set_fields(note, {"project": fm.DELETE, "updated": now}), "unproject"
                )
            text = read_side(self.ctx.layout, rel) or ""
            edited = edit_yaml(text, {"status": DELETED, "deleted_at": now}, source=rel)
            draft.put(rel, side_text(edited), "delete project", note=False)
            return draft.plan(len(members))

        moved = self.ctx.writer.run(decide, tool=TOOL, summary=f"delete project {project.name}").result
        item = {
            "action": "deleted",
            "status": "deleted",
            "project": row,
            "thoughts_moved": moved,
            "moved_to": None,
        }
        return Answer.one("delete", item)


def _keys(text: str, rel: str) -> set[str]:
    return set(load_yaml_mapping(text, source=rel)) if text.strip() else set()


def _is_deleted(text: str, rel: str) -> bool:
    try:
        return load_yaml_mapping(text, source=rel).get("status") == DELETED
    except MalformedNote:
        return False


def project_id(ctx: Context, name: str | None) -> str | None:
    """The id of the registered project called ``name`` (None for no project or an unknown one)."""
    if name is None:
        return None
    project = ctx.projects.by_name(ctx.contract(), name)
    return project.id if project is not None else None


def project_named(ctx: Context, wanted: str) -> str | None:
    """The name of the registered project with this id, or None."""
    key = wanted.strip().lower()
    found = next((p for p in ctx.projects.projects(ctx.contract()) if p.id.lower() == key), None)
    return found.name if found is not None else None


def project_called(ctx: Context, name: str | None) -> Project | None:
    """The registered project called ``name`` (None for none)."""
    return ctx.projects.by_name(ctx.contract(), name) if name is not None else None


def scope_for(ctx: Context, cwd: str | None, *, reader: bool) -> Scope:
    """Resolve ``cwd`` to a project. A reader without one answers across every project and says so;
    a path that names no registered project answers globally (``global: true``) with a warning."""
    if cwd is None or not cwd.strip():
        return Scope(warnings=[NO_CWD_WARNING] if reader else [])
    project = ctx.projects.for_cwd(ctx.contract(), cwd)
    if project is None:
        tail = "the answer spans every project" if reader else "the thought is stored without a project"
        return Scope(
            payload={"project": None, "project_name": None, "global": True},
            warnings=[f'cwd "{cwd}" matches no known project {RESOLVE_HINT} — {tail}'],
            given=True,
        )
    return Scope(
        payload={"project": project.id, "project_name": project.name, "global": False},
        project=project.name,
        given=True,
    )
