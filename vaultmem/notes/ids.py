"""UUIDv7 ids and the id shapes a query may take."""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
import uuid

_HEX = re.compile(r"^[0-9a-f]+$")
#: A UUIDv7 spends its first 12 hex digits on the millisecond timestamp; a shorter hex run is
#: indistinguishable from a word, so 13 is the shortest prefix read as an id.
MIN_ID_PREFIX = 13

_lock = threading.Lock()
_last_ms = 0
_seq = 0


def uuid7() -> str:
    """A new UUIDv7 (RFC 9562): 48-bit ms timestamp, 12-bit counter, 62 random bits.

    Ids from one process are strictly increasing, even within one millisecond, so id order is
    creation order.
    """
    global _last_ms, _seq
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            _seq += 1
            if _seq > 0xFFF:  # counter exhausted: borrow the next millisecond
                _last_ms += 1
                _seq = 0
            ms = _last_ms
        else:
            _last_ms = ms
            _seq = int.from_bytes(os.urandom(2), "big") & 0x3FF  # leave headroom to count up
        seq = _seq
    rand = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | seq << 64 | 0b10 << 62 | rand
    return str(uuid.UUID(int=value))


def compact_hex(text: str) -> str:
    """The id text without hyphens, lower-cased (``01A1-72b4`` -> ``01a172b4``)."""
    return text.replace("-", "").strip().lower()


def is_full_id(text: str) -> bool:
    """True for a full UUID: 32 hex digits, hyphens optional anywhere, any case."""
    h = compact_hex(text)
    return len(h) == 32 and bool(_HEX.match(h))


def is_id_prefix(text: str) -> bool:
    """True for a hex run of 13 to 31 digits (hyphens allowed): a UUIDv7 timestamp window."""
    stripped = text.strip()
    if not stripped or stripped.startswith("-") or " " in stripped:
        return False
    h = compact_hex(stripped)
    return MIN_ID_PREFIX <= len(h) < 32 and bool(_HEX.match(h))


def canonical_id(text: str) -> str:
    """The canonical hyphenated lower-case form of a full id."""
    return str(uuid.UUID(hex=compact_hex(text)))


def derived_uuid7(ms: int, seed: bytes) -> str:
    """A UUIDv7 whose every bit is derived from ``ms`` and ``seed`` (no clock, no randomness).

    For a note two machines must create byte for byte alike (a merge's conflict note): the
    timestamp field orders it like any note created at ``ms``, and 74 bits of sha256(seed) fill
    the rest, so different seeds give different ids.
    """
    digest = int.from_bytes(hashlib.sha256(seed).digest()[:10], "big")
    seq = digest >> 68 & 0xFFF
    rand = digest & ((1 << 62) - 1)
    value = (max(ms, 0) & ((1 << 48) - 1)) << 80 | 0x7 << 76 | seq << 64 | 0b10 << 62 | rand
    return str(uuid.UUID(int=value))


#: Namespace of ids derived for notes a person wrote without an ``id`` (stable while the path is).
_DERIVED_NS = uuid.UUID("8f7a4c52-3c1e-4d0b-9a55-6b1d2f0e7a10")


def derived_id(path: str) -> str:
    """The id of a note without one (or of a copy whose id another file holds): a UUID derived
    from its vault path, so it is stable while the file keeps its name."""
    return uuid5_text(_DERIVED_NS, path)


def uuid5_text(namespace: uuid.UUID, name: str) -> str:
    """``str(uuid.uuid5(namespace, name))``, without building the UUID object: the edge graph
    derives an id for every link of the vault at start (tens of thousands at 10k notes), and the
    object's construction and formatting were most of that time."""
    digest = bytearray(
        hashlib.sha1(namespace.bytes + name.encode("utf-8"), usedforsecurity=False).digest()[:16]
    )
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
