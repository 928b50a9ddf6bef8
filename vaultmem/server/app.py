"""The HTTP face of the daemon: streamable-HTTP MCP at ``/mcp`` and an unauthenticated ``/health``.

Every request passes three guards, outermost first:

1. **Host and Origin** (DNS-rebinding defence): the Host header must name the bound address and
   port (``127.0.0.1:7821`` or ``localhost:7821``); an Origin header, when present, must be that
   same origin. Anything else is refused with 403, including a page served from another port of
   localhost.
2. **Bearer token** on everything but ``/health``: ``Authorization: Bearer <token>``, compared in
   constant time; 401 otherwise, whose message names the command that prints the vault's token
   (never a token). A token in the query string is never looked at, and the header is
   never logged.
3. **Body cap**: a request body over the cap is refused with 413 before it is read in full.

A request reaches the MCP SDK only once its body is in whole (:class:`WholeBody`); how long a
client may take to send headers and body is bounded by the HTTP protocol (``protocol.py``).

A tool call is answered as one JSON body (``application/json``), not as a server-sent event: the
MCP SDK's client refuses an event over 1 MiB, which a ``bulk_create`` of a few thousand rows passes
(the graph document allows 10,000). The protocol lets a server answer either way and requires
clients to take both; the GET event stream a session holds open is unchanged.

The SDK's own transport security is also configured with the same exact host and origin lists
(its default would admit any localhost port), so the checks hold even if the outer guard moved.
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Any

from mcp.server.transport_security import RequestBodyLimitMiddleware, TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from vaultmem import __version__
from vaultmem.errors import InvalidInput
from vaultmem.mcp.tools import build_mcp_server
from vaultmem.mcp.validation import AGENT_SCOPE_KEY, Starting
from vaultmem.memory import Memory
from vaultmem.server.asgi import replaying
from vaultmem.server.batches import Unbatched
from vaultmem.server.sessions import SDK_CAP_FACTOR, SessionBudget
from vaultmem.server.surrogates import replace_lone_surrogates
from vaultmem.server.token import TokenFile, token_command
from vaultmem.server.versions import ProtocolVersions

MCP_PATH = "/mcp"
HEALTH_PATH = "/health"
PUBLIC_PATHS = frozenset({HEALTH_PATH})
#: Comfortably above the largest valid call (content is capped at 100 kB by the filing contract,
#: and JSON escaping can grow it several times), far below anything that strains memory.
DEFAULT_MAX_BODY = 1024 * 1024


def check_loopback(host: str) -> None:
    """Refuse any address but loopback: the daemon serves one person's machine, never a network."""
    if host == "localhost":
        return
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        raise InvalidInput(
            f"--host {host!r} is not a loopback address; vaultmem serves only this machine "
            "(use 127.0.0.1, ::1 or localhost)"
        ) from None
    if not address.is_loopback:
        raise InvalidInput(
            f"--host {host} is not a loopback address; vaultmem never listens on a network "
            "interface (use 127.0.0.1). To reach it from elsewhere, use an SSH tunnel."
        )


def allowed_hosts(host: str, port: int) -> list[str]:
    """The Host header values a request may carry for a daemon bound to ``host:port``."""
    names = {"localhost"}
    if host == "localhost":
        names |= {"127.0.0.1", "[::1]"}
    else:
        address = ipaddress.ip_address(host.strip("[]"))
        names.add(f"[{address}]" if address.version == 6 else str(address))
    return sorted(f"{name}:{port}" for name in names)


def allowed_origins(host: str, port: int) -> list[str]:
    return [f"http://{h}" for h in allowed_hosts(host, port)]


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, message: str) -> None:
    headers = {"WWW-Authenticate": 'Bearer realm="vaultmem"'} if status == 401 else None
    response = Response(
        json.dumps({"error": message}), status_code=status, media_type="application/json", headers=headers
    )
    await response(scope, receive, send)


class HostOriginGuard:
    """403 unless Host names the bound address and Origin (when sent) is that same origin."""

    def __init__(self, app: ASGIApp, hosts: list[str], origins: list[str]) -> None:
        self.app = app
        self.hosts = frozenset(hosts)
        self.origins = frozenset(origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            if headers.get("host") not in self.hosts:
                await _refuse(scope, receive, send, 403, "Host header does not name this server")
                return
            origin = headers.get("origin")
            if origin is not None and origin not in self.origins:
                await _refuse(scope, receive, send, 403, "Origin not allowed")
                return
        await self.app(scope, receive, send)


def missing_token_message(vault: Path) -> str:
    """What a request without a valid token is told: how to get one (never a token itself). Both
    commands name the vault: without ``--vault`` they act on the default one, whose tokens this
    daemon does not accept."""
    command = token_command(vault)
    return (
        "missing or invalid bearer token: send the header `Authorization: Bearer <token>`; print "
        f"this vault's default token with `{command}` (or make one per agent with `{command} add NAME`)"
    )


class BearerAuth:
    """401 unless ``Authorization: Bearer <token>`` is one of the vault's tokens (constant-time).

    The agent the token names goes into the request's scope under :data:`AGENT_SCOPE_KEY`, where
    the MCP server reads it for each tool call (``mcp/validation.py``): a client cannot claim a
    name by a header, only by holding that agent's token.
    """

    def __init__(self, app: ASGIApp, tokens: TokenFile, vault: Path) -> None:
        self.app = app
        self.tokens = tokens
        self.refusal = missing_token_message(vault)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in PUBLIC_PATHS:
            scheme, _, presented = Headers(scope=scope).get("authorization", "").partition(" ")
            # Headers arrive latin-1 decoded; encoding back gives the exact bytes sent.
            candidate = presented.strip().encode("latin-1", "replace")
            agent = self.tokens.agent_for(candidate) if scheme.lower() == "bearer" else None
            if agent is None:
                await _refuse(scope, receive, send, 401, self.refusal)
                return
            scope[AGENT_SCOPE_KEY] = (agent.name, agent.email)
        await self.app(scope, receive, send)


class WholeBody:
    """Call the application once the request's body is in; a client gone before that ends here.

    A client that hung up mid-body, or was dropped for sending it too slowly, has nobody left to
    answer; passed on, the MCP SDK logged each one as an error with a traceback. A body with half an
    emoji escaped in it is passed on with U+FFFD in its place (``surrogates.py``).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # http.disconnect: the client is gone
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        readable = replace_lone_surrogates(body)
        if readable is not body:
            headers = [(k, v) for k, v in scope["headers"] if k != b"content-length"]
            scope = {**scope, "headers": [*headers, (b"content-length", str(len(readable)).encode())]}
        whole: Message = {"type": "http.request", "body": readable, "more_body": False}
        await self.app(scope, replaying(whole, receive), send)


class Health:
    """``GET /health``: liveness only, nothing about the vault (no path, no counts, no names)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == HEALTH_PATH:
            if scope["method"] not in ("GET", "HEAD"):
                await Response(status_code=405, headers={"Allow": "GET, HEAD"})(scope, receive, send)
                return
            body = {"status": "ok", "service": "vaultmem", "version": __version__}
            await JSONResponse(body)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def build_app(
    memory: Memory,
    *,
    host: str,
    port: int,
    tokens: TokenFile,
    max_body: int = DEFAULT_MAX_BODY,
    start: Starting | None = None,
) -> ASGIApp:
    """The daemon's ASGI application for ``memory``'s vault, bound at ``host:port``; tool calls
    wait for ``start`` while it is given and not done (the start runs behind: daemon.py)."""
    check_loopback(host)
    settings = memory.settings
    idle, most = settings.mcp_session_idle_timeout, settings.mcp_max_sessions
    if not (isinstance(idle, int | float) and 0 < idle < float("inf")) or not (
        isinstance(most, int) and not isinstance(most, bool) and most > 0
    ):
        raise InvalidInput(
            f"mcp_session_idle_timeout must be a positive number of seconds and mcp_max_sessions a "
            f"positive whole number (vaultmem.yaml), not {idle!r} and {most!r}"
        )
    hosts, origins = allowed_hosts(host, port), allowed_origins(host, port)
    server = build_mcp_server(memory)
    server.start = start
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )
    app: Any = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,  # no cap on the answer's size (module docstring)
        transport_security=security,
        host=host,
        max_request_body_size=max_body,
        session_idle_timeout=float(idle),
        max_sessions=most * SDK_CAP_FACTOR,  # a backstop: SessionBudget keeps the real bound
    )
    budget = SessionBudget(app, path=MCP_PATH, max_sessions=most, idle_timeout=float(idle))
    memory.report_sessions(budget.counts)  # memory_status health says how many are open
    app = Health(ProtocolVersions(budget, path=MCP_PATH))
    app = Unbatched(app, path=MCP_PATH)
    app = WholeBody(app)
    app = RequestBodyLimitMiddleware(app, max_body)
    app = BearerAuth(app, tokens, settings.vault)
    guarded: ASGIApp = HostOriginGuard(app, hosts, origins)
    return guarded
