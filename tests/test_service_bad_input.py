"""Bad input is refused with a clear error before anything touches the disk, and nothing a caller
passes can place a file outside the vault."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import OpenService, head, note_files, snapshot, write_vault_contract
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vaultmem.errors import InvalidInput
from vaultmem.memory import Memory


@pytest.fixture
def untouched(vault: Path, service: Memory):
    """Assert, after the test body, that the vault and its history did not change at all."""
    before, before_head = snapshot(vault), head(vault)
    yield
    assert snapshot(vault) == before
    assert head(vault) == before_head


@pytest.mark.parametrize("content", ["", "   ", "\n\t\n"])
def test_empty_content_is_refused(service: Memory, untouched: None, content: str) -> None:
    with pytest.raises(InvalidInput, match="content is empty"):
        service.append(content, "reference")
    assert "content is empty" in service.capture(content)["error"]


def test_oversized_content_is_refused_before_any_disk_write(service: Memory, untouched: None) -> None:
    big = "x" * 100_001
    with pytest.raises(InvalidInput, match=r"100,001 bytes; the limit is 100,000"):
        service.append(big, "reference")
    assert "limits.max_content_bytes" in service.capture(big)["error"]


def test_the_size_limit_counts_utf8_bytes(service: Memory, untouched: None) -> None:
    with pytest.raises(InvalidInput, match="bytes"):
        service.append("é" * 50_001, "reference")  # 50,001 characters, 100,002 bytes


def test_the_size_limit_is_configurable_in_the_contract(vault: Path, open_service: OpenService) -> None:
    write_vault_contract(vault, lambda t: t.replace("max_content_bytes: 100000", "max_content_bytes: 10"))
    service = open_service()
    assert service.append("short", "reference")["deduplicated"] is False
    with pytest.raises(InvalidInput, match="the limit is 10 "):
        service.append("longer than ten bytes", "reference")


@pytest.mark.parametrize("content", ["a\x00b"])
def test_nul_in_content_is_refused(service: Memory, untouched: None, content: str) -> None:
    with pytest.raises(InvalidInput, match="NUL"):
        service.append(content, "reference")


@pytest.mark.parametrize("title", ["bad\x00title"])
def test_nul_in_a_title_is_refused(service: Memory, untouched: None, title: str) -> None:
    with pytest.raises(InvalidInput, match="NUL"):
        service.append("content", "reference", title=title)
    assert service.capture("content", title=title)["success"] is False


@pytest.mark.parametrize(
    "title",
    ["../../../etc/passwd", "/etc/passwd", "..\\..\\windows\\system32", "C:\\boot.ini", "..", "/", "CON"],
)
def test_path_like_titles_stay_inside_the_class_directory(
    service: Memory, vault: Path, tmp_path: Path, title: str
) -> None:
    result = service.append(f"content for {title}", "reference", title=title)
    note = service.note(result["id"])
    assert note.path.startswith("memory/semantic/")
    assert note.path.count("/") == 2
    assert (vault / note.path).resolve().parent == (vault / "memory" / "semantic").resolve()
    assert note.title == title  # the title itself is kept as given; only the file name is folded
    outside = [p for p in tmp_path.rglob("*") if vault not in (p, *p.parents)]
    assert outside == []


@pytest.mark.parametrize(
    "tag",
    ["../up", "/absolute", "nul\x00byte", "two words", "a..b", "trailing/", "idem-forged", "x" * 101],
)
def test_unusable_tags_are_refused(service: Memory, untouched: None, tag: str) -> None:
    with pytest.raises(InvalidInput):
        service.append("content", "reference", tags=[tag])
    assert service.capture("content", tags=[tag])["success"] is False


def test_nested_tags_are_accepted(service: Memory) -> None:
    result = service.append("content", "reference", tags=["lang/python", "#area/infra"])
    assert service.note(result["id"]).tags == ("lang/python", "area/infra")


@pytest.mark.parametrize(
    "project", ["../escape", "/abs/path", "a/b", "back\\slash", "nul\x00byte", ".hidden", "..", "x" * 101]
)
def test_unusable_project_names_are_refused(service: Memory, untouched: None, project: str) -> None:
    with pytest.raises(InvalidInput, match="project"):
        service.append("content", "reference", project=project)
    assert service.capture("content", project=project)["success"] is False


def test_a_project_name_with_spaces_and_unicode_gets_a_safe_folder(service: Memory) -> None:
    result = service.append("content", "reference", project="Café Crème 2", title="Menu")
    note = service.note(result["id"])
    assert note.path == "desk/projects/cafe-creme-2/menu.md"
    assert note.project == "Café Crème 2"


def test_a_huge_tag_list_is_refused(service: Memory, untouched: None) -> None:
    with pytest.raises(InvalidInput, match="51 tags"):
        service.append("content", "reference", tags=[f"t{i}" for i in range(51)])


def test_a_huge_title_is_refused(service: Memory, untouched: None) -> None:
    with pytest.raises(InvalidInput, match="title is 201 characters"):
        service.append("content", "reference", title="t" * 201)


def test_a_bad_idempotency_key_is_refused(service: Memory, untouched: None) -> None:
    for key in ("", "a\x00b", "k" * 501):
        with pytest.raises(InvalidInput, match="idempotency_key"):
            service.append("content", "reference", idempotency_key=key)


def test_bad_input_leaves_the_service_working(service: Memory, vault: Path) -> None:
    for bad in ("", "x" * 100_001):
        with pytest.raises(InvalidInput):
            service.append(bad, "reference")
    assert service.append("fine", "reference")["deduplicated"] is False
    assert len(note_files(vault)) == 1


TITLES = st.text(max_size=80) | st.lists(
    st.sampled_from(["..", "/", "\\", "C:", "\x00", "CON", "é", "a", " ", ".", "~dup"]), max_size=10
).map("".join)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(title=TITLES, project=TITLES, tag=TITLES)
def test_no_title_project_or_tag_ever_places_a_file_outside_its_space(
    service: Memory, vault: Path, title: str, project: str, tag: str
) -> None:
    try:
        result = service.append(f"content {title!r} {project!r} {tag!r}", "fix", project=project,
                                title=title, tags=[tag])  # fmt: skip
    except InvalidInput:
        return
    path = (vault / service.note(result["id"]).path).resolve()
    assert path.is_file()
    space = path.parent.relative_to(vault.resolve()).as_posix()
    assert space == "memory/episodic" or (space.startswith("desk/projects/") and space.count("/") == 2)
