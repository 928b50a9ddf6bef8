"""Preview tokens: the gate of every destructive graph action.

A preview answer carries a token; the confirming call must send it back. A token is ephemeral
(held in memory only: a restart forgets it, and a fresh preview is one call away), lives about five
minutes, is used once, and is bound to the exact action and arguments it previewed, so a token
from ``unlink edge_id=A`` cannot confirm ``unlink edge_id=B``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from vaultmem.errors import InvalidInput
from vaultmem.notes.ids import uuid7
from vaultmem.operations.results import Answer, Payload, Row

TOKEN_TTL_SECONDS = 300.0
#: Tokens kept at most (the oldest are dropped first); a preview loop cannot grow memory forever.
MAX_TOKENS = 10_000


@dataclass(frozen=True)
class _Issued:
    binding: str
    expires: float


def _binding(tool: str, action: str, arguments: Mapping[str, Payload]) -> str:
    return json.dumps([tool, action, arguments], sort_keys=True, separators=(",", ":"), default=str)


class PreviewTokens:
    """Issues and redeems preview tokens. Thread-safe."""

    def __init__(self, ttl: float = TOKEN_TTL_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.clock = clock
        self._lock = threading.Lock()
        self._tokens: dict[str, _Issued] = {}

    def issue(self, tool: str, action: str, arguments: Mapping[str, Payload]) -> str:
        """A new token for confirming ``action`` with exactly ``arguments``."""
        token = uuid7()
        now = self.clock()
        with self._lock:
            self._expire(now)
            while len(self._tokens) >= MAX_TOKENS:
                self._tokens.pop(next(iter(self._tokens)))
            self._tokens[token] = _Issued(_binding(tool, action, arguments), now + self.ttl)
        return token

    def redeem(
        self, token: str | None, tool: str, action: str, arguments: Mapping[str, Payload], retry: str
    ) -> None:
        """Accept ``token`` for this exact call and spend it; else InvalidInput saying how to get one.

        ``retry`` is the preview call to make (``"memory_store action=unlink edge_id=..."``). A token
        that does not match is not spent, so the call it was issued for can still use it.
        """
        hint = f"call {retry} without confirm (or with confirm: false) to get a fresh preview_token"
        if not token:
            raise InvalidInput(f"confirm: true needs the preview_token of a preview of this call; {hint}")
        now = self.clock()
        with self._lock:
            self._expire(now)
            issued = self._tokens.get(token)
            if issued is None:
                raise InvalidInput(
                    f"preview_token {token!r} is unknown, expired (tokens last about "
                    f"{int(self.ttl // 60)} minutes) or already used; {hint}"
                )
            if issued.binding != _binding(tool, action, arguments):
                raise InvalidInput(
                    f"preview_token {token!r} was issued for a different action or different "
                    f"arguments; {hint}"
                )
            del self._tokens[token]

    def preview_one(self, tool: str, action: str, arguments: Mapping[str, Payload], item: Row) -> Answer:
        """The answer of a single-object preview: a fresh token in ``item["preview_token"]`` and in
        ``meta.preview`` (``{token, destructive: true}``), the rest of ``item`` as given."""
        token = self.issue(tool, action, arguments)
        item["preview_token"] = token
        answer = Answer.one(action, item)
        answer.preview = {"token": token, "destructive": True}
        return answer

    def _expire(self, now: float) -> None:
        stale = [t for t, issued in self._tokens.items() if issued.expires <= now]
        for t in stale:
            del self._tokens[t]
