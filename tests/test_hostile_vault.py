"""Hostile YAML already in the vault: each file is reported as a catalog problem, left byte-for-byte
as it is, and the service keeps working around it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import OpenService, git_status, hand_write
from layers import parts

from vaultmem.errors import NotFound

BOMB = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]" for i in range(8)]
)

HOSTILE: dict[str, bytes] = {
    "alias-bomb": f"---\n{BOMB}\n---\nboom\n".encode(),
    "a-list": b"---\n- status\n- active\n---\nbody\n",
    "status-no": b"---\nid: 0190a5f0-0000-7000-8000-0000000000b1\nstatus: no\n---\nbody\n",
    "huge-frontmatter": b"---\n"
    + b"".join(b"k%07d: %s\n" % (i, b"v" * 100) for i in range(10_000))
    + b"---\nb\n",
    "not-utf8": b"---\ntitle: caf\xe9\n---\nbody \xff\xfe\n",
    "python-tag": b"---\nx: !!python/object/apply:os.system ['echo pwned']\n---\nbody\n",
    "bad-yaml": b"---\ntitle: [unclosed\n---\nbody\n",
    "numeric-key": b"---\n1: one\n---\nbody\n",
}


@pytest.fixture
def hostile_vault(vault: Path) -> dict[str, tuple[Path, bytes]]:
    files = {}
    for name, data in HOSTILE.items():
        files[name] = (hand_write(vault, f"memory/semantic/{name}.md", data), data)
    return files


def test_hostile_files_are_reported_and_left_untouched(
    hostile_vault: dict[str, tuple[Path, bytes]], open_service: OpenService
) -> None:
    assert len(HOSTILE["huge-frontmatter"]) > 1_000_000
    service = open_service()
    problems = parts(service).catalog.problems
    for name, (path, data) in hostile_vault.items():
        rel = f"memory/semantic/{name}.md"
        assert rel in problems, name
        assert rel in problems[rel]  # the report names the file
        assert path.read_bytes() == data


def test_the_service_keeps_working_around_hostile_files(
    hostile_vault: dict[str, tuple[Path, bytes]], open_service: OpenService, vault: Path
) -> None:
    service = open_service()
    appended = service.append("A sane memory next to hostile ones.", "reference", title="Alias bomb")
    assert appended["slug"] != "alias-bomb"  # the hostile file's name is still taken
    captured = service.capture("A sane capture.")
    assert captured["success"] is True
    assert service.forget(appended["id"])["already_deleted"] is False
    assert git_status(vault) == ""
    for path, data in hostile_vault.values():
        assert path.read_bytes() == data


def test_a_hostile_note_cannot_be_forgotten_by_its_id(
    hostile_vault: dict[str, tuple[Path, bytes]], open_service: OpenService
) -> None:
    service = open_service()
    with pytest.raises(NotFound):
        service.forget("0190a5f0-0000-7000-8000-0000000000b1")
    path, data = hostile_vault["status-no"]
    assert path.read_bytes() == data


def test_a_bom_never_makes_a_deleted_note_look_live(vault: Path, open_service: OpenService) -> None:
    body = "A body shared with a deleted note."
    deleted = hand_write(
        vault,
        "memory/semantic/bom-deleted.md",
        "\ufeff---\r\nid: 0190a5f0-0000-7000-8000-0000000000c1\r\nstatus: deleted\r\n---\r\n" + body + "\r\n",
    )
    data = deleted.read_bytes()
    service = open_service()
    entry = parts(service).catalog.by_id("0190a5f0-0000-7000-8000-0000000000c1")
    assert entry is not None and entry.status == "deleted"
    result = service.append(body, "reference")
    assert result["deduplicated"] is False  # a deleted twin is not reinforced
    assert service.forget("0190a5f0-0000-7000-8000-0000000000c1")["already_deleted"] is True
    assert deleted.read_bytes() == data


def test_forgetting_a_crlf_note_keeps_crlf_and_the_bom(vault: Path, open_service: OpenService) -> None:
    text = (
        "\ufeff---\r\nid: 0190a5f0-0000-7000-8000-0000000000c2\r\ntitle: Windows note\r\n"
        "mine: 1\r\n---\r\nline one\r\nline two\r\n"
    )
    path = hand_write(vault, "memory/semantic/windows-note.md", text)
    service = open_service()
    service.forget("0190a5f0-0000-7000-8000-0000000000c2", reason="old")
    raw = path.read_bytes()
    assert raw.startswith("\ufeff---\r\n".encode())
    assert b"\n" not in raw.replace(b"\r\n", b"")
    assert raw.endswith(b"---\r\nline one\r\nline two\r\n")
    assert b"mine: 1\r\n" in raw and b"status: deleted\r\n" in raw


def test_a_flow_mapping_note_is_refused_not_corrupted(vault: Path, open_service: OpenService) -> None:
    text = "---\n{id: 0190a5f0-0000-7000-8000-0000000000c3, status: active}\n---\nbody\n"
    path = hand_write(vault, "memory/semantic/flow.md", text)
    service = open_service()
    with pytest.raises(Exception, match="one `key: value` entry per line"):
        service.forget("0190a5f0-0000-7000-8000-0000000000c3")
    assert path.read_text("utf-8") == text
    assert service.append("still working", "reference")["deduplicated"] is False


def test_two_notes_with_the_same_id_are_reported(vault: Path, open_service: OpenService) -> None:
    note = "---\nid: 0190a5f0-0000-7000-8000-0000000000d1\ntitle: {t}\n---\n{t}\n"
    hand_write(vault, "memory/semantic/a.md", note.format(t="a"))
    hand_write(vault, "memory/semantic/b.md", note.format(t="b"))
    service = open_service()
    assert any("same id" in p for p in parts(service).catalog.problems.values())


def test_a_hostile_project_yaml_does_not_break_capture(vault: Path, open_service: OpenService) -> None:
    hand_write(vault, "desk/projects/bad/project.yaml", "code_paths: &x [*x]\n")
    hand_write(vault, "desk/projects/list/project.yaml", "- not\n- a mapping\n")
    hand_write(vault, "desk/projects/good/project.yaml", "name: Good\ncode_paths: [/code/good]\n")
    service = open_service()
    result = service.capture("from the good project", cwd="/code/good/src")
    assert result["success"] is True
    assert service.note(result["id"]).project == "Good"
    assert len(parts(service).projects.problems) == 2


def test_files_vaultmem_must_not_read_are_skipped(vault: Path, open_service: OpenService) -> None:
    hand_write(vault, ".obsidian/plugins/x.md", "---\nstatus: no\n---\n")
    hand_write(vault, ".trash/old.md", "---\nstatus: no\n---\n")
    hand_write(vault, "memory/semantic/.hidden.md", "---\nstatus: no\n---\n")
    service = open_service()
    assert parts(service).catalog.problems == {}
    assert len(parts(service).catalog) == 0
