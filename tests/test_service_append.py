"""memory_append: the reviewed front door. Each test is one sentence of the append section."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import OpenService, commit_count, file_of, git, git_status, hand_write, note_files

from vaultmem.errors import InvalidInput
from vaultmem.filing.rules import idempotency_tag
from vaultmem.memory import Memory
from vaultmem.notes.slugs import make_slug


def test_append_returns_exactly_id_slug_and_deduplicated(service: Memory) -> None:
    """Seed: "Returns: {id, slug, deduplicated}. You will not find title, status, or created_at"."""
    result = service.append("Prefer ruff over flake8 for linting.", "preference")
    assert set(result) == {"id", "slug", "deduplicated"}
    assert result["deduplicated"] is False
    assert result["slug"] == "prefer-ruff-over-flake8-for-linting"


def test_append_files_the_note_under_the_kind_class_directory(service: Memory, vault: Path) -> None:
    result = service.append("Steps to cut a release: tag, build, upload.", "workflow", title="Release")
    path = vault / "memory/procedural/release.md"
    assert path.is_file()
    note = service.note(result["id"])
    assert note.path == "memory/procedural/release.md"
    assert (note.kind, note.status, note.title, note.occurrences) == ("workflow", "active", "Release", 1)
    assert note.body == "Steps to cut a release: tag, build, upload.\n"


def test_append_with_tags_stores_them(service: Memory) -> None:
    result = service.append("Tagged memory", "reference", tags=["python", "#tooling", "python"])
    assert service.note(result["id"]).tags == ("python", "tooling")


def test_idempotency_key_returns_the_same_entry_without_a_second_file(service: Memory) -> None:
    """Seed: "You might provide an idempotency_key that already exists. In this case, the server returns the
    existing entry with deduplicated: true. It does not write a second copy."""
    first = service.append("Deploy on Fridays is forbidden.", "convention", idempotency_key="req-42")
    files = note_files(service.settings.vault)
    again = service.append("Deploy on Fridays is forbidden.", "convention", idempotency_key="req-42")
    assert again == {"id": first["id"], "slug": first["slug"], "deduplicated": True}
    assert note_files(service.settings.vault) == files


def test_idempotency_key_ignores_different_content(service: Memory) -> None:
    """Seed: "memory_append dedupes purely on the idempotency-key tag matching. It ignores whether the new
    content differs from what is already stored."""
    first = service.append("Version one of the text", "fix", idempotency_key="retry-7")
    again = service.append("A completely different text", "decision", idempotency_key="retry-7")
    assert again["id"] == first["id"] and again["deduplicated"] is True
    assert len(note_files(service.settings.vault)) == 1
    assert service.note(first["id"]).body == "Version one of the text\n"


def test_idempotency_key_is_stored_hashed_and_the_raw_key_appears_nowhere(
    service: Memory, vault: Path
) -> None:
    """Seed: "idempotency_key ... Deduplicates concurrent writes; stored as a hashed tag"."""
    raw_key = "secret-idempotency-key-7f3a"
    result = service.append("Hashed key memory", "reference", idempotency_key=raw_key)
    path = file_of(service, result["id"])
    assert idempotency_tag(raw_key) in service.note(result["id"]).tags
    assert raw_key not in path.read_text(encoding="utf-8")
    assert raw_key not in git(vault, "log", "-p", "--all")


def test_idempotency_survives_a_restart(service: Memory, open_service: OpenService) -> None:
    first = service.append("Remember across restarts", "fix", idempotency_key="k")
    service.close()
    again = open_service().append("Remember across restarts, v2", "fix", idempotency_key="k")
    assert again == {**first, "deduplicated": True}


def test_exact_fingerprint_reinforces_the_active_twin(service: Memory, clock) -> None:
    """Seed: "An exact match reinforces that note instead of writing a new one — its occurrences count and
    updated stamp bump; no new file appears."""
    first = service.append("Use uv to manage Python environments.", "preference")
    before = service.note(first["id"])
    clock.advance(hours=2)
    again = service.append("Use uv to manage Python environments.", "preference")
    after = service.note(first["id"])
    assert again == {"id": first["id"], "slug": first["slug"], "deduplicated": True}
    assert after.occurrences == before.occurrences + 1 == 2
    assert after.updated == "2026-03-14T11:30:00Z" and after.created == before.created
    assert len(note_files(service.settings.vault)) == 1


def test_reinforce_returns_the_existing_slug_even_when_the_title_differs(service: Memory) -> None:
    """Seed: "On this path the returned slug is the existing note's real slug, not the one your title /
    content would have generated."""
    first = service.append("Run tests with pytest -x.", "workflow", title="Testing habit")
    again = service.append("Run tests with pytest -x.", "fix", title="Something else entirely")
    assert again["slug"] == first["slug"] == "testing-habit"
    assert again["deduplicated"] is True


def test_fingerprint_ignores_line_endings_and_outer_whitespace(service: Memory) -> None:
    first = service.append("line one\nline two", "reference")
    again = service.append("  line one\r\nline two\r\n\n", "reference")
    assert again["id"] == first["id"] and again["deduplicated"] is True


def test_near_duplicate_is_not_reinforced(service: Memory) -> None:
    """Seed: "This check is exact-fingerprint-only. No near-duplicate heuristic runs synchronously"."""
    first = service.append("Use uv to manage Python environments.", "preference")
    second = service.append("Use uv to manage Python environments!", "preference")
    assert second["id"] != first["id"] and second["deduplicated"] is False


TWIN = """---
id: 0190a5f0-0000-7000-8000-0000000000{n:02d}
title: Twin
kind: reference
status: {status}
{extra}created: '2026-01-01T00:00:00Z'
occurrences: 1
---
The shared body of a twin.
"""


@pytest.mark.parametrize(
    ("status", "extra"),
    [
        ("deleted", "deleted_at: '2026-01-02T00:00:00Z'\n"),
        ("superseded", ""),
        ("expired", ""),
        ("active", "always_load: true\n"),
        ("unfiled", ""),
    ],
)
def test_only_an_active_note_is_a_reinforce_target(
    vault: Path, open_service: OpenService, status: str, extra: str
) -> None:
    """Seed: "It also only reinforces a note whose status is active; an expired, deleted, superseded, or
    curated always-load note is never a reinforce target, and your write proceeds normally"."""
    twin = hand_write(vault, "memory/semantic/twin.md", TWIN.format(n=1, status=status, extra=extra))
    twin_bytes = twin.read_bytes()
    service = open_service()
    result = service.append("The shared body of a twin.", "reference", title="Twin")
    assert result["deduplicated"] is False
    assert result["slug"] != "twin"  # the twin keeps its name; the new note grows its own
    assert twin.read_bytes() == twin_bytes
    assert len(note_files(vault)) == 2


def test_title_falls_back_to_the_first_60_characters_of_content(service: Memory) -> None:
    """Seed: "title ... Falls back to a slug of content[:60] when omitted"."""
    content = "When the build cache is stale, delete .cache/build and rerun make; " * 3
    result = service.append(content, "fix")
    note = service.note(result["id"])
    assert note.title == " ".join(content[:60].split())
    assert result["slug"] == make_slug(content[:60])
    assert note.body == content + "\n"  # there is no separate body param: content is the whole entry


def test_project_without_a_vault_root_folder_goes_to_the_desk(service: Memory, vault: Path) -> None:
    """Seed: "Groups the entry under the project's own space — the vault-root Projects/<project> when it
    holds the project, else desk/projects/<project>"."""
    result = service.append("Acme uses Postgres 16.", "reference", project="Acme Web", title="DB")
    note = service.note(result["id"])
    assert note.path == "desk/projects/acme-web/db.md"
    assert note.project == "Acme Web"


def test_project_with_a_vault_root_folder_is_filed_there(vault: Path, open_service: OpenService) -> None:
    (vault / "Projects" / "Acme Web").mkdir(parents=True)
    (vault / "Projects" / "gizmo").mkdir(parents=True)
    service = open_service()
    acme = service.note(service.append("Acme uses Postgres 16.", "reference", project="Acme Web")["id"])
    gizmo = service.note(service.append("Gizmo ships monthly.", "decision", project="Gizmo")["id"])
    assert acme.path.startswith("Projects/Acme Web/")
    assert gizmo.path.startswith("Projects/gizmo/")  # matched case-insensitively, folder kept as is
    assert gizmo.project == "Gizmo"


def test_unknown_kind_is_refused_with_the_list_of_kinds(service: Memory, vault: Path) -> None:
    with pytest.raises(InvalidInput) as info:
        service.append("some content", "recipe")
    message = str(info.value)
    for kind in ("preference", "convention", "reference", "workflow", "fix", "decision", "idea", "capture"):
        assert kind in message
    assert "filing.yaml" in message
    assert note_files(vault) == []


@pytest.mark.parametrize(
    ("alias", "kind", "directory"),
    [
        ("bug", "fix", "memory/episodic"),
        ("howto", "workflow", "memory/procedural"),
        ("Pref", "preference", "memory/semantic"),
    ],
)
def test_a_retired_kind_name_is_filed_as_its_alias_target(
    service: Memory, alias: str, kind: str, directory: str
) -> None:
    note = service.note(service.append(f"aliased {alias}", alias)["id"])
    assert note.kind == kind
    assert note.path.startswith(directory + "/")


def test_slug_collision_grows_the_name_with_the_next_meaningful_word(service: Memory) -> None:
    """The card collision rule: "the next meaningful word, never a ~dup mark"."""
    a = service.append("Cache busting for the CDN.", "fix", title="Cache fix")
    b = service.append("Cache invalidation for Redis keys.", "fix", title="Cache fix")
    assert a["slug"] == "cache-fix"
    assert b["slug"] == "cache-fix-invalidation"
    assert "~" not in b["slug"] and "dup" not in b["slug"]


def test_collision_falls_back_to_a_hash_when_no_word_frees_the_name(service: Memory) -> None:
    service.append("Kubernetes", "reference", title="Kubernetes")
    second = service.append("kubernetes!", "reference", title="Kubernetes")
    assert second["slug"].startswith("kubernetes-")
    suffix = second["slug"].removeprefix("kubernetes-")
    assert len(suffix) == 6 and all(c in "0123456789abcdef" for c in suffix)


def test_every_append_is_committed(service: Memory, vault: Path) -> None:
    before = commit_count(vault)
    service.append("committed memory", "decision")
    assert commit_count(vault) == before + 1
    assert git_status(vault) == ""
