"""The filing contract's rules that do not touch the disk: input checks, dedup keys, overlap."""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import re
from collections.abc import Iterable, Sized

from vaultmem.errors import CapReached, InvalidInput
from vaultmem.filing.contract import Contract
from vaultmem.notes.slugs import meaningful_words
from vaultmem.vault.catalog import IDEM_TAG_PREFIX

_TAG = re.compile(r"^[^\s#,\x00-\x1f\x7f\\\"'`]+$")
MAX_INSTRUCTIONS_CHARS = 4000
MAX_SOURCE_CHARS = 2000


def check_content(content: object, contract: Contract) -> str:
    """The content to store, or InvalidInput before anything touches the disk."""
    if not isinstance(content, str):
        raise InvalidInput("content must be text")
    if not content.strip():
        raise InvalidInput("content is empty; pass the text of the memory")
    if "\x00" in content:
        raise InvalidInput("content contains a NUL byte; remove it and retry")
    size = len(content.encode("utf-8"))
    if size > contract.max_content_bytes:
        raise InvalidInput(
            f"content is {size:,} bytes; the limit is {contract.max_content_bytes:,} "
            f"(limits.max_content_bytes in {contract.path}); split it into smaller memories"
        )
    return content


def check_title(title: object, contract: Contract) -> str | None:
    if title is None:
        return None
    if not isinstance(title, str):
        raise InvalidInput("title must be text")
    if "\x00" in title:
        raise InvalidInput("title contains a NUL byte; remove it and retry")
    clean = " ".join(title.split())
    if not clean:
        return None
    if len(clean) > contract.max_title_chars:
        raise InvalidInput(
            f"title is {len(clean)} characters; the limit is {contract.max_title_chars}; shorten it"
        )
    return clean


def check_tags(tags: object, contract: Contract) -> list[str]:
    """Tags as Obsidian reads them: no spaces, no leading '#', no '..' or leading '/'.

    The count is checked before any tag is looked at, so an oversized list costs nothing (a list
    of 20,000 tags used to take 11 s of CPU before this limit refused it). Repeats count.
    """
    if tags is None:
        return []
    if isinstance(tags, str) or not isinstance(tags, Sized) or not isinstance(tags, Iterable):
        raise InvalidInput("tags must be a list of words, not one string")
    if len(tags) > contract.max_tags:
        raise InvalidInput(
            f"{len(tags)} tags given; the limit is {contract.max_tags} "
            f"(limits.max_tags in {contract.path}); keep the few that matter"
        )
    out: list[str] = []
    seen: set[str] = set()
    for raw in tags:
        if not isinstance(raw, str):
            raise InvalidInput(f"tag {raw!r} is not text")
        tag = raw.strip().lstrip("#")
        if not tag:
            continue
        if (
            not _TAG.match(tag)
            or ".." in tag
            or tag.startswith("/")
            or tag.endswith("/")
            or len(tag) > contract.max_tag_chars
        ):
            raise InvalidInput(
                f"tag {raw!r} is not usable: a tag is one word (letters, digits, '-', '_', '/' for "
                f"nesting), at most {contract.max_tag_chars} characters, without '..' or NUL"
            )
        if tag.startswith(IDEM_TAG_PREFIX):
            raise InvalidInput(f"tag {raw!r} uses the reserved prefix {IDEM_TAG_PREFIX!r}")
        if tag not in seen:
            seen.add(tag)
            out.append(tag)
    return out


def check_text_arg(name: str, value: str | None, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be text")
    if "\x00" in value:
        raise InvalidInput(f"{name} contains a NUL byte; remove it and retry")
    if len(value) > limit:
        raise InvalidInput(f"{name} is {len(value)} characters; the limit is {limit}")
    return value if value.strip() else None


def check_kind(kind: object, contract: Contract) -> str:
    if not isinstance(kind, str) or not kind.strip():
        raise InvalidInput(f"kind is required: one of {', '.join(sorted(contract.kinds))}")
    resolved = contract.resolve_kind(kind)
    if resolved not in contract.kinds:
        raise InvalidInput(
            f"kind {kind!r} is not in the filing contract ({contract.path}); use one of "
            f"{', '.join(sorted(contract.kinds))}"
        )
    return resolved


def idempotency_tag(key: str) -> str:
    """The tag an idempotency key is stored as: a hash, never the key itself."""
    if not isinstance(key, str) or not key or "\x00" in key or len(key) > 500:
        raise InvalidInput("idempotency_key must be 1-500 characters of text")
    return IDEM_TAG_PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def title_from_content(content: str) -> str:
    """The fallback title: the first 60 characters of content, on one line."""
    return " ".join(content[:60].split()) or "note"


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of the meaningful words of two texts (0 when either has none)."""
    return set_overlap(word_set(a), word_set(b))


def word_set(text: str) -> frozenset[str]:
    """The meaningful words of ``text``, as a set."""
    return frozenset(meaningful_words(text))


#: The word sets of titles, which the same notes' titles are asked for again and again.
title_words = functools.lru_cache(maxsize=16384)(word_set)


def set_overlap(wa: frozenset[str], wb: frozenset[str]) -> float:
    """Jaccard overlap of two word sets (0 when either is empty)."""
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def check_cap(written: int, contract: Contract, today: dt.date, tool: str) -> None:
    """Refuse a new memory when the day's cap is reached, naming the count, cap and file."""
    if written >= contract.daily_write_cap:
        verb = "capture" if tool == "memory_capture" else "append"
        raise CapReached(
            f"{verb} refused: {written} memories already written today ({today.isoformat()} UTC); "
            f"the daily cap is {contract.daily_write_cap}, set by thresholds.daily_write_cap in "
            f"{contract.path}. An exact repeat still reinforces its twin; a new memory waits for "
            "tomorrow or for a higher cap"
        )
