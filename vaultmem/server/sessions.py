"""A bound on open MCP sessions that never locks a new client out.

The SDK keeps a streamable-HTTP session until its client ends it or it has been idle 30 minutes,
and refuses every ``initialize`` once 10,000 are open, so a host that never ends its sessions
locked every agent out. :class:`SessionBudget` sits in front of the SDK's ``/mcp`` and keeps an idle
timeout (``mcp_session_idle_timeout``; a connected client's open event stream holds its session), a
cap (``mcp_max_sessions``: an ``initialize`` beyond it ends the session idle the longest instead of
being refused; 503 only when every session is in use) and a count (:meth:`SessionBudget.counts`,
in ``memory_status health``). Sessionless requests (the 2026 protocol) pass through untouched.
Details: docs/architecture.md, "MCP sessions".

It also refuses a request whose id is that of a request of the same session still being answered
(409, naming the id). The SDK matches an answer to its POST by the request's id, so the first of
two such requests was never answered, while its call ran to the end (a write was done and its
client, left waiting, retried it).

A request naming a session the SDK does not hold gets the spec's 404, with a message naming the
likely causes (a restart, the idle timeout) and the fix: a new ``initialize`` without the session
header (the SDK's own said only "Session not found").
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from vaultmem.server.asgi import replaying

log = logging.getLogger(__name__)

SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
#: The SDK's own cap is set this much higher: a backstop while admissions are being decided.
SDK_CAP_FACTOR = 2


@dataclass
class _Session:
    last_active: float
    in_flight: int = 0
    #: The ids (as JSON text) of the session's requests being answered.
    request_ids: set[str] = field(default_factory=set)


class SessionBudget:
    """ASGI middleware in front of the SDK's streamable-HTTP app (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        path: str,
        max_sessions: int,
        idle_timeout: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.path = path
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self._clock = clock
        self._sessions: dict[str, _Session] = {}
        self._opening = 0  # initializes admitted and not yet answered
        self._admission = anyio.Lock()
        self.ended_for_room = 0

    def counts(self) -> dict[str, Any]:
        """Open sessions (and how many have a request in flight or an open event stream), the cap,
        the idle timeout, and how many were ended to make room since the daemon started."""
        self._forget_expired()
        return {
            "open": len(self._sessions),
            "in_use": sum(1 for s in self._sessions.values() if s.in_flight),
            "max": self.max_sessions,
            "idle_timeout_seconds": self.idle_timeout,
            "ended_for_room": self.ended_for_room,
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        version = headers.get(VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            await self.app(scope, receive, send)  # the 2026 protocol: no sessions
            return
        session_id = headers.get(SESSION_HEADER)
        if session_id is None:
            if scope["method"] == "POST":
                await self._open(scope, receive, send)
            else:
                await self.app(scope, receive, send)
            return
        # A session this table has let go of as expired may still be alive in the SDK (its timer
        # fires a moment later): whatever the SDK does not answer 404 is counted again.
        session = self._sessions.setdefault(session_id, _Session(last_active=self._clock()))
        rpc_id = None
        if scope["method"] == "POST":
            first = await receive()
            receive = replaying(first, receive)
            rpc_id = request_id(first.get("body", b""))
            if rpc_id in session.request_ids:
                await _id_in_use(rpc_id)(scope, receive, send)
                return
        if rpc_id is not None:
            session.request_ids.add(rpc_id)
        session.in_flight += 1
        status: list[int] = []
        try:
            await self.app(scope, receive, _watching(self._explaining_gone(send, session_id), status))
        finally:
            session.in_flight -= 1
            session.last_active = self._clock()
            session.request_ids.discard(rpc_id)
        answered = status[0] if status else None
        if answered == 404 or (scope["method"] == "DELETE" and answered is not None and answered < 300):
            self._sessions.pop(session_id, None)  # ended by its client, or already gone

    async def _open(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with self._admission:
            self._forget_expired()
            if len(self._sessions) + self._opening >= self.max_sessions:
                oldest = self._longest_idle()
                if oldest is None:
                    await _busy(self.max_sessions)(scope, receive, send)
                    return
                await self._end(oldest, scope)
            self._opening += 1
        try:

            async def register(message: Message) -> None:
                if message["type"] == "http.response.start" and message["status"] < 400:
                    new_id = Headers(raw=message.get("headers", [])).get(SESSION_HEADER)
                    if new_id:
                        self._sessions[new_id] = _Session(last_active=self._clock())
                await send(message)

            await self.app(scope, receive, register)
        finally:
            self._opening -= 1

    def _explaining_gone(self, send: Send, session_id: str) -> Send:
        """``send``, but the SDK's bare ``404 Session not found`` says why and what to do."""
        replaced = False

        async def explained(message: Message) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and message["status"] == 404:
                replaced = True
                body = json.dumps(_session_gone(session_id, self.idle_timeout)).encode("utf-8")
                headers = [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ]
                await send({"type": "http.response.start", "status": 404, "headers": headers})
                await send({"type": "http.response.body", "body": body, "more_body": False})
            elif not replaced:
                await send(message)

        return explained

    def _forget_expired(self) -> None:
        """Drop the sessions the SDK's idle timer has ended (or is about to)."""
        now = self._clock()
        for session_id, session in list(self._sessions.items()):
            if not session.in_flight and now - session.last_active >= self.idle_timeout:
                del self._sessions[session_id]

    def _longest_idle(self) -> str | None:
        idle = [(s.last_active, i) for i, s in self._sessions.items() if not s.in_flight]
        return min(idle)[1] if idle else None

    async def _end(self, session_id: str, scope: Scope) -> None:
        """End a session through the SDK as its client would: ``DELETE`` with its id."""
        host = Headers(scope=scope).get("host", "")
        ending: Scope = {
            **scope,
            "method": "DELETE",
            "query_string": b"",
            "headers": [(b"host", host.encode("latin-1")), (SESSION_HEADER.encode(), session_id.encode())],
        }
        sent = False

        async def no_body() -> Message:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: Message) -> None:
            return None

        await self.app(ending, no_body, discard)
        self._sessions.pop(session_id, None)
        self.ended_for_room += 1
        log.info("ended the idle MCP session %s… to make room (cap %d)", session_id[:8], self.max_sessions)


def request_id(body: bytes) -> str | None:
    """The id of the JSON-RPC request ``body`` holds, as JSON text; None for anything else (a
    notification, a response, a batch, not JSON)."""
    if b'"id"' not in body:
        return None
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or "method" not in message or message.get("id") is None:
        return None
    return json.dumps(message["id"])


def _id_in_use(rpc_id: str) -> JSONResponse:
    return JSONResponse(
        {
            "jsonrpc": "2.0",
            "id": json.loads(rpc_id),
            "error": {
                "code": -32600,
                "message": f"request id {rpc_id} is already used by a request of this session that "
                "has not been answered yet; give every request of a session its own id",
            },
        },
        status_code=409,
    )


def _session_gone(session_id: str, idle_timeout: float) -> dict[str, Any]:
    """The 404 for a session id the SDK does not hold (the spec's status; the client must then
    open a new session), with the likely causes and the fix."""
    shown = "".join(c if c.isprintable() else "?" for c in session_id[:8])
    message = (
        f"MCP session {shown}… is not open on this server: the vaultmem daemon restarted since it "
        f"began, or it was idle more than {idle_timeout:g} s (mcp_session_idle_timeout) and was ended, "
        "or it was ended to make room (mcp_max_sessions) or by its client. Start a new session: send "
        "initialize again, without the mcp-session-id header"
    )
    return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}


def _watching(send: Send, status: list[int]) -> Send:
    async def watched(message: Message) -> None:
        if message["type"] == "http.response.start":
            status.append(int(message["status"]))
        await send(message)

    return watched


def _busy(max_sessions: int) -> JSONResponse:
    return JSONResponse(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32000,
                "message": f"all {max_sessions} MCP sessions have a request in flight; retry shortly, "
                "or raise mcp_max_sessions in vaultmem.yaml",
            },
        },
        status_code=503,
        headers={"Retry-After": "1"},
    )
