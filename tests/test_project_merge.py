"""``notes/project_merge.py``: a project.yaml two machines changed, merged key by key."""

from __future__ import annotations

import yaml

from vaultmem.notes.project_merge import is_project_file, merge_project

LAPTOP = b"name: shop\nid: 01a00000-0000-7000-8000-000000000001\ncode_paths:\n- /home/ann/code/shop\n"
DESKTOP = b"name: shop\nid: 01a00000-0000-7000-8000-000000000002\ncode_paths:\n- /Users/ann/src/shop\n"


def test_two_creations_of_one_project_keep_both_folders_and_the_older_id() -> None:
    for ours, theirs in ((LAPTOP, DESKTOP), (DESKTOP, LAPTOP)):
        merged = merge_project(b"", ours, theirs)
        assert merged.clean and set(merged.by_rule) == {"id", "code_paths"}
        data = yaml.safe_load(merged.merged)
        assert data["id"].endswith("0001") and data["merged_ids"] == ["01a00000-0000-7000-8000-000000000002"]
        assert sorted(data["code_paths"]) == ["/Users/ann/src/shop", "/home/ann/code/shop"]
    again = merge_project(b"", merge_project(b"", LAPTOP, DESKTOP).merged, DESKTOP)  # a later round
    assert yaml.safe_load(again.merged)["merged_ids"] == ["01a00000-0000-7000-8000-000000000002"]


def test_a_key_both_changed_otherwise_keeps_one_side_and_the_other_whole() -> None:
    ours = LAPTOP + b"description: the public shop\n"
    theirs = DESKTOP + b"description: the marketing shop\n"
    merged = merge_project(b"", ours, theirs)
    assert not merged.clean and merged.lost is not None and merged.lost.data in (ours, theirs)
    data = yaml.safe_load(merged.merged)
    assert len(data["code_paths"]) == 2  # what merges by rule still does
    one_side = LAPTOP + b"description: new\n"
    assert yaml.safe_load(merge_project(LAPTOP, one_side, LAPTOP).merged)["description"] == "new"
    gone = merge_project(LAPTOP, LAPTOP + b"status: deleted\n", DESKTOP)
    assert yaml.safe_load(gone.merged)["status"] == "deleted"


def test_a_side_that_is_not_a_mapping_is_merged_as_text() -> None:
    merged = merge_project(b"", b"- not\n- a mapping\n", LAPTOP)
    assert merged.mode == "text" and merged.merged in (LAPTOP, b"- not\n- a mapping\n")
    assert is_project_file("desk/projects/shop/project.yaml") and not is_project_file("project.yaml.bak")


def test_the_merge_keeps_the_comments_both_sides_wrote_and_means_the_same() -> None:
    base = b"# ask Ann before renaming\nname: shop\ncode_paths:\n- ~/code/shop  # laptop\ndescription: shop\n"
    laptop = base.replace(b"description: shop", b"description: web shop  # since June")
    desktop = base.replace(b"- ~/code/shop  # laptop\n", b"- ~/code/shop  # laptop\n- /srv/shop  # desktop\n")
    desktop += b"# the desktop's own note\nowner: ann  # for now\n"
    for ours, theirs in ((laptop, desktop), (desktop, laptop)):
        merged = merge_project(base, ours, theirs)
        assert merged.clean, merged
        text = merged.merged.decode("utf-8")
        for comment in ("# ask Ann before renaming", "# since June", "# desktop", "# for now"):
            assert comment in text, (comment, text)
        assert yaml.safe_load(text) == {
            "name": "shop",
            "code_paths": ["~/code/shop", "/srv/shop"],
            "description": "web shop",
            "owner": "ann",
        }
