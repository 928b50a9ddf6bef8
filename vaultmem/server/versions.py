"""The protocol versions ``/mcp`` speaks, and the answer to a request that names another.

The MCP transport spec: "If the server receives a request with an invalid or unsupported
MCP-Protocol-Version, it MUST respond with 400 Bad Request." The SDK routes every version it does not
know to its 2026 (sessionless) entry, which answered a pre-2026 request with a complaint about a
missing ``params._meta`` envelope. :class:`ProtocolVersions` answers such a request itself: 400 and
the 2026 protocol's ``UnsupportedProtocolVersionError`` (``-32022``), whose ``data.supported`` lists
every version the daemon speaks, the handshake ones included. The SDK's client reads that list: it
retries at a modern version both sides speak, or falls back to ``initialize``.
"""

from __future__ import annotations

import json

from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from vaultmem.server.asgi import replaying
from vaultmem.server.sessions import VERSION_HEADER, request_id

#: Oldest to newest: the ``initialize`` handshake's versions, then the sessionless ones.
SUPPORTED_VERSIONS = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
#: How much of an unknown version the answer repeats.
MAX_SHOWN = 40


class ProtocolVersions:
    """400 for a request on ``path`` whose ``mcp-protocol-version`` header is not one the daemon
    speaks; every other request passes untouched (no header: the spec's default version)."""

    def __init__(self, app: ASGIApp, *, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        version = Headers(scope=scope).get(VERSION_HEADER)
        if version is None or version in SUPPORTED_VERSIONS:
            await self.app(scope, receive, send)
            return
        answered_id = None
        if scope["method"] == "POST":
            first = await receive()
            receive = replaying(first, receive)
            answered_id = request_id(first.get("body", b""))
        await unsupported_version(version, answered_id)(scope, receive, send)


def unsupported_version(requested: str, answered_id: str | None) -> JSONResponse:
    shown = "".join(c if c.isprintable() else "?" for c in requested)[:MAX_SHOWN]
    handshake, modern = ", ".join(HANDSHAKE_PROTOCOL_VERSIONS), ", ".join(MODERN_PROTOCOL_VERSIONS)
    message = (
        f"MCP protocol version {shown!r} (the mcp-protocol-version header) is not one this server "
        f"speaks: send one of {handshake} (negotiated with initialize) or {modern} (no session), "
        "or leave the header out"
    )
    error = {
        "code": UNSUPPORTED_PROTOCOL_VERSION,
        "message": message,
        "data": {"supported": list(SUPPORTED_VERSIONS), "requested": requested},
    }
    rpc_id = json.loads(answered_id) if answered_id is not None else None
    return JSONResponse({"jsonrpc": "2.0", "id": rpc_id, "error": error}, status_code=400)
