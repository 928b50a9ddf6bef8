"""The note merge (issue 17, "a merge that understands notes"): two machines' edits of one note file,
merged field by field, the same on both machines, never with conflict markers, never losing a side."""

from __future__ import annotations

import datetime as dt
import string
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.notes import frontmatter as fm
from vaultmem.notes.merge import conflict_file, merge_note, merge_text
from vaultmem.notes.model import iso, new_note_text, note_from_text
from vaultmem.vault.layout import is_conflict_copy

T0 = dt.datetime(2026, 3, 1, 10, 0, tzinfo=dt.UTC)
NOTE_ID = "0190a1b2-0000-7000-8000-000000000001"
MARKERS = ("<<<<<<<", "=======", ">>>>>>>", "|||||||")
WORDS = st.text(string.ascii_lowercase, min_size=1, max_size=6)
TAGS = st.sampled_from(["cache", "policy", "infra", "db", "ops", "idea", "todo"])
LINKS = st.sampled_from([f"[[note-{i}]]" for i in range(6)])


def at(hours: float) -> str:
    return iso(T0 + dt.timedelta(hours=hours))


def make_note(body: str = "Line one.\nLine two.\nLine three.\n", **fields: Any) -> bytes:
    base: dict[str, Any] = {
        "id": NOTE_ID,
        "title": "Caching policy",
        "kind": "semantic",
        "status": "active",
        "tags": ["cache", "policy"],
        "created": at(0),
        "updated": at(0),
        "occurrences": 2,
    }
    base.update(fields)
    return new_note_text({k: v for k, v in base.items() if v is not None}, body).to_bytes()


def edit(data: bytes, body: str | None = None, **changes: Any) -> bytes:
    """A vaultmem-style edit: owned keys set entry by entry, the rest of the bytes kept."""
    doc = fm.parse(data.decode("utf-8"))
    if body is not None:
        doc = fm.with_body(doc, body)
    values = {k: (fm.DELETE if v is None else v) for k, v in changes.items()}
    return fm.set_fields(doc, values).to_bytes() if values else doc.to_bytes()


def meta(data: bytes) -> dict[str, Any]:
    return fm.parse(data.decode("utf-8")).meta


def has_markers(data: bytes) -> bool:
    return any(line.startswith(m.encode()) for line in data.splitlines() for m in MARKERS)


# -- examples -------------------------------------------------------------------------------------


def test_a_forget_on_one_side_and_a_reinforce_on_the_other_keep_it_deleted_with_both_counted() -> None:
    base = make_note()
    forgot = edit(base, status="deleted", deleted_at=at(2), delete_reason="wrong")
    reinforced = edit(base, occurrences=3, updated=at(3))
    result = merge_note(base, forgot, reinforced)
    merged = meta(result.merged)
    assert merged["status"] == "deleted" and merged["deleted_at"] == at(2)
    assert merged["occurrences"] == 3 and merged["updated"] == at(3)
    assert result.clean and result.status is not None
    assert result.status.status == "deleted" and result.status.replaced == "active"
    assert "status deleted" in " ".join(result.describe())


def test_both_sides_reinforcing_count_both_increments_and_keep_the_newest_update() -> None:
    base = make_note()
    ours = edit(base, occurrences=4, updated=at(5))
    theirs = edit(base, occurrences=3, updated=at(7))
    merged = meta(merge_note(base, ours, theirs).merged)
    assert merged["occurrences"] == 5 and merged["updated"] == at(7)


def test_links_and_tags_added_on_each_side_are_all_kept_and_a_removal_on_one_side_holds() -> None:
    base = make_note(supports=["[[a]]", "[[b]]"], link_created={"supports/a": at(0), "supports/b": at(0)})
    ours = edit(
        base,
        supports=["[[a]]", "[[b]]", "[[c]]"],
        link_created={"supports/a": at(0), "supports/b": at(0), "supports/c": at(1)},
        tags=["cache", "policy", "ours"],
        updated=at(1),
    )
    theirs = edit(
        base,
        supports=["[[a]]", "[[d]]"],
        link_created={"supports/a": at(0), "supports/d": at(2)},
        tags=["policy"],
        updated=at(2),
    )
    result = merge_note(base, ours, theirs)
    merged = meta(result.merged)
    assert merged["supports"] == ["[[a]]", "[[c]]", "[[d]]"]  # b was removed on one side: it stays removed
    assert merged["link_created"] == {"supports/a": at(0), "supports/c": at(1), "supports/d": at(2)}
    assert merged["tags"] == ["policy", "ours"]  # cache removed on one side, "ours" added on the other
    assert result.clean and set(result.by_rule) >= {"supports", "link_created", "tags"}


def test_the_target_ids_links_recorded_on_each_side_are_all_kept() -> None:
    """Each link records the id of the note it was made for (``link_targets``, issue 13 item 13): a
    link added on either side keeps its record, or it would fall back to resolving by name."""
    a, c, d = (f"01a172b4-d486-700{i}-b4f9-02962e9d2f1c" for i in "acd")
    base = make_note(supports=["[[a]]"], link_targets={"supports/a": a})
    ours = edit(
        base, supports=["[[a]]", "[[c]]"], link_targets={"supports/a": a, "supports/c": c}, updated=at(1)
    )
    theirs = edit(
        base, supports=["[[a]]", "[[d]]"], link_targets={"supports/a": a, "supports/d": d}, updated=at(2)
    )
    result = merge_note(base, ours, theirs)
    assert meta(result.merged)["link_targets"] == {"supports/a": a, "supports/c": c, "supports/d": d}
    assert result.clean and "link_targets" in result.by_rule


def test_the_same_body_lines_changed_on_both_sides_keep_the_newer_and_a_conflict_note_the_older() -> None:
    base = make_note()
    ours = edit(base, body="Line one.\nLine two, as the laptop has it.\nLine three.\n", updated=at(1))
    theirs = edit(base, body="Line one.\nLine two, as the desktop has it.\nLine three.\n", updated=at(2))
    result = merge_note(base, ours, theirs)
    assert b"the desktop" in result.merged and b"the laptop" not in result.merged
    assert result.kept == "theirs" and result.lost is not None and result.lost.body
    copy = conflict_file("memory/semantic/caching-policy.md", result)
    assert copy is not None
    path, data = copy
    assert is_conflict_copy(path) and path.startswith("memory/semantic/caching-policy.conflict-")
    note = note_from_text(data.decode("utf-8"), path)
    assert "as the laptop has it" in note.body
    assert note.status == "unfiled" and "sync-conflict" in note.tags and note.id and note.id != NOTE_ID
    assert meta(data)["conflict_of"] == "[[memory/semantic/caching-policy]]"
    assert meta(data)["conflict"]["original_id"] == NOTE_ID
    assert not has_markers(result.merged) and not has_markers(data)


def test_two_appends_at_the_end_of_a_body_keep_both_the_older_first() -> None:
    base = make_note()
    ours = edit(base, body="Line one.\nLine two.\nLine three.\nFrom the laptop.\n", updated=at(1))
    theirs = edit(base, body="Line one.\nLine two.\nLine three.\nFrom the desktop.\n", updated=at(2))
    result = merge_note(base, ours, theirs)
    assert result.clean
    assert result.merged.endswith(b"Line three.\nFrom the laptop.\nFrom the desktop.\n")


def test_keys_neither_side_changed_keep_the_persons_bytes() -> None:
    person = (
        "---\r\n# my own header comment\r\nid: " + NOTE_ID + "\r\ntitle:   Caching   # typed by hand\r\n"
        "aliases: [cache,  caching]\r\noccurrences: 2\r\nupdated: 2026-03-01T10:00:00Z\r\n---\r\nBody.\r\n"
    ).encode()
    ours = person.replace(b"occurrences: 2", b"occurrences: 3")
    theirs = person.replace(b"Body.\r\n", b"Body.\r\nMore.\r\n")
    result = merge_note(person, ours, theirs)
    assert result.merged == ours.replace(b"Body.\r\n", b"Body.\r\nMore.\r\n")


def test_an_unknown_key_changed_on_both_sides_in_different_lines_merges_line_by_line() -> None:
    base = make_note().replace(b"---\nLine", b"aliases:\n- one\n- two\n- three\n---\nLine")
    ours = base.replace(b"- one\n", b"- uno\n")
    theirs = base.replace(b"- three\n", b"- three\n- four\n")
    result = merge_note(base, ours, theirs)
    assert meta(result.merged)["aliases"] == ["uno", "two", "three", "four"] and result.clean


def test_an_owned_field_both_sides_set_differently_keeps_the_newer_and_records_the_other() -> None:
    base = make_note()
    ours = edit(base, title="Cache policy (laptop)", updated=at(4))
    theirs = edit(base, title="Cache policy (desktop)", updated=at(3))
    result = merge_note(base, ours, theirs)
    assert meta(result.merged)["title"] == "Cache policy (laptop)"
    assert result.lost is not None and result.lost.fields == {"title": "Cache policy (desktop)"}
    copy = conflict_file("n.md", result)
    assert copy is not None and meta(copy[1])["conflict"]["lost_fields"] == {
        "title": "Cache policy (desktop)"
    }


def test_two_different_notes_created_at_one_path_keep_the_older_id_there() -> None:
    older = make_note(id="0190a1b2-0000-7000-8000-000000000001", title="Older")
    newer = make_note(id="0190a1b2-0001-7000-8000-000000000002", title="Newer")
    for ours, theirs in ((older, newer), (newer, older)):
        result = merge_note(b"", ours, theirs)
        assert result.mode == "distinct" and result.merged == older
        assert result.lost is not None and result.lost.data == newer
        assert conflict_file("n.md", result) is None  # the round files it under a new name instead


def test_a_malformed_note_is_merged_as_lines_and_its_lost_side_kept_raw() -> None:
    base = b"---\ntitle: [unclosed\n---\nbody\n"
    ours, theirs = base.replace(b"body", b"ours body"), base.replace(b"body", b"their body")
    result = merge_note(base, ours, theirs)
    assert result.mode == "text" and not has_markers(result.merged) and result.lost is not None
    copy = conflict_file("a/x.md", result)
    assert copy is not None and copy[1] == result.lost.data and {result.merged, copy[1]} == {ours, theirs}


# -- properties -----------------------------------------------------------------------------------


@st.composite
def base_note(draw: st.DrawFn) -> bytes:
    body = "".join(f"{w}\n" for w in draw(st.lists(WORDS, min_size=0, max_size=8)))
    data = make_note(
        body,
        tags=draw(st.lists(TAGS, unique=True, max_size=4)) or None,
        supports=draw(st.lists(LINKS, unique=True, max_size=3)) or None,
        occurrences=draw(st.integers(1, 5)),
    )
    if draw(st.booleans()):  # a person's own key, written their way
        data = data.replace(b"\n---\n", b"\naliases: [one, two]  # mine\n---\n", 1)
    return data


@st.composite
def side_of(draw: st.DrawFn, base: bytes) -> bytes:
    """What one machine does to the note: vaultmem writes and a person's body edits."""
    data = base
    m = meta(data)
    for op in draw(
        st.lists(
            st.sampled_from(
                [
                    "reinforce",
                    "tag",
                    "untag",
                    "link",
                    "unlink",
                    "forget",
                    "archive",
                    "title",
                    "body",
                    "append",
                    "alias",
                ]
            ),
            max_size=4,
        )
    ):
        m = meta(data)
        if op == "reinforce":
            data = edit(data, occurrences=m.get("occurrences", 1) + 1, updated=at(draw(st.integers(1, 50))))
        elif op == "tag":
            data = edit(data, tags=list(dict.fromkeys([*(m.get("tags") or []), draw(TAGS)])))
        elif op == "untag" and m.get("tags"):
            tags = [t for t in m["tags"] if t != draw(st.sampled_from(m["tags"]))]
            data = edit(data, tags=tags or None)
        elif op == "link":
            data = edit(data, supports=list(dict.fromkeys([*(m.get("supports") or []), draw(LINKS)])))
        elif op == "unlink" and m.get("supports"):
            links = [x for x in m["supports"] if x != draw(st.sampled_from(m["supports"]))]
            data = edit(data, supports=links or None)
        elif op == "forget":
            data = edit(data, status="deleted", deleted_at=at(draw(st.integers(1, 50))))
        elif op == "archive":
            data = edit(data, status="archived")
        elif op == "title":
            data = edit(data, title=draw(WORDS), updated=at(draw(st.integers(1, 50))))
        elif op in ("body", "append"):
            lines = fm.split_lines(fm.parse(data.decode()).body)
            at_line = draw(st.integers(0, len(lines)))
            new = f"{draw(WORDS)} {draw(WORDS)}\n"
            if op == "body" and lines and at_line < len(lines):
                lines[at_line] = new if draw(st.booleans()) else ""
            else:
                lines.insert(at_line if op == "body" else len(lines), new)
            data = edit(data, body="".join(lines))
        elif op == "alias" and b"aliases: [" in data:
            data = data.replace(b"aliases: [", f"aliases: [{draw(WORDS)}, ".encode(), 1)
    return data


@st.composite
def three_sides(draw: st.DrawFn) -> tuple[bytes, bytes, bytes]:
    base = draw(base_note())
    return base, draw(side_of(base)), draw(side_of(base))


def added_lines(base: bytes, side: bytes) -> set[str]:
    base_lines = set(fm.split_lines(fm.parse(base.decode()).body))
    return {line for line in fm.split_lines(fm.parse(side.decode()).body) if line not in base_lines}


@settings(max_examples=300, deadline=None)
@given(three_sides())
def test_merging_with_an_unchanged_side_returns_the_other_side_byte_for_byte(
    sides: tuple[bytes, bytes, bytes],
) -> None:
    base, ours, _ = sides
    assert merge_note(base, base, ours).merged == ours
    assert merge_note(base, ours, base).merged == ours


@settings(max_examples=300, deadline=None)
@given(three_sides())
def test_both_machines_merging_each_others_side_get_the_same_bytes_and_no_markers(
    sides: tuple[bytes, bytes, bytes],
) -> None:
    base, ours, theirs = sides
    one, other = merge_note(base, ours, theirs), merge_note(base, theirs, ours)
    assert one.merged == other.merged
    assert conflict_file("memory/n.md", one) == conflict_file("memory/n.md", other)
    copy = conflict_file("memory/n.md", one)
    for data in (one.merged, *([copy[1]] if copy else [])):
        assert not has_markers(data)
        note_from_text(data.decode("utf-8"), "memory/n.md")  # a readable note, never malformed


@settings(max_examples=300, deadline=None)
@given(three_sides())
def test_owned_keys_follow_their_rules_and_no_added_line_is_lost(sides: tuple[bytes, bytes, bytes]) -> None:
    base, ours, theirs = sides
    result = merge_note(base, ours, theirs)
    b, o, t, merged = meta(base), meta(ours), meta(theirs), meta(result.merged)

    def as_set(m: dict[str, Any], key: str) -> set[str]:
        return set(m.get(key) or [])

    for key in ("tags", "supports"):
        bs, os_, ts = as_set(b, key), as_set(o, key), as_set(t, key)
        assert as_set(merged, key) == (os_ & ts) | ((os_ | ts) - bs), key
    if ours != theirs:  # identical files are one change to git, which never asks the driver
        assert merged["occurrences"] == max(1, o["occurrences"] + t["occurrences"] - b["occurrences"])
    assert merged["updated"] == max(o["updated"], t["updated"])
    for side, other in ((o, t), (t, o)):
        if side.get("status") != b.get("status") and other.get("status") == b.get("status"):
            assert merged["status"] == side["status"]  # a status change wins over an untouched side
    copy = conflict_file("memory/n.md", result)
    kept = set(fm.split_lines(fm.parse(result.merged.decode()).body))
    if copy is not None:
        kept |= set(fm.split_lines(fm.parse(copy[1].decode()).body))
    assert added_lines(base, ours) | added_lines(base, theirs) <= kept


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=60), st.binary(max_size=60), st.binary(max_size=60))
def test_any_bytes_merge_without_markers_the_same_both_ways(base: bytes, ours: bytes, theirs: bytes) -> None:
    one, other = merge_note(base, ours, theirs), merge_note(base, theirs, ours)
    assert one.merged == other.merged and not has_markers(one.merged)
    assert merge_note(base, base, theirs).merged == theirs
    assert merge_text(base, ours, base).merged == ours
    if one.mode != "distinct" and one.lost is not None:
        assert one.lost.data in (ours, theirs)


def test_two_different_files_created_at_one_path_are_never_mixed_line_by_line() -> None:
    ours, theirs = b"name: laptop\nid: 1\n", b"name: desktop\nid: 2\n"
    result = merge_text(b"", ours, theirs)
    assert result.lost is not None and {result.merged, result.lost.data} == {ours, theirs}
    assert merge_text(b"", theirs, ours).merged == result.merged


def test_a_pair_given_two_types_by_the_merge_keeps_one_and_a_pair_one_side_gave_two_keeps_both() -> None:
    """One edge per pair: the merge's `related` placeholder yields to the other side's type (no
    loss: `link` upgrades it so), the same both ways; a person's note that already named one target
    under two types on one side is theirs and keeps both."""
    base = make_note()
    ours = edit(base, related=["[[ttl]]"], link_created={"related/ttl": at(1)}, updated=at(1))
    theirs = edit(base, supports=["[[TTL]]"], link_created={"supports/TTL": at(2)}, updated=at(2))
    one, other = merge_note(base, ours, theirs), merge_note(base, theirs, ours)
    assert one.merged == other.merged and one.clean
    merged = meta(one.merged)
    assert "related" not in merged and merged["supports"] == ["[[TTL]]"]
    assert merged["link_created"] == {"supports/TTL": at(2)}
    both = edit(base, related=["[[ttl]]"], supports=["[[ttl]]"], updated=at(1))
    kept = meta(merge_note(base, both, edit(base, tags=["cache"], updated=at(2))).merged)
    assert kept["related"] == ["[[ttl]]"] and kept["supports"] == ["[[ttl]]"]
