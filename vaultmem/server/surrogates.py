"""JSON-RPC text with half an emoji in it, read as a browser reads it.

A JavaScript string is UTF-16, and a host or an agent that cuts one by length (``slice(0, 200)``)
can cut an emoji in half. ``JSON.stringify`` (and Python's ``json.dumps``) write the lone half as an
escape, ``"\\ud83d"``: valid JSON text, but the MCP SDK's parser refuses it, so the whole request
failed: over HTTP a ``-32700`` parse error that the TypeScript SDK throws as a transport error,
over stdio no answer at all (the host waited for its timeout). Here each lone surrogate in a
message becomes U+FFFD, the replacement character a UTF-8 encoder (or ``fetch``) writes for it; a
message without one is passed on byte for byte.
"""

from __future__ import annotations

import json
import re

#: A ``\\u`` escape of a UTF-16 surrogate (D800-DFFF), paired or not: the cheap first look.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
#: What is left of a surrogate once JSON has joined every pair: a lone half.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_lone_surrogates(message: bytes) -> bytes:
    """``message`` (one JSON text) with each lone surrogate escape replaced by U+FFFD."""
    if not _SURROGATE_ESCAPE.search(message):
        return message
    try:
        text = json.dumps(json.loads(message), ensure_ascii=False, allow_nan=False)
    except (ValueError, RecursionError):  # not JSON, too deep, or a number JSON cannot write back:
        # the SDK's parser answers it
        return message
    if not _LONE_SURROGATE.search(text):
        return message  # every surrogate was half of a pair (an ASCII-only writer's emoji)
    return _LONE_SURROGATE.sub("\ufffd", text).encode("utf-8")
