"""Slugs are stable, never empty, ASCII, length-capped and valid file names on Linux, macOS and
Windows; the collision rule grows a name with meaningful words, then a hash, never a ~dup mark."""

from __future__ import annotations

import re
import unicodedata

import pytest
from anyascii import anyascii
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from vaultmem.notes.slugs import MAX_SLUG, make_slug, meaningful_words, resolve_collision

WINDOWS_RESERVED = (
    {"con", "prn", "aux", "nul"} | {f"com{i}" for i in range(10)} | {f"lpt{i}" for i in range(10)}
)


def assert_portable(slug: str) -> None:
    assert slug, "a slug is never empty"
    assert slug.isascii()
    assert len(slug) <= MAX_SLUG
    for bad in ("..", "/", "\\", "\x00", ":", "*", "?", '"', "<", ">", "|", "~"):
        assert bad not in slug
    assert slug.split(".")[0].lower() not in WINDOWS_RESERVED
    assert not slug.endswith((".", " ")) and not slug.startswith(("-", "."))
    assert slug == slug.lower()  # no two slugs differ only in case (macOS and Windows fold case)
    assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", slug), "letters and digits joined by single hyphens"


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_any_text_gives_a_portable_stable_slug(text: str) -> None:
    slug = make_slug(text)
    assert_portable(slug)
    assert make_slug(text) == slug
    assert make_slug(slug) == slug  # a slug is a fixed point


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_nfc_and_nfd_spellings_give_the_same_slug(text: str) -> None:
    assert make_slug(unicodedata.normalize("NFC", text)) == make_slug(unicodedata.normalize("NFD", text))


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Hello, World!", "hello-world"),
        ("Crème brûlée recipe", "creme-brulee-recipe"),
        ("Straße & Œuvre", "strasse-and-oeuvre"),
        ("../../etc/passwd", "etc-passwd"),
        ("C:\\Windows\\System32", "c-windows-system32"),
        ("a\x00b", "a-b"),
        ("CON", "con-note"),
        ("lpt1", "lpt1-note"),
        ("...", "note"),
        ("日本語", "ri-ben-yu"),
        ("Привет мир", "privet-mir"),
        ("東京の天気", "dong-jing-no-tian-qi"),
        ("Ελληνικά", "ellinika"),
        ("한국어 공부", "han-gug-eo-gong-bu"),
        ("Ünïcödé ⅻ", "unicode-xii"),
        ("🙂", "note"),
        ("", "note"),
    ],
)
def test_examples(title: str, slug: str) -> None:
    assert make_slug(title) == slug


@settings(max_examples=300, deadline=None)
@given(st.characters(categories=["Lu", "Ll", "Lt", "Lo", "Nd", "Nl"]))
def test_no_letter_or_digit_is_dropped_when_it_has_an_ascii_spelling(char: str) -> None:
    """Issue 13 item 6: "Привет мир", "東京の天気", "Ελληνικά" all became `note`. A letter of any script
    that anyascii can spell keeps a trace in the slug."""
    assume(any(c.isalnum() for c in anyascii(unicodedata.normalize("NFC", char))))
    slug = make_slug(f"x {char} x")
    assert slug != "x-x" and slug.startswith("x-") and slug.endswith("-x")


def test_long_titles_are_cut_at_a_word_boundary() -> None:
    slug = make_slug("word " * 40)
    assert len(slug) <= MAX_SLUG and not slug.endswith("-") and slug.endswith("word")


def test_meaningful_words_skip_stop_words_numbers_and_repeats() -> None:
    assert meaningful_words("The cache of the CDN", "cache 2026 invalidation") == [
        "cache",
        "cdn",
        "invalidation",
    ]


def test_the_collision_rule_grows_with_the_next_meaningful_word() -> None:
    taken = {"cache-fix", "cache-fix-cdn"}
    grown = resolve_collision(
        "cache-fix", taken.__contains__, ["cache", "fix", "cdn", "purge"], hash_source="x"
    )
    assert grown == "cache-fix-cdn-purge"


def test_the_collision_rule_falls_back_to_a_short_hash() -> None:
    grown = resolve_collision("cache", {"cache"}.__contains__, ["cache"], hash_source="some id")
    assert grown.startswith("cache-") and len(grown) == len("cache-") + 6


@settings(max_examples=100, deadline=None)
@given(
    st.text(min_size=1),
    st.lists(st.text(min_size=1, max_size=30), max_size=8),
    st.sets(st.text(max_size=70), max_size=20),
    st.text(),
)
def test_a_resolved_name_is_free_portable_and_never_a_dup_mark(
    title: str, words: list[str], extra_taken: set[str], hash_source: str
) -> None:
    base = make_slug(title)
    taken = {base, *extra_taken}
    grow = meaningful_words(title, *words)
    name = resolve_collision(base, taken.__contains__, grow, hash_source=hash_source)
    assert name not in taken
    assert_portable(name)
    assert "dup" not in name.removeprefix(base) or any("dup" in w for w in grow)
