"""Slugs: safe, stable file names derived from titles.

A slug is Unicode NFC text folded to lower-case ASCII letters, digits and single hyphens. It is
never empty, never longer than ``MAX_SLUG``, and never a name any of Linux, macOS or Windows
reserves, so ``<slug>.md`` is a valid file name everywhere a vault may be synced to.

Folding keeps what compatibility decomposition (NFKD) turns into ASCII, as before (``crème`` ->
``creme``); a letter or digit that has no such form (Cyrillic, Greek, CJK, Arabic, ...) is
transliterated by ``anyascii`` (``Привет мир`` -> ``privet-mir``) instead of being dropped. A
syllable or ideograph it spells with a capital (``東`` -> ``Dong``) stands as its own word
(``東京の天気`` -> ``dong-jing-no-tian-qi``), since those scripts write no spaces between words.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterable
from functools import lru_cache

from anyascii import anyascii

MAX_SLUG = 64
FALLBACK_SLUG = "note"

# Letters that NFKD does not decompose into ASCII + combining marks.
_FOLD = str.maketrans(
    {
        "ß": "ss", "æ": "ae", "Æ": "ae", "œ": "oe", "Œ": "oe", "ø": "o", "Ø": "o",
        "ł": "l", "Ł": "l", "đ": "d", "Đ": "d", "ð": "d", "Ð": "d", "þ": "th", "Þ": "th",
        "ı": "i", "ħ": "h", "Ħ": "h", "&": " and ",
    }
)  # fmt: skip
_NON_SLUG = re.compile(r"[^a-z0-9]+")
_WINDOWS_RESERVED = frozenset(
    {"con", "prn", "aux", "nul"} | {f"com{i}" for i in range(10)} | {f"lpt{i}" for i in range(10)}
)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)

#: Words that carry no meaning of their own; the collision rule skips them.
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    """.split()  # noqa: SIM905
)


def fold(text: str) -> str:
    """Fold text to lower-case ASCII words separated by single hyphens (may be empty)."""
    text = unicodedata.normalize("NFC", text).translate(_FOLD)
    if not text.isascii():
        text = "".join(_ascii_of(ch) for ch in text)
    return _NON_SLUG.sub("-", text.lower()).strip("-")


@lru_cache(maxsize=8192)
def _ascii_of(ch: str) -> str:
    """One character as ASCII: its NFKD form when that is ASCII, else (for a letter or digit) its
    ``anyascii`` transliteration; anything else (a symbol, an emoji, a lone mark) is dropped."""
    if ch.isascii():
        return ch
    decomposed = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode("ascii")
    if decomposed or unicodedata.category(ch)[0] not in "LN":
        return decomposed
    spelled = anyascii(ch)
    if ch.isalpha() and not ch.isupper() and not ch.islower() and spelled[:1].isupper():
        return f" {spelled} "  # a syllable or an ideograph of a script without word spaces
    return spelled


def _cap(slug: str, limit: int) -> str:
    if len(slug) <= limit:
        return slug
    cut = slug[:limit]
    # Prefer a word boundary when one is reasonably close to the cap.
    boundary = cut.rfind("-")
    if boundary >= limit // 2:
        cut = cut[:boundary]
    return cut.strip("-")


def make_slug(text: str, *, limit: int = MAX_SLUG, fallback: str = FALLBACK_SLUG) -> str:
    """A valid slug for ``text``; ``fallback`` when nothing of it survives folding."""
    slug = _cap(fold(text), limit) or fallback
    if slug in _WINDOWS_RESERVED:
        slug = f"{slug}-note"
    return slug


def meaningful_words(*texts: str) -> list[str]:
    """Folded words of ``texts`` in order of appearance, without stop words or repeats."""
    seen: set[str] = set()
    words: list[str] = []
    for text in texts:
        for raw in _WORD.findall(text):
            for word in fold(raw).split("-"):  # a run of ideographs folds to several words
                if len(word) < 2 or word in STOP_WORDS or word.isdigit() or word in seen:
                    continue
                seen.add(word)
                words.append(word)
    return words


def resolve_collision(
    base: str,
    taken: Callable[[str], bool],
    grow_from: Iterable[str],
    *,
    hash_source: str,
    max_words: int = 6,
) -> str:
    """The first free name for ``base`` under the card collision rule.

    When ``base`` is taken, grow it with the next meaningful word of the note's own title and text
    that the slug does not already hold (``base-word``, then ``base-word-word2`` ...); when no word
    frees the name, add a short hash of ``hash_source``. Never a ``~dup`` mark.
    """
    if not taken(base):
        return base
    present = set(base.split("-"))
    slug = base
    tried = 0
    for word in grow_from:
        if word in present:
            continue
        present.add(word)
        candidate = _cap(f"{slug}-{word}", MAX_SLUG)
        if candidate == slug:
            break  # at the length cap: more words cannot help
        slug = candidate
        if not taken(slug):
            return slug
        tried += 1
        if tried >= max_words:
            break
    digest = hashlib.sha256(hash_source.encode("utf-8")).hexdigest()
    for width in (6, 8, 12, 16, 64):
        candidate = f"{_cap(base, MAX_SLUG - width - 1)}-{digest[:width]}"
        if not taken(candidate):
            return candidate
    raise RuntimeError("no free slug")  # pragma: no cover - 64 hex digits always free a name
