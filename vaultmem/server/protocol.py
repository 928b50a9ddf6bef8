"""uvicorn's HTTP/1.1 protocol with a deadline on reading each request.

uvicorn bounds only the idle time between two requests on a kept-alive connection. A client that
opened a connection and sent part of its headers, or a POST that declared a body and sent less of
it, held the connection (and, for a body, a running request waiting on it) for as long as it
liked: 200 such connections stayed open for minutes.

Here every request must arrive whole in bounded time: its headers within ``header_timeout``
seconds of the connection opening (or, on a kept-alive connection, of the request's first byte),
its body within ``body_timeout`` seconds of its headers. Bytes that trickle in do not move either
deadline. A request that misses one is answered ``408 Request Timeout`` and its connection closed;
a request still waiting for its body sees the client as gone. The time the application takes to
answer is not bounded here (a long ``bulk_create`` is a legitimate request).
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any, Literal

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

Phase = Literal["headers", "body"]
_TIMEOUT_BODY = b'{"error": "the request did not arrive in time; send it whole, promptly"}\n'
#: Written as bytes: before a request's headers are in, h11 has no request to answer.
_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"content-length: %d\r\n\r\n%s" % (len(_TIMEOUT_BODY), _TIMEOUT_BODY)
)


class _DeadlineProtocol(H11Protocol):
    """One instance per connection; the two timeouts are set on the subclass that
    :func:`deadline_protocol` makes."""

    header_timeout: float = 10.0
    body_timeout: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._phase: Phase | None = None
        self._deadline: asyncio.TimerHandle | None = None

    # -- following the request being read ------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._follow(opened=True)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()  # a pipelined request may already be half read

    def connection_lost(self, exc: Exception | None) -> None:
        self._arm(None)
        super().connection_lost(exc)

    def _follow(self, *, opened: bool = False) -> None:
        """Arm the deadline of what is being read now; keep it if that has not changed."""
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            self._arm("body")
        elif state is h11.IDLE and (opened or self._phase == "headers" or self.conn.trailing_data[0]):
            self._arm("headers")
        else:  # the request is in (the application's time), or the connection is closing
            self._arm(None)  # between requests, uvicorn's keep-alive timeout applies

    def _arm(self, phase: Phase | None) -> None:
        if phase == self._phase and (phase is None or self._deadline is not None):
            return
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._phase = phase
        if phase is not None:
            seconds = self.header_timeout if phase == "headers" else self.body_timeout
            self._deadline = self.loop.call_later(seconds, self._expired, phase)

    def _expired(self, phase: Phase) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        log.info("dropped a request whose %s did not arrive in time", phase)
        if phase == "headers" or (self.cycle is not None and not self.cycle.response_started):
            self.transport.write(_TIMEOUT_RESPONSE)
        # connection_lost follows: a request waiting for its body then sees the client gone, and
        # whatever it answers is dropped.
        self.transport.close()


def deadline_protocol(header_timeout: float, body_timeout: float) -> type[H11Protocol]:
    """The protocol class to give ``uvicorn.Config(http=...)``, with these deadlines (seconds)."""
    for seconds in (header_timeout, body_timeout):
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 < seconds < math.inf:
            raise ValueError("request timeouts must be positive numbers of seconds")
    return type(
        "DeadlineProtocol",
        (_DeadlineProtocol,),
        {"header_timeout": float(header_timeout), "body_timeout": float(body_timeout)},
    )
