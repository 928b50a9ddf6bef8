"""UUIDv7 ids, the id shapes a query may take, and vault paths that never leave the vault."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vaultmem.errors import InvalidInput
from vaultmem.notes.ids import canonical_id, is_full_id, is_id_prefix, uuid7
from vaultmem.vault.layout import VaultLayout, is_ignored_rel


def test_uuid7_has_version_7_and_the_rfc_variant() -> None:
    value = uuid.UUID(uuid7())
    assert value.version == 7
    assert value.variant == uuid.RFC_4122


def test_uuid7_ids_from_many_threads_are_unique_and_increase_per_thread() -> None:
    per_thread: list[list[str]] = [[] for _ in range(4)]

    def make(out: list[str]) -> None:
        out.extend(uuid7() for _ in range(2000))

    threads = [threading.Thread(target=make, args=(out,)) for out in per_thread]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = [i for out in per_thread for i in out]
    assert len(set(everything)) == len(everything)
    for out in per_thread:
        assert out == sorted(out)  # id order is creation order


def test_id_shapes() -> None:
    full = uuid7()
    assert is_full_id(full) and is_full_id(full.replace("-", "").upper())
    assert canonical_id(full.upper().replace("-", "")) == full
    assert is_id_prefix(full[:16]) and not is_id_prefix(full[:8])
    assert not is_full_id("not-an-id") and not is_id_prefix("cafe")


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> VaultLayout:
    root = tmp_path_factory.mktemp("vault")
    (root / "memory").mkdir()
    return VaultLayout(root)


@pytest.mark.parametrize(
    "rel",
    ["", "../x.md", "memory/../../x.md", "/etc/passwd", "\\\\server\\share", "C:/x.md", "c:x.md",
     "a\x00b.md", "..", "memory/..\\..\\x.md"],
)  # fmt: skip
def test_resolve_refuses_paths_that_leave_the_vault(layout: VaultLayout, rel: str) -> None:
    with pytest.raises(InvalidInput):
        layout.resolve(rel)


def test_resolve_refuses_a_symlink_out_of_the_vault(layout: VaultLayout, tmp_path: Path) -> None:
    link = layout.root / "escape"
    if not link.exists():
        link.symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(InvalidInput, match="outside the vault"):
        layout.resolve("escape/note.md")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.sampled_from([*"ab./\\:\x00 C~", "..", "é", "escape"]), max_size=12).map("".join) | st.text()
)
def test_no_path_resolve_accepts_is_outside_the_vault(layout: VaultLayout, rel: str) -> None:
    try:
        target = layout.resolve(rel)
    except InvalidInput:
        return
    assert target == layout.root or layout.root in target.parents


@pytest.mark.parametrize(
    ("rel", "ignored"),
    [
        ("memory/a.md", False),
        ("README.md", True),
        ("memory/README.md", False),
        (".obsidian/x.md", True),
        (".trash/x.md", True),
        (".vaultmem/x.md", True),
        ("memory/.vaultmem-tmp-a.md.1.ff", True),
        ("memory/a.md~", True),
        ("memory/.a.md.swp", True),
        ("memory/a.txt", True),
    ],
)
def test_which_files_are_notes(rel: str, ignored: bool) -> None:
    assert is_ignored_rel(rel) is ignored
