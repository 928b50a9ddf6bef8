"""The daemon under misuse (issue 13, "The server under misuse"): clients that stall or trickle
their requests, over raw sockets against a real daemon (item 16)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_harness import running_daemon

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
