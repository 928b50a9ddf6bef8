"""Letting the requests being answered finish when the daemon stops.

uvicorn's graceful stop waits a few seconds for every connection to close, then cancels what is
left. An MCP client that keeps a GET event stream open never closes its connection, so the wait
always ran out, and a tool call still running then (a long ``bulk_create`` after a supervisor's
SIGTERM) finished and committed its work but its answer was dropped: a retry would have written
every row again.

:class:`Drain` counts the requests being answered and holds the open event streams. At a stop
(:meth:`Drain.finish`) the event streams are ended at once (cleanly: the client sees the stream
close and reconnects to the next daemon), and the other requests get up to ``shutdown_grace``
seconds to be answered before uvicorn's own stop runs.

sse-starlette (the SDK's event streams) ends *every* event stream of a uvicorn server that is
stopping, a POST's answer stream included, so a call running at a SIGTERM lost its answer even
when it finished at once (tool calls are now answered as JSON bodies, ``app.py``, so this guards
any answer the SDK still streams). :func:`keep_answer_streams_at_stop` turns that off for the process;
the drain ends the GET streams itself, and whatever is still open after the grace is cancelled
by uvicorn's own stop.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import anyio
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)


def keep_answer_streams_at_stop() -> None:
    """Stop sse-starlette from ending the answer streams of a stopping server (process-wide)."""
    from sse_starlette.sse import AppStatus

    AppStatus.enable_automatic_graceful_drain = False  # what disable_automatic_graceful_drain() does


class Drain:
    """ASGI middleware: counts the requests in flight; ends event streams (GET) on request."""

    def __init__(self, app: ASGIApp, *, stream_path: str) -> None:
        self.app = app
        self.stream_path = stream_path
        self.busy = 0
        self._streams: set[anyio.CancelScope] = set()
        self._stopping = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
        elif scope["method"] == "GET" and scope["path"] == self.stream_path:
            await self._stream(scope, receive, send)
        else:
            self.busy += 1
            try:
                await self.app(scope, receive, send)
            finally:
                self.busy -= 1

    async def _stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = finished = False

        async def tracked(message: Message) -> None:
            nonlocal started, finished
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                finished = True
            await send(message)

        with anyio.CancelScope() as scope_of_stream:
            if self._stopping:
                scope_of_stream.cancel()
            self._streams.add(scope_of_stream)
            try:
                await self.app(scope, receive, tracked)
            finally:
                self._streams.discard(scope_of_stream)
        if not scope_of_stream.cancelled_caught:
            return
        if not started:
            await JSONResponse({"error": "vaultmem is stopping"}, status_code=503)(scope, receive, send)
        elif not finished:  # end the chunked response properly: the client sees the stream close
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    def end_streams(self) -> None:
        """End every open event stream now, and any that opens from now on."""
        self._stopping = True
        for stream in list(self._streams):
            stream.cancel()

    async def finish(self, grace: float, give_up: Callable[[], bool]) -> None:
        """End the event streams, then wait up to ``grace`` seconds for the other requests (or
        until ``give_up()``, a second Ctrl-C) to be answered."""
        self.end_streams()
        deadline = time.monotonic() + grace
        while self.busy and not give_up() and time.monotonic() < deadline:
            await anyio.sleep(0.02)
        if self.busy:
            log.warning(
                "stopping with %d request(s) still being answered after %.0f s; their work is "
                "committed, but their answers are lost",
                self.busy,
                grace,
            )
