"""The daemon under misuse (issue 13, "The server under misuse"): clients that stall or trickle
their requests, over raw sockets against a real daemon (item 16); hosts that never end their MCP
sessions, with real MCP clients beside them (item 17)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import pytest
from mcp_harness import mcp_client, running_daemon, structured, wait_for
from test_server_http import post

from vaultmem.config import Settings
from vaultmem.errors import InvalidInput
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.server.daemon import Daemon

#: The deadlines the test daemon runs with (the default is 10 s each).
DEADLINE = 1.0
#: What a loaded two-core machine may add to a deadline before the daemon acts on it. Without a
#: deadline, the connections below stay open for good: every wait is bounded by this.
SLACK = 9.0


@pytest.fixture
def daemon(vault: Path, tmp_path: Path) -> Iterator[Daemon]:
    with running_daemon(
        vault, tmp_path / "token", request_header_timeout=DEADLINE, request_body_timeout=DEADLINE
    ) as running:
        yield running


def connect(daemon: Daemon) -> socket.socket:
    return socket.create_connection(("127.0.0.1", daemon.port), timeout=DEADLINE + SLACK)


def until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (fails the test on a timeout)."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        raise AssertionError(f"the connection was still open after {DEADLINE + SLACK}s") from None
    return received


def one_response(sock: socket.socket) -> bytes:
    """One whole response with a Content-Length (its head and body may come in separate reads)."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += sock.recv(65536)
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def headers(daemon: Daemon, *extra: str) -> bytes:
    lines = [f"Host: 127.0.0.1:{daemon.port}", *extra]
    return "".join(f"{line}\r\n" for line in lines).encode("latin-1")


def test_a_connection_that_sends_half_its_headers_is_answered_408_and_closed(daemon: Daemon) -> None:
    with connect(daemon) as sock:
        started = time.monotonic()
        sock.sendall(b"POST /mcp HTTP/1.1\r\n" + headers(daemon, "Content-Type: application/json"))
        answer = until_closed(sock)
        waited = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert DEADLINE * 0.9 <= waited < DEADLINE + SLACK


def test_a_connection_that_sends_nothing_is_closed(daemon: Daemon) -> None:
    with connect(daemon) as sock:
        assert until_closed(sock).startswith(b"HTTP/1.1 408 ")


def test_headers_trickled_a_byte_at_a_time_do_not_move_the_deadline(daemon: Daemon) -> None:
    request = b"GET /health HTTP/1.1\r\n" + headers(daemon, "X-Padding: " + "x" * 400)
    with connect(daemon) as sock:
        started = time.monotonic()
        try:
            for byte in request:  # one byte every 50 ms: 20 s for the whole request
                sock.sendall(bytes([byte]))
                time.sleep(0.05)
                assert time.monotonic() - started < DEADLINE + SLACK, "still reading the trickle"
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed by the server while the client was still sending
        else:
            raise AssertionError("the server read the whole trickled request")


def test_a_post_that_declares_a_body_and_sends_none_is_answered_408_and_closed(daemon: Daemon) -> None:
    """Issue 13, item 16: such a POST waited at least 15 s (the client's own timeout)."""
    with connect(daemon) as sock:
        started = time.monotonic()
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\n"
            + headers(
                daemon,
                f"Authorization: Bearer {daemon.token()}",
                "Content-Type: application/json",
                "Accept: application/json, text/event-stream",
                "Content-Length: 200",
            )
            + b"\r\n"
            + b'{"jsonrpc": "2.0", '  # a fraction of the declared body, then nothing
        )
        answer = until_closed(sock)
        waited = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert DEADLINE * 0.9 <= waited < DEADLINE + SLACK


def test_two_hundred_stalled_connections_are_all_dropped_while_health_still_answers(
    daemon: Daemon,
) -> None:
    """Issue 13, item 16: 200 connections holding half their headers stayed open for minutes."""
    stalled = [connect(daemon) for _ in range(200)]
    try:
        for sock in stalled:
            sock.sendall(b"GET /health HTTP/1.1\r\n" + headers(daemon))
        with connect(daemon) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\n" + headers(daemon, "Connection: close") + b"\r\n")
            assert until_closed(sock).startswith(b"HTTP/1.1 200 ")
        answers = [until_closed(sock) for sock in stalled]
    finally:
        for sock in stalled:
            sock.close()
    assert all(answer.startswith(b"HTTP/1.1 408 ") for answer in answers)


def test_a_kept_alive_connection_idle_between_requests_is_not_cut_by_the_request_deadline(
    daemon: Daemon,
) -> None:
    """Between two requests the keep-alive timeout (5 s) applies, not the request deadline."""
    request = b"GET /health HTTP/1.1\r\n" + headers(daemon) + b"\r\n"
    with connect(daemon) as sock:
        sock.sendall(request)
        first = one_response(sock)
        time.sleep(DEADLINE * 2)  # idle longer than the request deadline, shorter than keep-alive
        sock.sendall(request)
        second = one_response(sock)
    assert first.startswith(b"HTTP/1.1 200 ") and second.startswith(b"HTTP/1.1 200 ")


@pytest.mark.parametrize("value", [0, -1, "soon"])
def test_a_request_timeout_that_is_not_a_positive_number_is_refused_at_start(
    vault: Path, tmp_path: Path, value: object
) -> None:
    (vault / "vaultmem.yaml").write_text(f"request_body_timeout: {value}\n", encoding="utf-8")
    daemon = Daemon(Settings.resolve(vault), port=0, embedder=FakeEmbedder(), token_file=tmp_path / "t")
    with pytest.raises(InvalidInput, match="request_body_timeout"):
        daemon.open()


# -- MCP sessions (item 17) --------------------------------------------------------------------


@contextmanager
def session_daemon(vault: Path, tmp_path: Path, **overrides: Any) -> Iterator[Daemon]:
    with running_daemon(vault, tmp_path / "token", **overrides) as running:
        yield running


def leak_a_session(daemon: Daemon) -> str:
    """Open a session and walk away, as a host that never sends DELETE does."""
    response = post(daemon, token=daemon.token())
    assert response.status_code == 200, response.text
    return str(response.headers["mcp-session-id"])


def session_lives(daemon: Daemon, session_id: str) -> bool:
    """Whether the daemon still knows ``session_id`` (a notification on it is not answered 404)."""
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers = {"mcp-session-id": session_id, "mcp-protocol-version": "2025-06-18"}
    status = post(daemon, token=daemon.token(), json=notification, headers=headers).status_code
    assert status in (200, 202, 404), status
    return status != 404


def sessions_of(daemon: Daemon) -> dict[str, Any]:
    assert daemon.memory is not None and daemon.memory._status.sessions is not None
    return daemon.memory._status.sessions()


async def until(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.02)


def test_a_host_that_never_ends_its_sessions_does_not_lock_other_agents_out(
    vault: Path, tmp_path: Path
) -> None:
    """Issue 13, item 17: abandoned sessions stayed 30 minutes, and at the SDK's cap every new
    initialize got 503. Past the cap the longest-idle session is ended instead, and health says
    how many are open."""
    with session_daemon(vault, tmp_path, mcp_max_sessions=5) as daemon:
        leaked = [leak_a_session(daemon) for _ in range(12)]
        assert not session_lives(daemon, leaked[0])  # ended to make room
        assert session_lives(daemon, leaked[-1])

        async def another_agent() -> dict[str, Any]:
            async with mcp_client(daemon.url, daemon.token(), mode="legacy") as client:
                found = structured(await client.call_tool("memory_search", {"query": "anything"}))
                assert found["results"] == []
                health = await client.call_tool("memory_status", {"action": "health"})
                assert not health.is_error and health.structured_content is not None
                return dict(health.structured_content["result"]["item"])

        health = anyio.run(another_agent)
    # 12 leaked and the agent's own: the 8 idle the longest were ended; the agent's is in use.
    assert health["mcp_sessions"] == {
        "open": 5, "in_use": 1, "max": 5, "idle_timeout_seconds": 300.0, "ended_for_room": 8
    }  # fmt: skip


def test_an_abandoned_session_is_ended_after_the_idle_timeout(vault: Path, tmp_path: Path) -> None:
    idle = 0.5
    with session_daemon(vault, tmp_path, mcp_session_idle_timeout=idle) as daemon:
        leaked = leak_a_session(daemon)
        assert sessions_of(daemon)["open"] == 1
        # Each probe is a request on the session, which restarts its idle time: probe seldom.
        wait_for(lambda: not session_lives(daemon, leaked), timeout=30, interval=idle * 3)
        wait_for(lambda: sessions_of(daemon)["open"] == 0)  # the 404 is sent before it is counted


def test_a_connected_client_keeps_its_session_past_the_idle_timeout(vault: Path, tmp_path: Path) -> None:
    """The short idle timeout ends abandoned sessions only: a connected SDK client keeps its event
    stream open, which holds its session."""
    with session_daemon(vault, tmp_path, mcp_session_idle_timeout=1.0) as daemon:

        async def quiet_agent() -> None:
            async with mcp_client(daemon.url, daemon.token(), mode="legacy") as client:
                await client.call_tool("memory_search", {"query": "first"})
                await until(lambda: sessions_of(daemon)["in_use"] == 1)  # its event stream is open
                await anyio.sleep(2.5)  # quiet for longer than the idle timeout
                structured(await client.call_tool("memory_search", {"query": "second"}))

        anyio.run(quiet_agent)


def test_when_every_session_is_in_use_a_new_one_is_refused_with_a_retryable_503(
    vault: Path, tmp_path: Path
) -> None:
    with session_daemon(vault, tmp_path, mcp_max_sessions=2) as daemon:
        refused: list[httpx2.Response] = []

        async def two_agents() -> None:
            async with (
                mcp_client(daemon.url, daemon.token(), mode="legacy"),
                mcp_client(daemon.url, daemon.token(), mode="legacy"),
            ):
                await until(lambda: sessions_of(daemon)["in_use"] == 2)
                refused.append(await anyio.to_thread.run_sync(lambda: post(daemon, token=daemon.token())))
                async with mcp_client(daemon.url, daemon.token()) as sessionless:  # 2026 protocol
                    structured(await sessionless.call_tool("memory_search", {"query": "still served"}))

        anyio.run(two_agents)
        assert refused[0].status_code == 503 and "retry" in refused[0].json()["error"]["message"]
        leak_a_session(daemon)  # the agents are gone: room again
