"""Reading and writing frontmatter is round-trip safe: vaultmem edits only the keys it owns and keeps
everything else (unknown keys, comments, key order, BOM, line endings, the body) byte for byte."""

from __future__ import annotations

import pytest

from vaultmem.notes.frontmatter import (
    BOM,
    DELETE,
    MAX_FRONTMATTER_BYTES,
    MalformedNote,
    parse,
    set_fields,
    with_body,
)
from vaultmem.notes.model import fingerprint, note_from_text

PERSONAL = (
    "---\n"
    "# Properties I keep by hand\n"
    "title: Trip planning\n"
    "aliases: [trip, travel]   # for Obsidian search\n"
    "status: active\n"
    "# the next one is mine\n"
    "cssclass: wide\n"
    "rating: 4.50\n"
    "when: 2026-01-02\n"
    'quoted: "yes"\n'
    "multi: |\n"
    "  line one\n"
    "  # not a comment, text\n"
    "\n"
    "  line three\n"
    "nested:\n"
    "  a: 1\n"
    "  b: [x, y]\n"
    "---\n"
    "# Heading\n\nBody   with trailing spaces   \n\n\n"
)


def test_parse_then_render_is_the_identity() -> None:
    assert parse(PERSONAL).render() == PERSONAL


def test_an_owned_key_edit_keeps_every_other_line_and_the_body_exactly() -> None:
    edited = set_fields(parse(PERSONAL), {"status": "deleted", "deleted_at": "2026-03-14T09:30:00Z"})
    text = edited.render()
    assert text == PERSONAL.replace("status: active\n", "status: deleted\n").replace(
        "  b: [x, y]\n---\n", "  b: [x, y]\ndeleted_at: '2026-03-14T09:30:00Z'\n---\n"
    )
    again = parse(text)
    assert again.meta["when"] == parse(PERSONAL).meta["when"]  # a date stays a date: not re-dumped
    assert again.body == parse(PERSONAL).body


def test_comments_after_an_edited_key_are_kept() -> None:
    text = "---\nstatus: active\n# about the tags below\n\ntags: [a]\nupdated: x\n# closing remark\n---\nb\n"
    edited = set_fields(parse(text), {"status": "deleted", "updated": "y"}).render()
    assert edited == text.replace("status: active", "status: deleted").replace("updated: x", "updated: y")


def test_deleting_an_owned_key_keeps_the_comment_after_it() -> None:
    text = "---\ntitle: t\nupdated: x\n# keep me\n---\nbody\n"
    assert set_fields(parse(text), {"updated": DELETE}).render() == "---\ntitle: t\n# keep me\n---\nbody\n"


def test_a_duplicated_owned_key_is_collapsed_to_one_entry() -> None:
    text = "---\nstatus: active\ntitle: t\nstatus: deleted\n---\nbody\n"
    edited = set_fields(parse(text), {"status": "active"}).render()
    assert edited == "---\nstatus: active\ntitle: t\n---\nbody\n"


def test_crlf_is_kept_for_old_and_new_lines() -> None:
    text = "---\r\ntitle: x\r\nstatus: active\r\nmine: 1\r\n---\r\nline 1\r\nline 2\r\n"
    edited = set_fields(parse(text), {"status": "deleted", "tags": ["a", "b"]}).render()
    assert edited == (
        "---\r\ntitle: x\r\nstatus: deleted\r\nmine: 1\r\ntags:\r\n- a\r\n- b\r\n---\r\nline 1\r\nline 2\r\n"
    )
    assert "\n" not in edited.replace("\r\n", "")


def test_a_bom_is_kept_and_never_hides_the_frontmatter() -> None:
    """A BOM must not make a deleted note look live."""
    text = BOM + "---\nstatus: deleted\nid: 0190a5f0-0000-7000-8000-000000000001\n---\nbody\n"
    note = note_from_text(text, "memory/semantic/bom.md")
    assert note.status == "deleted" and not note.is_live
    assert note.id == "0190a5f0-0000-7000-8000-000000000001"
    edited = set_fields(parse(text), {"status": "active"}).render()
    assert edited.startswith(BOM + "---\nstatus: active\n")


def test_a_bom_and_crlf_together_read_the_same_as_plain_lf() -> None:
    plain = "---\nstatus: deleted\ntitle: T\n---\nsame body\n"
    windows = BOM + plain.replace("\n", "\r\n")
    a, b = note_from_text(plain, "a.md"), note_from_text(windows, "b.md")
    assert (a.status, a.title, a.fingerprint) == (b.status, b.title, b.fingerprint)


def test_a_note_without_frontmatter_gains_a_block_and_keeps_its_body() -> None:
    text = "Just a body\nwritten by hand"
    edited = set_fields(parse(text), {"status": "deleted"}).render()
    assert edited == "---\nstatus: deleted\n---\nJust a body\nwritten by hand"


def test_an_unclosed_fence_is_all_body() -> None:
    text = "---\ntitle: never closed\nbody"
    doc = parse(text)
    assert not doc.has_frontmatter and doc.body == text
    assert note_from_text(text, "x.md").status == "active"


def test_a_closing_fence_at_end_of_file_gets_a_body_on_its_own_line() -> None:
    doc = parse("---\ntitle: x\n---")
    assert with_body(doc, "new body\n").render() == "---\ntitle: x\n---\nnew body\n"


def test_a_flow_mapping_block_is_refused_rather_than_corrupted() -> None:
    text = "---\n{status: active, title: x}\n---\nbody\n"
    assert parse(text).meta["status"] == "active"
    with pytest.raises(MalformedNote, match="one `key: value` entry per line"):
        set_fields(parse(text), {"status": "deleted"})


@pytest.mark.parametrize(
    ("block", "problem"),
    [
        ("a: &x [1, 2]\nb: *x\n", "aliases are not allowed"),
        ("- a\n- b\n", "not a mapping"),
        ("just a string\n", "not a mapping"),
        ("key: [unclosed\n", "not valid YAML"),
        ("1: number key\n", "is not a string"),
        ("x: !!python/object:os.system ls\n", "not valid YAML"),
    ],
)
def test_unreadable_frontmatter_is_a_clear_error(block: str, problem: str) -> None:
    with pytest.raises(MalformedNote, match=problem):
        parse(f"---\n{block}---\nbody\n", source="memory/x.md")


def test_an_alias_bomb_is_refused_before_expansion() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        prev = chr(ord("a") + i - 1)
        lines.append(f"{chr(ord('a') + i)}: &{chr(ord('a') + i)} [{', '.join(['*' + prev] * 9)}]")
    with pytest.raises(MalformedNote, match="aliases"):
        parse("---\n" + "\n".join(lines) + "\n---\nboom\n")


def test_oversized_frontmatter_is_refused() -> None:
    block = "k: " + "x" * (MAX_FRONTMATTER_BYTES + 10) + "\n"
    with pytest.raises(MalformedNote, match="larger than"):
        parse("---\n" + block + "---\nbody\n")


@pytest.mark.parametrize("value", ["no", "yes", "off", "[deleted]", "{a: 1}", "42"])
def test_a_status_that_is_not_a_known_word_is_malformed(value: str) -> None:
    with pytest.raises(MalformedNote):
        note_from_text(f"---\nstatus: {value}\n---\nbody\n", "x.md")


def test_the_fingerprint_ignores_line_endings_and_outer_whitespace() -> None:
    assert fingerprint("a\nb\n") == fingerprint("  a\r\nb") == fingerprint("a\rb\n\n")
    assert fingerprint("a\nb") != fingerprint("a\n\nb")


def test_owned_keys_of_the_wrong_type_are_reported() -> None:
    with pytest.raises(MalformedNote, match="tags must be a list"):
        note_from_text("---\ntags: {a: 1}\n---\nb\n", "x.md")
    with pytest.raises(MalformedNote, match="'title' must be text"):
        note_from_text("---\ntitle: [a, b]\n---\nb\n", "x.md")
    with pytest.raises(MalformedNote, match="source and filing must be mappings"):
        note_from_text("---\nsource: [a]\n---\nb\n", "x.md")


def test_lenient_reads_of_owned_keys_a_person_may_type() -> None:
    note = note_from_text(
        "---\ntags: 'one, #two three'\noccurrences: many\nimportance: high\ncreated: 2026-01-02\n---\nb\n",
        "x.md",
    )
    assert note.tags == ("one", "two", "three")
    assert note.occurrences == 1 and note.importance is None
    assert note.created == "2026-01-02"


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_a_unicode_line_separator_never_ends_the_frontmatter_early(separator: str) -> None:
    """Obsidian splits lines at newlines only: a hidden separator before a `---` must not end the
    block there and leave a `status: deleted` outside it, making a deleted note look live."""
    text = f"---\ntitle: x{separator}---\nstatus: deleted\n---\nbody\n"
    try:
        note = note_from_text(text, "x.md")
    except MalformedNote:
        return  # reported and left alone: fine
    assert note.status == "deleted" and note.body == "body\n"


def test_old_mac_line_endings_round_trip() -> None:
    text = "---\rstatus: deleted\rtitle: T\r---\rbody\r"
    doc = parse(text)
    assert doc.render() == text


def test_a_key_yaml_reads_as_a_boolean_is_reported() -> None:
    with pytest.raises(MalformedNote, match="key False is not a string"):
        parse("---\nno: 0\n---\nbody\n")
