"""Property tests: whatever a person typed around vaultmem's keys survives an edit of those keys."""

from __future__ import annotations

import hashlib
import json
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.errors import MalformedNote
from vaultmem.notes.frontmatter import BOM, parse, set_fields
from vaultmem.notes.model import OWNED_KEYS, new_note_text, note_from_text
from vaultmem.vault.note_files import MAX_NOTE_BYTES, note_of_bytes

# Keys a person may type; YAML 1.1 reads `no`, `on`, `null` ... as booleans or null, never as text.
NOT_TEXT = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}
KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True).filter(
    lambda k: k not in OWNED_KEYS and k not in NOT_TEXT
)
# Text YAML reads back unchanged inside double quotes (no control, line-break or BOM characters).
SAFE_TEXT = st.text(
    st.characters(
        blacklist_categories=("Cs", "Cc", "Zl", "Zp", "Co", "Cn"), blacklist_characters="\ufeff\x85"
    ),
    max_size=30,
)
WORD = st.text(string.ascii_letters + string.digits, min_size=1, max_size=10)


@st.composite
def raw_entry(draw: st.DrawFn, key: str) -> str:
    """One top-level entry as a person might type it, in one of several styles (no newline at end)."""
    style = draw(st.sampled_from(["int", "quoted", "plain", "flow", "block", "literal", "map", "comment"]))
    if style == "int":
        return f"{key}: {draw(st.integers(-(10**9), 10**9))}"
    if style == "quoted":
        return f"{key}: {json.dumps(draw(SAFE_TEXT), ensure_ascii=False)}"
    if style == "plain":
        return f"{key}:   {draw(WORD)}x   # a remark"
    if style == "flow":
        return f"{key}: [{', '.join(draw(st.lists(WORD, max_size=4)))}]"
    if style == "block":
        items = draw(st.lists(WORD, min_size=1, max_size=3))
        return f"{key}:\n" + "\n".join(f"  - {i}" for i in items)
    if style == "literal":
        lines = draw(st.lists(WORD, min_size=1, max_size=3))
        return f"{key}: |\n" + "\n".join(f"  {line}" for line in lines)
    if style == "map":
        return f"{key}:\n  inner: {draw(WORD)}x\n  other: {draw(st.integers(0, 99))}"
    return f"# {draw(WORD)} comment\n{key}: {draw(st.integers(0, 9))}"


@st.composite
def note_text(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A note with unknown keys (and maybe owned ones) and an arbitrary body; the unknown keys."""
    keys = draw(st.lists(KEYS, min_size=0, max_size=6, unique=True))
    entries = [draw(raw_entry(k)) for k in keys]
    owned = draw(st.lists(st.sampled_from(["status: active", "title: A title", "updated: x"]), unique=True))
    for line in owned:
        entries.insert(draw(st.integers(0, len(entries))), line)
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    block = newline.join(e.replace("\n", newline) for e in entries)
    body = draw(st.text(max_size=200))
    bom = BOM if draw(st.booleans()) else ""
    head = f"---{newline}{block}{newline}---{newline}" if entries else f"---{newline}---{newline}"
    return bom + head + body, keys


@settings(max_examples=100, deadline=None)
@given(note_text())
def test_parse_and_render_round_trip_exactly(case: tuple[str, list[str]]) -> None:
    text, _ = case
    assert parse(text).render() == text


@settings(max_examples=100, deadline=None)
@given(note_text(), st.sampled_from(["active", "deleted", "unfiled"]), st.integers(1, 1000))
def test_an_owned_key_edit_keeps_unknown_keys_and_body_bytes(
    case: tuple[str, list[str]], status: str, occurrences: int
) -> None:
    text, unknown = case
    before = parse(text)
    after_text = set_fields(
        before, {"status": status, "occurrences": occurrences, "updated": "2026-03-14T09:30:00Z"}
    ).render()
    after = parse(after_text)
    assert after.body == before.body
    assert after_text.encode("utf-8").endswith(before.body.encode("utf-8"))
    assert after.bom == before.bom
    for key in unknown:
        assert after.meta[key] == before.meta[key]
        # The entry's own lines are kept exactly, in order.
        raw = next("".join(e.lines) for e in before.entries if e.key == key)
        assert raw in after_text
    for entry in before.entries:  # a person's comment lines are never dropped
        for line in entry.lines:
            if line.startswith("#"):
                assert line in after_text
    assert [k for k in after.meta if k in unknown] == [k for k in before.meta if k in unknown]
    assert (after.meta["status"], after.meta["occurrences"]) == (status, occurrences)


@settings(max_examples=100, deadline=None)
@given(note_text())
def test_an_edit_is_idempotent(case: tuple[str, list[str]]) -> None:
    text, _ = case
    once = set_fields(parse(text), {"status": "deleted"}).render()
    twice = set_fields(parse(once), {"status": "deleted"}).render()
    assert once == twice


@settings(max_examples=200, deadline=None)
@given(
    title=st.text(min_size=1),
    tags=st.lists(st.text(string.ascii_letters + "/-_", min_size=1), max_size=4),
    instructions=st.text(),
    url=st.text(),
    body=st.text(),
)
def test_a_new_note_reads_back_exactly_what_was_written(
    title: str, tags: list[str], instructions: str, url: str, body: str
) -> None:
    text = new_note_text(
        {
            "id": "0190a5f0-0000-7000-8000-000000000001",
            "title": title,
            "kind": "capture",
            "status": "unfiled",
            "tags": tags,
            "source": {"transport": "external-fetch", "trust": "untrusted", "url": url},
            "instructions": instructions,
        },
        body,
    ).render()
    note = note_from_text(text, "memory/episodic/x.md")
    assert note.title == title
    assert list(note.tags) == [t.lstrip("#") for t in tags]
    assert note.instructions == instructions
    assert note.source["url"] == url
    assert note.body == (body if body.endswith("\n") else body + "\n")
    assert note.status == "unfiled"


def test_a_persons_note_over_the_size_cap_is_read_by_its_whole_lines_up_to_it() -> None:
    line = "é log line ".encode() * 9 + b"\n"  # a two-byte character every few bytes, up to the cut
    raw = b"---\ntags: [log]\n---\n" + line * (MAX_NOTE_BYTES // len(line) + 50)
    note = note_of_bytes(raw, "Logs/big.md", persons=True)
    assert note.tags == ("log",)
    assert note.body.endswith("\n") and note.body.count("\n") < raw.count(b"\n")
    assert "\ufffd" not in note.body  # no character cut in two
    assert (
        note.content_hash == hashlib.sha256(raw).hexdigest()
    )  # the whole file's: an edit past the cut shows
    with pytest.raises(MalformedNote):
        note_of_bytes(raw, "Memory/memory/big.md", persons=False)  # vaultmem's own note: malformed, as before
