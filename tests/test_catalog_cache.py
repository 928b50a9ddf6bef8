"""The catalog's start-up cache (``<state>/catalog.json``) and the vault walk behind every scan.

The cache only saves re-reading unchanged notes: whatever it holds, a scan must end with the same
catalog as a full parse of the vault, and a damaged or foreign cache must be ignored, never trusted.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest
from conftest import OpenService
from hypothesis import given, settings
from hypothesis import strategies as st
from layers import parts

from vaultmem.notes.model import parse_time
from vaultmem.vault.catalog import Catalog, Entry
from vaultmem.vault.layout import VaultLayout, is_ignored_rel


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
    assert (layout.state_dir / "catalog.json").is_file()

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


@pytest.mark.parametrize(
    "damage",
    [
        "not json at all {",
        json.dumps({"version": 4, "entries": []}),  # an older layout
        json.dumps({"version": 5, "fields": ["path"], "entries": [["x.md"]]}),  # other fields
        json.dumps({"version": 5, "fields": None, "entries": [[1, 2, 3]]}),
        "[]",
    ],
)
def test_a_damaged_or_foreign_cache_is_ignored(open_service: OpenService, damage: str) -> None:
    layout = _write_notes(open_service, 4)
    want = Catalog(layout)
    want.scan()
    (layout.state_dir / "catalog.json").write_text(damage, encoding="utf-8")
    catalog = Catalog(layout)
    seen, parsed = catalog.scan()
    assert (seen, parsed) == (4, 4)
    assert _entries(catalog) == _entries(want)


@pytest.mark.parametrize("cut", ["a short column", "a missing column"])
def test_cache_columns_of_the_wrong_shape_are_ignored(open_service: OpenService, cut: str) -> None:
    layout = _write_notes(open_service, 2)
    Catalog(layout).scan()
    cache = layout.state_dir / "catalog.json"
    data = json.loads(cache.read_text(encoding="utf-8"))
    if cut == "a short column":
        data["columns"][3] = data["columns"][3][:-1]
    else:
        del data["columns"][-1]
    cache.write_text(json.dumps(data), encoding="utf-8")
    catalog = Catalog(layout)
    assert catalog.scan() == (2, 2)


def test_the_walk_yields_exactly_the_paths_that_are_notes(tmp_path: Path) -> None:
    """The fast walk agrees with the path rules (``is_ignored_rel``) on a tree of every kind of name."""
    root = tmp_path / "v"
    names = [
        "a.md", "README.md", "x.md~", ".hidden.md", "n (1).md", "b.md.swp", "c.txt", "Z.md", "4913",
        "project_context.md", "project.yaml", "active_goals.md", ".vaultmem-tmp-1.md",
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
    walked = [rel for rel, _st in VaultLayout(root).iter_note_paths()]
    assert sorted(walked) == sorted(r for r in written if not is_ignored_rel(r))
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
