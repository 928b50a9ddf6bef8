"""The catalog's start-up cache (``<state>/catalog.cache``) and the vault walk behind every scan.

The cache only saves re-reading unchanged notes: whatever it holds, a scan must end with the same
catalog as a full parse of the vault, and a damaged or foreign cache must be ignored, never trusted.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from pathlib import Path

import pytest
from conftest import OpenService
from hypothesis import given, settings
from hypothesis import strategies as st
from layers import parts

from vaultmem.notes.model import parse_time
from vaultmem.vault.atomic import TEMP_PREFIX
from vaultmem.vault.catalog import Catalog
from vaultmem.vault.catalog_cache import CACHE_VERSION
from vaultmem.vault.entry import ENTRY_FIELDS, Entry
from vaultmem.vault.layout import CONFLICT_COPY, VaultLayout, is_conflict_stem, is_ignored_rel
from vaultmem.vault.statefile import marshal_state, unmarshal_state


def _entries(catalog: Catalog) -> dict[str, Entry]:
    return {e.path: e for e in catalog.entries()}


def _write_notes(open_service: OpenService, count: int) -> VaultLayout:
    service = open_service()
    for i in range(count):
        service.append(
            f"cache note {i}: the [[other]] heron", "reference", title=f"cache note {i}", tags=[f"t{i}"]
        )
    return parts(service).layout


def test_a_second_scan_reads_unchanged_notes_from_the_cache(open_service: OpenService) -> None:
    layout = _write_notes(open_service, 12)
    first = Catalog(layout)
    seen, _parsed = first.scan()
    assert seen == 12
    assert _cache_file(layout).is_file()

    second = Catalog(layout)
    seen, parsed = second.scan()
    assert (seen, parsed) == (12, 0)
    assert _entries(second) == _entries(first)


def test_a_changed_file_is_parsed_again(open_service: OpenService) -> None:
    layout = _write_notes(open_service, 3)
    Catalog(layout).scan()
    target = sorted(p for p, _ in layout.iter_note_paths())[1]
    path = layout.root / target
    path.write_text(
        path.read_text(encoding="utf-8").replace("heron", "heron and a kingfisher"), encoding="utf-8"
    )
    catalog = Catalog(layout)
    _seen, parsed = catalog.scan()
    assert parsed == 1
    entry = catalog.by_path(target)
    assert entry is not None and entry.size == path.stat().st_size


def _cache_file(layout: VaultLayout) -> Path:
    return layout.state_dir / "catalog.cache"


def _damaged(raw: bytes, damage: str) -> bytes:
    """The cache file's bytes, damaged as ``damage`` says."""
    if damage == "cut short":  # a crash while another tool copied it, a full disk
        return raw[: len(raw) // 2]
    if damage == "one byte flipped":
        at = len(raw) - 10
        return raw[:at] + bytes([raw[at] ^ 0xFF]) + raw[at + 1 :]
    if damage == "another Python's marshal":
        return raw.replace(b"cpython-", b"cpython-x", 1)
    if damage == "an older version":
        return marshal_state((7, ENTRY_FIELDS, ()))
    if damage == "other fields":
        return marshal_state((CACHE_VERSION, ("path",), (("x.md",),)))
    if damage == "not a tuple":
        return marshal_state([CACHE_VERSION, ENTRY_FIELDS, ()])
    return {"empty": b"", "text": b"not a cache at all {"}[damage]


@pytest.mark.parametrize(
    "damage",
    [
        "cut short", "one byte flipped", "another Python's marshal", "an older version",
        "other fields", "not a tuple", "empty", "text",
    ],
)  # fmt: skip
def test_a_damaged_or_foreign_cache_is_ignored(open_service: OpenService, damage: str) -> None:
    layout = _write_notes(open_service, 4)
    want = Catalog(layout)
    want.scan()
    cache = _cache_file(layout)
    cache.write_bytes(_damaged(cache.read_bytes(), damage))
    catalog = Catalog(layout)
    seen, parsed = catalog.scan()
    assert (seen, parsed) == (4, 4)
    assert _entries(catalog) == _entries(want)
    assert Catalog(layout).scan() == (4, 0)  # rebuilt and saved again


@pytest.mark.parametrize("cut", ["a short column", "a missing column"])
def test_cache_columns_of_the_wrong_shape_are_ignored(open_service: OpenService, cut: str) -> None:
    layout = _write_notes(open_service, 2)
    Catalog(layout).scan()
    cache = _cache_file(layout)
    version, fields, stored = unmarshal_state(cache.read_bytes())  # type: ignore[misc]
    columns = list(stored)
    if cut == "a short column":
        columns[3] = columns[3][:-1]
    else:
        del columns[-1]
    cache.write_bytes(marshal_state((version, fields, tuple(columns))))
    catalog = Catalog(layout)
    assert catalog.scan() == (2, 2)


def test_the_cache_gives_back_entries_equal_to_a_parse_with_their_strings_shared(
    open_service: OpenService,
) -> None:
    """Read back, an entry equals the parsed one field for field (tuples stay tuples), and the
    strings the index holds too come back interned: one object in both (``sys.intern``)."""
    layout = _write_notes(open_service, 5)
    parsed = Catalog(layout)
    parsed.scan()
    _cache_file(layout).unlink(missing_ok=True)
    parsed.scan()  # every note parsed, the cache written from parsed entries
    cached = Catalog(layout)
    assert cached.scan() == (5, 0)
    assert _entries(cached) == _entries(parsed)
    for entry in cached.entries():
        assert type(entry.tags) is tuple and type(entry.links) is tuple
        assert all(type(pair) is tuple for pair in entry.links)
        for held_by_the_index_too in (entry.path, entry.title, entry.content_hash):
            copy = "".join(list(held_by_the_index_too))  # an equal string, another object
            assert sys.intern(copy) is held_by_the_index_too


def test_a_legacy_json_cache_is_replaced(open_service: OpenService) -> None:
    layout = _write_notes(open_service, 3)
    legacy = layout.state_dir / "catalog.json"
    legacy.write_text(json.dumps({"version": 7, "fields": [], "columns": []}), encoding="utf-8")
    _cache_file(layout).unlink(missing_ok=True)
    assert Catalog(layout).scan() == (3, 3)
    assert not legacy.exists() and _cache_file(layout).is_file()


def test_the_walk_yields_exactly_the_paths_that_are_notes(tmp_path: Path) -> None:
    """The fast walk agrees with the path rules (``is_ignored_rel``) on a tree of every kind of name."""
    root = tmp_path / "v"
    names = [
        "a.md", "README.md", "x.md~", ".hidden.md", "n (1).md", "b.md.swp", "c.txt", "Z.md", "4913",
        "project_context.md", "project.yaml", "active_goals.md", ".vaultmem-tmp-1.md",
        # names a swap or backup pattern might one day take for its own: the walk does not ask
        # is_ignored_name of a name ending in ".md", so this test is what keeps the two in step
        "#a#.md", "a.bak.md", "4913.md", "a.tmp.md", "a~.md", ".#a.md", "a.swp.md",
    ]  # fmt: skip
    folders = ["", "notes", "notes/deep", "desk", "desk/projects/p", ".obsidian", ".trash", ".git",
               ".vaultmem", "node_modules", "sub/.hidden"]  # fmt: skip
    written: list[str] = []
    for folder in folders:
        (root / folder).mkdir(parents=True, exist_ok=True)
        for name in names:
            (root / folder / name).write_text("x", encoding="utf-8")
            written.append(f"{folder}/{name}" if folder else name)
    os.symlink(tmp_path, root / "loop")  # a symlinked folder is not walked into
    temp_files: list[str] = []
    walked = [rel for rel, _st in VaultLayout(root).iter_note_paths(temp_files=temp_files)]
    assert sorted(walked) == sorted(r for r in written if not is_ignored_rel(r))
    # a folder's notes by name, then its folders one by one, each walked whole before the next
    assert walked == sorted(walked, key=lambda r: (r.split("/")[:-1], r.rsplit("/", 1)[-1]))
    # the temp files of atomic writes, in the folders walked (a start removes them)
    walked_folders = {"", "notes", "notes/deep", "desk", "desk/projects/p"}
    assert sorted(temp_files) == sorted(
        r for r in written if TEMP_PREFIX in r and r.rpartition("/")[0] in walked_folders
    )
    assert "a.md" in walked and "notes/deep/Z.md" in walked and "desk/projects/p/a.md" in walked
    assert not any(r.startswith(("loop/", ".obsidian/", "node_modules/")) for r in walked)


@settings(max_examples=300, deadline=None)
@given(
    when=st.datetimes(min_value=dt.datetime(1970, 1, 2), max_value=dt.datetime(2200, 1, 1)),
    offset=st.sampled_from(["Z", "+00:00", "-05:00", "+14:00", ""]),
    micro=st.booleans(),
)
def test_the_day_the_daily_cap_counts_is_the_day_the_stamp_says(
    when: dt.datetime, offset: str, micro: bool
) -> None:
    """The cap counts a note on the day of its ``created`` stamp in the stamp's own offset, read
    without a parse for the usual stamps (a start counts every note): the same day a parse gives."""
    stamp = when.replace(microsecond=when.microsecond if micro else 0).isoformat() + offset
    parsed = parse_time(stamp)
    assert parsed is not None
    entry = Entry(
        "a.md", None, "a", "fact", "active", None, (), stamp, stamp, "f", "h", None, None, False, (), 0, 0
    )
    assert entry.created_day == parsed.date().isoformat()


_STEM_PIECES = ["a", " ", "(", ")", "1", "Conflict", "conflicted copy", "'s ", ".sync-",
                "-20260101-101010-AB", ".CONFLICT-", "1a2b3c4d"]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(
    stem=st.one_of(
        st.text(max_size=40),
        st.builds(
            "".join,
            st.lists(st.sampled_from(_STEM_PIECES), max_size=8),
        ),
    )
)
def test_the_quick_conflict_copy_check_agrees_with_the_patterns(stem: str) -> None:
    """Every start asks of every note whether it is a sync client's conflict copy; the answer
    without the expression (no ")" and no "conflict") is the expression's."""
    assert is_conflict_stem(stem) == bool(CONFLICT_COPY.search(stem))
