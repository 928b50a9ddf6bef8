"""The daemon's HTTP guards, through raw HTTP against a real server: bearer auth (401), Host and
Origin (403), the body cap (413), /health, loopback only, and the token file."""

from __future__ import annotations

import logging
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp_harness import mcp_client, running_daemon, structured, tls_context

from vaultmem.config import Settings
from vaultmem.errors import InvalidInput
from vaultmem.server.app import DEFAULT_MAX_BODY, check_loopback
from vaultmem.server.daemon import Daemon, bind_socket
from vaultmem.server.token import TokenFile, ensure_token, rotate_token

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def daemon(vault: Path, tmp_path: Path) -> Iterator[Daemon]:
    with running_daemon(vault, tmp_path / "token") as running:
        yield running


def post(
    daemon: Daemon, *, token: str | None = None, url: str | None = None, **kwargs: Any
) -> httpx2.Response:
    headers = dict(MCP_HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    headers.update(kwargs.pop("headers", {}))
    if "content" not in kwargs:
        kwargs["json"] = INITIALIZE
    with httpx2.Client(timeout=30, verify=tls_context()) as client:
        return client.post(url or daemon.url, headers=headers, **kwargs)


def test_an_initialize_with_the_token_is_answered(daemon: Daemon) -> None:
    response = post(daemon, token=daemon.token())
    assert response.status_code == 200
    assert "vaultmem" in response.text


@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", "Bearer wrong-token", "Basic dXNlcjpwYXNz", "Token abc", "wrong-token"],
)
def test_a_request_without_the_right_bearer_token_is_refused_with_401(
    daemon: Daemon, authorization: str | None
) -> None:
    """Issue: every MCP request needs `Authorization: Bearer <token>` (401 when missing or wrong)."""
    headers = {} if authorization is None else {"Authorization": authorization}
    response = post(daemon, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_a_token_in_the_query_string_is_never_accepted(daemon: Daemon) -> None:
    token = daemon.token()
    for name in ("token", "access_token", "auth"):
        assert post(daemon, url=f"{daemon.url}?{name}={token}").status_code == 401


def test_a_token_differing_only_in_its_last_character_is_refused(daemon: Daemon) -> None:
    token = daemon.token()
    near = token[:-1] + ("A" if token[-1] != "A" else "B")
    assert post(daemon, token=near).status_code == 401
    assert post(daemon, token=token + "x").status_code == 401


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "https://127.0.0.1:{port}",  # another scheme is another origin
        "http://localhost:{other}",  # a page served from another localhost port
        "http://127.0.0.1:{other}",
        "null",
    ],
)
def test_a_foreign_origin_is_refused_with_403_even_with_the_token(daemon: Daemon, origin: str) -> None:
    """Issue: 403 for a foreign Origin, including a page on another localhost port."""
    origin = origin.format(port=daemon.port, other=daemon.port + 1)
    response = post(daemon, token=daemon.token(), headers={"Origin": origin})
    assert response.status_code == 403


def test_the_servers_own_origin_is_allowed(daemon: Daemon) -> None:
    for origin in (f"http://127.0.0.1:{daemon.port}", f"http://localhost:{daemon.port}"):
        assert post(daemon, token=daemon.token(), headers={"Origin": origin}).status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "localhost:{other}", "127.0.0.1"])
def test_a_host_header_not_naming_the_bound_address_is_refused_with_403(daemon: Daemon, host: str) -> None:
    """Issue: the Host header is checked against the bound address (DNS-rebinding defence)."""
    host = host.format(port=daemon.port, other=daemon.port + 1)
    response = post(daemon, token=daemon.token(), headers={"Host": host})
    assert response.status_code == 403


def test_a_request_body_over_the_cap_is_refused_with_413(daemon: Daemon) -> None:
    """Issue: a request body cap (413)."""
    body = b'{"jsonrpc": "2.0", "pad": "' + b"x" * (DEFAULT_MAX_BODY + 1) + b'"}'
    assert post(daemon, token=daemon.token(), content=body).status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: the cap is enforced while reading
        for _ in range(DEFAULT_MAX_BODY // 65536 + 2):
            yield b"x" * 65536

    assert post(daemon, token=daemon.token(), content=chunks()).status_code == 413


def test_health_needs_no_token_and_reveals_nothing_about_the_vault(daemon: Daemon, vault: Path) -> None:
    with httpx2.Client(timeout=30, verify=tls_context()) as client:
        response = client.get(f"http://127.0.0.1:{daemon.port}/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    assert str(vault) not in response.text and str(vault.parent) not in response.text
    assert set(response.json()) == {"status", "service", "version"}


def test_the_token_is_never_logged(daemon: Daemon, caplog: pytest.LogCaptureFixture) -> None:
    token = daemon.token()
    with caplog.at_level(logging.DEBUG):
        post(daemon, token=token)
        post(daemon, url=f"{daemon.url}?token={token}")
        post(daemon, token=token + "x")
    # The test's own HTTP client logs the URLs it requests; nothing on the server side may.
    server_side = [r for r in caplog.records if not r.name.startswith(("httpx2", "httpcore2"))]
    assert all(token not in r.getMessage() for r in server_side)


def test_a_rotated_token_takes_effect_without_a_restart(daemon: Daemon) -> None:
    old = daemon.token()
    new = rotate_token(daemon.token_file)
    assert post(daemon, token=old).status_code == 401
    assert post(daemon, token=new).status_code == 200


def test_the_token_file_is_private_to_its_owner(tmp_path: Path) -> None:
    path = tmp_path / "config" / "vaultmem" / "tokens" / "v.token"
    token, created = ensure_token(path)
    assert created and len(token) >= 40
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert ensure_token(path) == (token, False)
    assert TokenFile(path).matches(token.encode())


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "example.com", "10.0.0.1"])
def test_a_non_loopback_address_is_refused(vault: Path, host: str) -> None:
    """Issue: loopback only."""
    with pytest.raises(InvalidInput, match="loopback"):
        check_loopback(host)
    with pytest.raises(InvalidInput, match="loopback"):
        Daemon(Settings.resolve(vault), host=host)


def test_loopback_addresses_are_accepted() -> None:
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        check_loopback(host)


def test_a_port_already_in_use_fails_with_a_clear_message(daemon: Daemon) -> None:
    with pytest.raises(Exception, match="another vaultmem daemon"):
        bind_socket("127.0.0.1", daemon.port)


def test_the_sdk_client_without_a_token_cannot_call_a_tool(daemon: Daemon) -> None:
    async def main() -> None:
        async with mcp_client(daemon.url, "not-the-token") as client:
            await client.call_tool("memory_search", {"query": "x"})

    with pytest.raises(BaseException):
        anyio.run(main)


def test_the_sdk_client_with_the_token_can_call_a_tool(daemon: Daemon) -> None:
    out: dict[str, Any] = {}

    async def main() -> None:
        async with mcp_client(daemon.url, daemon.token()) as client:
            out.update(structured(await client.call_tool("memory_search", {"query": "anything"})))

    anyio.run(main)
    assert out == {"results": [], "total": 0, "cursor": None}


def test_connections_are_served_without_nagles_delay() -> None:
    """The listening socket says TCP, so asyncio sets TCP_NODELAY on every connection it accepts.

    Created with protocol 0 it did not, and a response written in two parts on a kept-alive
    connection waited for the client's delayed ACK: ~40 ms added to every MCP call."""
    import asyncio
    import socket

    sock = bind_socket("127.0.0.1", 0)
    assert sock.proto == socket.IPPROTO_TCP
    seen: list[int] = []

    async def main() -> None:
        def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            conn = writer.get_extra_info("socket")
            seen.append(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(accepted, sock=sock)
        async with server:
            _reader, writer = await asyncio.open_connection(*sock.getsockname()[:2])
            for _ in range(100):
                if seen:
                    break
                await asyncio.sleep(0.01)
            writer.close()

    asyncio.run(main())
    assert seen and seen[0] != 0
