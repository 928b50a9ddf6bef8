"""memory_forget: soft delete. Each test is one sentence of the forget section."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import OpenService, commit_count, file_of, git, git_status, hand_write

from vaultmem.errors import NotFound
from vaultmem.memory import Memory
from vaultmem.notes.frontmatter import parse


@pytest.fixture
def memory(service: Memory) -> dict:
    return service.append("The staging database is at db-staging:5432.", "reference", title="Staging DB")


def test_forget_returns_id_status_deleted_and_already_deleted(service: Memory, memory: dict) -> None:
    """Seed: "Returns: {id, status: "deleted", already_deleted}."."""
    result = service.forget(memory["id"])
    assert result == {"id": memory["id"], "status": "deleted", "already_deleted": False}


def test_forget_flips_status_and_stamps_deleted_at_and_reason(service: Memory, memory: dict, clock) -> None:
    """Seed: "It flips status → deleted. It stamps deleted_at in the file's frontmatter." and
    "reason ... stamped into the entry's frontmatter as delete_reason"."""
    clock.advance(minutes=5)
    service.forget(memory["id"], reason="moved to the wiki")
    note = service.note(memory["id"])
    assert note.status == "deleted"
    assert note.deleted_at == "2026-03-14T09:35:00Z"
    assert note.delete_reason == "moved to the wiki"
    assert "deleted_at" not in service.forget(memory["id"])  # not returned to the caller


def test_forget_without_a_reason_stamps_no_reason(service: Memory, memory: dict) -> None:
    service.forget(memory["id"])
    assert "delete_reason" not in parse(file_of(service, memory["id"]).read_text("utf-8")).meta


def test_forget_twice_is_idempotent_and_does_not_restamp(
    service: Memory, memory: dict, vault: Path, clock
) -> None:
    """Seed: "It returns already_deleted: true. It does not error. It does not re-stamp the entry."."""
    service.forget(memory["id"], reason="first")
    path = file_of(service, memory["id"])
    before, commits = path.read_bytes(), commit_count(vault)
    clock.advance(days=1)
    again = service.forget(memory["id"], reason="second")
    assert again == {"id": memory["id"], "status": "deleted", "already_deleted": True}
    assert path.read_bytes() == before
    assert commit_count(vault) == commits


def test_forget_of_an_unknown_id_is_a_clear_not_found(service: Memory) -> None:
    """Seed: "FileNotFoundError (memory_forget) Memory ID does not exist"."""
    with pytest.raises(NotFound, match="no memory has id"):
        service.forget("0190a5f0-0000-7000-8000-000000000000")
    with pytest.raises(NotFound, match="not a memory id"):
        service.forget("not-an-id")


def test_forget_accepts_an_id_in_any_case_and_without_hyphens(service: Memory, memory: dict) -> None:
    result = service.forget(memory["id"].replace("-", "").upper())
    assert result["id"] == memory["id"] and result["already_deleted"] is False


def test_the_file_is_never_unlinked(service: Memory, memory: dict, vault: Path) -> None:
    """Seed: "The server never unlinks the backing file."."""
    path = file_of(service, memory["id"])
    service.forget(memory["id"])
    assert path.is_file()
    assert "The staging database is at db-staging:5432." in path.read_text("utf-8")
    assert git(vault, "log", "--diff-filter=D", "--name-only", "--format=") == ""


def test_forget_is_committed_as_a_content_update(service: Memory, memory: dict, vault: Path) -> None:
    """Seed: "A status flip propagates to the sync client as a content update. It is not a delete."."""
    service.forget(memory["id"], reason="obsolete")
    assert git_status(vault) == ""
    assert git(vault, "log", "-1", "--name-status", "--format=").split() == [
        "M",
        "memory/semantic/staging-db.md",
    ]
    message = git(vault, "log", "-1", "--format=%B")
    assert message.startswith("memory_forget: delete staging-db")
    assert f"id: {memory['id']}" in message


def test_forget_keeps_the_rest_of_the_file_byte_for_byte(vault: Path, open_service: OpenService) -> None:
    original = (
        "---\n"
        "# my own comment\n"
        "id: 0190a5f0-0000-7000-8000-0000000000aa\n"
        "title: Hand made\n"
        "status: active   # reviewed\n"
        "my_field: {keep: [1, 2]}\n"
        "kind: reference\n"
        "---\n"
        "Body with  two spaces\nand no final newline"
    )
    path = hand_write(vault, "memory/semantic/hand-made.md", original, commit=True)
    service = open_service()
    service.forget("0190a5f0-0000-7000-8000-0000000000aa")
    text = path.read_text("utf-8")
    assert text.startswith("---\n# my own comment\nid: 0190a5f0-0000-7000-8000-0000000000aa\n")
    assert "my_field: {keep: [1, 2]}\nkind: reference\n" in text
    assert "status: deleted\n" in text
    assert text.endswith("---\nBody with  two spaces\nand no final newline")


def test_an_operator_can_undelete_by_flipping_status_back(
    vault: Path, service: Memory, memory: dict, open_service: OpenService
) -> None:
    """Seed: "An operator can un-delete an entry. They do this by flipping status back in the vault
    directly."."""
    service.forget(memory["id"])
    path = file_of(service, memory["id"])
    path.write_text(path.read_text("utf-8").replace("status: deleted", "status: active"), "utf-8")
    service.close()
    reopened = open_service()
    assert reopened.note(memory["id"]).status == "active"
    assert reopened.forget(memory["id"])["already_deleted"] is False


def test_forget_of_a_memory_whose_file_a_person_removed_is_not_found(
    service: Memory, memory: dict, vault: Path
) -> None:
    path = file_of(service, memory["id"])
    trash = vault / ".trash"
    trash.mkdir()
    path.rename(trash / path.name)  # deleted in Obsidian while vaultmem runs
    with pytest.raises(NotFound, match="no memory has id"):
        service.forget(memory["id"])
    assert not path.exists()  # nothing was recreated
    with pytest.raises(NotFound):
        service.note(memory["id"])
