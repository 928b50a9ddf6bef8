"""memory_manage through MCP: projects as vault folders with a project.yaml; the same registry resolves
every tool's cwd and memory_capture's project.

Each test is a sentence of ../shared/seeds/000_30b85c2247cb72d3.txt, section memory_manage (and the
issue: create takes name, local_path and description; delete moves the thoughts to the default project).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from conftest import FakeClock, commit_count, git
from upkeep_wire import LocalWire, frontmatter, local_runtime, log_subjects

from vaultmem.memory import Memory


@pytest.fixture
def runtime(vault: Path, clock: FakeClock) -> Iterator[Memory]:
    with local_runtime(vault, clock) as rt:
        yield rt


@pytest.fixture
def wire(runtime: Memory) -> LocalWire:
    return LocalWire(runtime)


def create(wire: LocalWire, name: str, path: Path, **extra: str) -> dict[str, object]:
    return wire.ok("memory_manage", action="create", name=name, local_path=str(path), **extra)["item"]


def test_create_writes_a_project_folder_with_project_yaml_and_commits(
    wire: LocalWire, vault: Path, tmp_path: Path
) -> None:
    """create → { item: <project>, meta }: the project is a vault folder with project.yaml (name, id,
    code_paths, description), one commit."""
    before = commit_count(vault)
    code = tmp_path / "code" / "shop"
    item = create(wire, "Shop", code, description="the web shop")
    assert item["name"] == "Shop" and item["local_path"] == str(code) and item["code_paths"] == [str(code)]
    assert item["folder"] == "desk/projects/shop" and item["thought_count"] == 0
    data = yaml.safe_load((vault / "desk/projects/shop/project.yaml").read_text(encoding="utf-8"))
    assert data == {
        "name": "Shop",
        "id": item["id"],
        "code_paths": [str(code)],
        "description": "the web shop",
    }
    assert commit_count(vault) == before + 1
    assert log_subjects(vault, 1) == ["memory_manage: create project Shop desk/projects/shop/project.yaml"]
    assert git(vault, "status", "--porcelain") == ""
    listed = wire.ok("memory_manage", action="list")
    assert [p["name"] for p in listed["items"]] == ["Shop"] and listed["meta"]["counts"]["total"] == 1


def test_create_refuses_a_taken_name_and_a_relative_path(wire: LocalWire, tmp_path: Path) -> None:
    create(wire, "Shop", tmp_path / "shop")
    message, error = wire.error("memory_manage", action="create", name="shop", local_path=str(tmp_path / "x"))
    assert error is not None and error["statusCode"] == 409 and "already exists" in message
    message, error = wire.error("memory_manage", action="create", name="Other", local_path="code/other")
    assert error is not None and error["statusCode"] == 400 and "absolute" in message


def test_a_created_project_scopes_cwd_and_memory_capture_at_once(wire: LocalWire, tmp_path: Path) -> None:
    """The same project registry drives memory_capture's project resolution and every tool's cwd."""
    code = tmp_path / "code" / "shop"
    item = create(wire, "Shop", code)
    captured = wire.call(
        "memory_capture", content="checkout is slow on mobile", title="slow checkout", cwd=str(code / "web")
    )
    assert captured.structured_content is not None and captured.structured_content["success"] is True
    listed = wire.recall(action="list", cwd=str(code / "web"))
    assert listed["meta"]["scope"] == {"project": item["id"], "project_name": "Shop", "global": False}
    assert [t["content"] for t in listed["items"]] == ["checkout is slow on mobile"]


def test_list_fields_narrow_each_row(wire: LocalWire, tmp_path: Path) -> None:
    """list → { items: <projects>, meta } (fields narrows each project row)."""
    create(wire, "Shop", tmp_path / "shop")
    rows = wire.ok("memory_manage", action="list", fields=["id", "name"])["items"]
    assert set(rows[0]) == {"id", "name"}


def test_resolve_answers_the_project_of_a_path_and_requires_cwd(wire: LocalWire, tmp_path: Path) -> None:
    """resolve → { item: { id, name, local_path }, meta }; "a call without cwd fails with an isError
    envelope naming the argument"."""
    code = tmp_path / "code" / "shop"
    item = create(wire, "Shop", code)
    answer = wire.ok("memory_manage", action="resolve", cwd=str(code / "src" / "deep"))
    assert answer["item"] == {"id": item["id"], "name": "Shop", "local_path": str(code)}
    assert answer["meta"]["scope"] == {"project": item["id"], "project_name": "Shop", "global": False}
    message, error = wire.error("memory_manage", action="resolve")
    assert "cwd" in message and error is not None and error["statusCode"] == 400
    nothing = wire.ok("memory_manage", action="resolve", cwd=str(tmp_path / "elsewhere"))
    assert nothing["item"] is None and nothing["meta"]["reason"] == "no_match"


def test_update_edits_project_yaml_key_by_key_and_follows_a_rename(
    wire: LocalWire, vault: Path, tmp_path: Path
) -> None:
    """update requires project_id → { item: { success: true, project_id }, meta }; a person's comments
    in project.yaml stay; a new name is written into the project's thoughts in the same commit."""
    code = tmp_path / "shop"
    item = create(wire, "Shop", code)
    rel = "desk/projects/shop/project.yaml"
    path = vault / rel
    path.write_text(
        path.read_text(encoding="utf-8") + "# kept: a person's note\nowner: ann\n", encoding="utf-8"
    )
    tid = wire.create("a shop thought", cwd=str(code))
    before = commit_count(vault)
    answer = wire.ok("memory_manage", action="update", project_id=item["id"], name="Web Shop", description="")
    assert answer["item"] == {"success": True, "project_id": item["id"]}
    text = path.read_text(encoding="utf-8")
    assert "name: Web Shop" in text and "# kept: a person's note\nowner: ann\n" in text
    # The person's uncommitted edit is committed first, under their name (issue 18); then the update
    # is one commit of project.yaml and the renamed project's thought.
    assert commit_count(vault) == before + 2
    assert git(vault, "log", "-2", "--format=%s").splitlines()[1] == f"hand edit: {rel}"
    thought = wire.recall(action="get", thought_id=tid, compact=False)["item"]
    assert {rel, thought["path"]} <= set(git(vault, "show", "--name-only", "--format=", "HEAD").split())
    assert thought["project"] == "Web Shop" and frontmatter(vault, thought["path"])["project"] == "Web Shop"
    assert wire.recall(action="list", cwd=str(code))["meta"]["scope"]["project_name"] == "Web Shop"
    _message, error = wire.error("memory_manage", action="update", project_id="nope", name="X")
    assert error is not None and error["statusCode"] == 404


def test_delete_previews_then_moves_thoughts_to_the_default_project(
    wire: LocalWire, vault: Path, tmp_path: Path
) -> None:
    """delete requires project_id and is preview-first: the preview item carries action: preview,
    project, thought_count, consequence, instruction and preview_token (meta.preview mirrors the token);
    the executed item carries action: deleted, project, thoughts_moved and moved_to. Nothing is
    unlinked: project.yaml stays, marked deleted; one commit."""
    code = tmp_path / "shop"
    item = create(wire, "Shop", code)
    ids = [wire.create(f"shop thought {i}", cwd=str(code)) for i in range(3)]
    before = commit_count(vault)
    preview = wire.ok("memory_manage", action="delete", project_id=item["id"])
    p = preview["item"]
    assert p["action"] == "preview" and p["thought_count"] == 3 and p["project"]["id"] == item["id"]
    assert p["consequence"] and p["instruction"] and preview["meta"]["preview"]["token"] == p["preview_token"]
    assert commit_count(vault) == before
    done = wire.ok(
        "memory_manage",
        action="delete",
        project_id=item["id"],
        confirm=True,
        preview_token=p["preview_token"],
    )["item"]
    assert done["action"] == "deleted" and done["thoughts_moved"] == 3 and done["moved_to"] is None
    assert commit_count(vault) == before + 1 and log_subjects(vault, 1) == [
        "memory_manage: delete project Shop: shop-thought-0, shop-thought-1, shop-thought-2"
    ]
    project_yaml = yaml.safe_load((vault / "desk/projects/shop/project.yaml").read_text(encoding="utf-8"))
    assert project_yaml["status"] == "deleted" and project_yaml["name"] == "Shop"
    for tid in ids:
        thought = wire.recall(action="get", thought_id=tid, compact=False)["item"]
        assert thought["project"] is None and "project" not in frontmatter(vault, thought["path"])
        assert (vault / thought["path"]).is_file()
    assert wire.ok("memory_manage", action="list")["items"] == []
    assert wire.ok("memory_manage", action="resolve", cwd=str(code))["item"] is None
    # The name is free again.
    assert create(wire, "Shop", code)["name"] == "Shop"


def test_delete_needs_the_token(wire: LocalWire, tmp_path: Path) -> None:
    item = create(wire, "Shop", tmp_path / "shop")
    message, error = wire.error("memory_manage", action="delete", project_id=item["id"], confirm=True)
    assert error is not None and error["statusCode"] == 400 and "preview_token" in message


def test_a_hand_edit_of_project_yaml_is_seen_at_once(wire: LocalWire, vault: Path, tmp_path: Path) -> None:
    """project.yaml is the source of truth: a person editing code_paths changes what cwd resolves to."""
    item = create(wire, "Shop", tmp_path / "shop")
    path = vault / "desk/projects/shop/project.yaml"
    moved = tmp_path / "moved"
    path.write_text(
        path.read_text(encoding="utf-8").replace(str(tmp_path / "shop"), str(moved)), encoding="utf-8"
    )
    assert wire.ok("memory_manage", action="resolve", cwd=str(moved))["item"]["id"] == item["id"]
