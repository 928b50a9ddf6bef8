"""Running the daemon (``vaultmem serve``) and the stdio server (``vaultmem mcp``).

Start: bind the loopback socket first (a port in use fails at once), open the vault and its index,
reconcile the index with the vault (catching what changed while nothing ran), start the watcher
and the sync rounds (when the repository has a git remote: after writes and every
``sync_interval`` seconds, docs/sync.md), then answer requests. Stop (SIGINT, SIGTERM, or
:meth:`Daemon.stop`): stop accepting, end the open event streams, let the requests being answered
finish for up to ``shutdown_grace`` seconds (``drain.py``), stop the sync rounds (one merging
finishes) and the watcher (committing pending hand edits), flush the commit queue. Every
acknowledged write is in git when the process exits, and every call that finished was answered.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Generator
from pathlib import Path
from types import FrameType

import anyio
import uvicorn

from vaultmem.config import Settings
from vaultmem.errors import InvalidInput, VaultError
from vaultmem.mcp.tools import build_mcp_server
from vaultmem.memory import Embedder, Memory, Progress
from vaultmem.server.app import DEFAULT_MAX_BODY, MCP_PATH, build_app, check_loopback
from vaultmem.server.batches import batch_lines
from vaultmem.server.drain import Drain, keep_answer_streams_at_stop
from vaultmem.server.protocol import deadline_protocol
from vaultmem.server.surrogates import replace_lone_surrogates
from vaultmem.server.token import TokenFile, ensure_token, token_path

log = logging.getLogger(__name__)
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7821
#: Seconds uvicorn's own stop waits for connections, after the drain (``shutdown_grace``).
GRACEFUL_SECONDS = 5


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0 picks a free one)."""
    check_loopback(host)
    address = "127.0.0.1" if host == "localhost" else host.strip("[]")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    # IPPROTO_TCP, not the default 0: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on
    # sockets whose protocol says TCP, and accepted connections inherit it. With Nagle on, every
    # response written in two parts on a kept-alive connection waited for the client's delayed ACK:
    # +40 ms on every MCP call (44 ms for a tool that answers in 2 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
    except OSError as exc:
        sock.close()
        raise VaultError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; is another vaultmem daemon "
            "running? Stop it, or choose another port with --port"
        ) from exc
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


class _Server(uvicorn.Server):
    """uvicorn, minus re-raising the stop signal after shutdown.

    uvicorn re-raises SIGINT/SIGTERM once it has stopped, which would kill the process before the
    vault is closed (watcher stopped, commits flushed). Here a signal only asks it to stop.
    ``on_ready`` runs once it answers requests, with the stop signals already handled.
    """

    on_ready: Callable[[], None] | None = None
    #: Runs once it listens, before ``on_ready``: the start behind the server begins then, so that
    #: building the app and uvicorn's own start do not share the interpreter with it.
    listening: Callable[[], None] | None = None
    drain: Drain | None = None
    grace: float = 0.0

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Stop accepting, end event streams, let answers go out; then uvicorn's own stop."""
        if self.drain is not None:
            for server in self.servers:
                server.close()
            for connection in list(self.server_state.connections):
                connection.shutdown()  # idle ones close; busy ones close after their answer
            await self.drain.finish(self.grace, give_up=lambda: self.force_exit)
        await super().shutdown(sockets)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self.listening is not None:
            self.listening()
        if self.started and self.on_ready is not None:
            self.on_ready()

    def _on_signal(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True  # a second Ctrl-C stops waiting for open requests
        self.should_exit = True


class Daemon:
    """One vault served over streamable-HTTP MCP on a loopback address."""

    def __init__(
        self,
        settings: Settings,
        *,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        embedder: Embedder | None = None,
        token_file: Path | None = None,
        max_body: int = DEFAULT_MAX_BODY,
    ) -> None:
        check_loopback(host)
        self.settings = settings
        self.host = host
        self.requested_port = port
        self.embedder = embedder
        self.token_file = token_file or token_path(settings.vault)
        self.max_body = max_body
        self.port = port
        self.memory: Memory | None = None
        self._sock: socket.socket | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._start: _Start | None = None  # the start running behind the server (Memory.start)

    @property
    def url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}{MCP_PATH}"

    def token(self) -> str:
        token, _ = ensure_token(self.token_file)
        return token

    def open(self, progress: Progress | None = None) -> None:
        """Bind, open the vault and index, reconcile, start watching; ready to serve."""
        try:
            protocol = deadline_protocol(
                self.settings.request_header_timeout, self.settings.request_body_timeout
            )
        except ValueError as exc:
            raise InvalidInput(
                f"request_header_timeout and request_body_timeout (vaultmem.yaml) must be positive "
                f"numbers of seconds, not {self.settings.request_header_timeout!r} and "
                f"{self.settings.request_body_timeout!r}"
            ) from exc
        self._sock = bind_socket(self.host, self.requested_port)
        self.port = int(self._sock.getsockname()[1])
        try:
            ensure_token(self.token_file)
            memory = Memory(self.settings, embedder=self.embedder, watch=True, search_first=True)
            self.memory = memory
            if memory.scanned:  # the index has nothing to answer before the scan: start, then serve
                memory.start(progress)  # the reconcile, the watcher, the sync with the git remote
            else:  # a restart from the snapshot: searches are answered while the vault is scanned
                self._start = _Start(memory, failed=self._start_failed, begin=False)
            app = build_app(
                memory,
                host=self.host,
                port=self.port,
                tokens=TokenFile(self.token_file),
                max_body=self.max_body,
                start=self._start,
            )
        except BaseException:
            self.close()
            raise
        drain = Drain(app, stream_path=MCP_PATH)
        keep_answer_streams_at_stop()
        config = uvicorn.Config(
            drain,
            log_level="warning",
            access_log=False,  # a request line could carry a mistaken ?token=...; log none
            http=protocol,  # a deadline on reading each request (headers, then body)
            lifespan="on",
            ws="none",
            timeout_graceful_shutdown=GRACEFUL_SECONDS,
        )
        self._server = _Server(config)
        self._server.drain = drain
        self._server.grace = self.settings.shutdown_grace
        self._server.listening = None if self._start is None else self._start.begin

    def serve_forever(self, on_ready: Callable[[], None] | None = None) -> None:
        """Serve in this thread until SIGINT/SIGTERM (or :meth:`stop`), then close cleanly.

        ``on_ready`` is called once requests are answered and a stop signal would be handled
        (a supervisor's SIGTERM right after the banner used to kill the process outright).
        """
        if self._server is None:
            self.open()
        assert self._server is not None and self._sock is not None
        self._server.on_ready = on_ready
        start = self._start
        try:
            self._server.run(sockets=[self._sock])
        finally:
            self.close()
        if start is not None and start.error is not None:
            raise start.error  # the start behind the server failed, which stopped it

    def start(self, timeout: float = 30.0) -> None:
        """Serve on a background thread (tests, benchmarks); returns once requests are answered."""
        if self._server is None:
            self.open()
        assert self._server is not None and self._sock is not None
        server, sock = self._server, self._sock
        self._thread = threading.Thread(
            target=lambda: server.run(sockets=[sock]), name="vaultmem-http", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise VaultError(f"the daemon did not start within {timeout:.0f}s")
            time.sleep(0.005)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop serving (after in-flight requests) and close the vault."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self.close()

    def _start_failed(self) -> None:
        if self._server is not None:
            self._server.should_exit = True

    def close(self) -> None:
        """Stop the watcher, flush commits, release the socket. Safe to call twice."""
        start, self._start = self._start, None
        if start is not None:
            start.stop()
        memory, self.memory = self.memory, None
        if memory is not None:
            memory.close()
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    def __enter__(self) -> Daemon:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _StdinRelay:
    """Standard input, relayed through a socket pair so that a stop signal can end it with EOF.

    The stdio transport reads stdin on a worker thread, and a thread blocked in ``read`` cannot be
    interrupted: on SIGTERM the server would hang until the host closed the pipe. So descriptor 0
    is pointed at the relay's reading end while the host's pipe is read by a pump thread; the
    reading end gets a clean EOF when :meth:`end` shuts the writing end (without closing it, so
    no descriptor is recycled under the pump thread), and the server then stops as if the host
    had hung up. :meth:`close` points descriptor 0 back at the host's pipe.

    The pump passes on whole lines (one JSON-RPC message each): a line with half an emoji escaped
    in it with U+FFFD in its place (``surrogates.py``), a batch as a line per message
    (``batches.py``). The SDK's reader dropped both without an answer.
    """

    def __init__(self) -> None:
        self._reader, self._writer = socket.socketpair()
        self._stdin = sys.stdin.fileno()
        self._source = os.dup(self._stdin)  # the host's pipe, read by the pump
        os.dup2(self._reader.fileno(), self._stdin)  # the transport reads the relay
        self._pump_thread = threading.Thread(target=self._pump, name="vaultmem-stdin", daemon=True)
        self._pump_thread.start()

    def _pump(self) -> None:
        started: list[bytes] = []  # the line being read, in the pieces it arrived in
        try:
            while chunk := os.read(self._source, 65536):
                *lines, rest = chunk.split(b"\n")
                if lines:
                    lines[0] = b"".join([*started, lines[0]])
                    started.clear()
                    self._writer.sendall(b"".join(m + b"\n" for line in lines for m in _as_read(line)))
                started.append(rest)
            self._writer.sendall(b"\n".join(_as_read(b"".join(started))))
        except (OSError, ValueError):
            pass  # stdin closed, or the relay already ended
        finally:
            self.end()

    def end(self) -> None:
        with contextlib.suppress(OSError):
            self._writer.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.dup2(self._source, self._stdin)


class _Start:
    """A server's start on a thread of its own (:meth:`Memory.start`): the scan a ``search_first``
    open left, the reconcile (what changed while nothing ran, every note on a vault's first start),
    then the watcher. ``done`` is set when it has ended; a start that raised keeps its error in
    ``error`` and calls ``failed`` (which ends the server). :meth:`stop` (the server stops first)
    ends a start that waits for another process's write lock at once, and is no error."""

    def __init__(self, memory: Memory, *, failed: Callable[[], None], begin: bool = True) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.stopping = threading.Event()
        self._memory = memory
        self._failed = failed
        self.thread = threading.Thread(target=self._run, name="vaultmem-start")
        if begin:
            self.begin()

    def begin(self) -> None:
        if self.thread.ident is None:
            self.thread.start()

    def stop(self) -> None:
        """The server has stopped: end the start (a wait for the write lock at once), then return."""
        self.stopping.set()
        if self.thread.ident is not None:
            self.thread.join()  # the index and the watcher are not closed under it

    def _run(self) -> None:
        try:
            self._memory.start(stop=self.stopping)
        except BaseException as exc:  # raised again by run_stdio once the server has ended
            if self.stopping.is_set():  # asked to stop while it waited: the stop, not a failure
                log.info("the start ended with the server: %s", exc)
            else:
                self.error = exc
                self._failed()
        finally:
            self.done.set()


def _as_read(line: bytes) -> list[bytes]:
    """A line from the host as the lines the SDK can read (see :class:`_StdinRelay`)."""
    return batch_lines(replace_lone_surrogates(line))


def run_stdio(
    settings: Settings, *, embedder: Embedder | None = None, on_ready: Callable[[], None] | None = None
) -> None:
    """Serve the same tools over stdin/stdout until the host closes stdin or a stop signal arrives.

    Either way the session ends normally: in-flight calls finish, then the watcher stops and the
    commit queue is flushed before the process exits.

    The start's reconcile runs beside the protocol (:class:`_Start`), so the host's ``initialize``
    is answered at once: a host gives it 60 s, and the first start of a vault of a few thousand notes
    embeds them all for longer (the host then called the server failed). Tool calls wait for it.
    """
    # The stdio server never syncs on its own (one per agent session): the daemon does.
    memory = Memory(
        dataclasses.replace(settings, sync_interval=0, sync_debounce=0),
        embedder=embedder,
        watch=True,
        search_first=True,
    )
    start: _Start | None = None
    try:
        server = build_mcp_server(memory)
        relay = _StdinRelay()
        start = _Start(memory, failed=relay.end)
        server.start = start
        if on_ready is not None:
            on_ready()

        async def main() -> None:
            async with anyio.create_task_group() as group:

                async def stop_on_signal() -> None:
                    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                        async for _ in signals:
                            relay.end()
                            return

                group.start_soon(stop_on_signal)
                await server.run_stdio_async()
                group.cancel_scope.cancel()

        try:
            anyio.run(main)
        finally:
            relay.close()
        if start.error is not None:
            raise start.error
    finally:
        if start is not None:
            start.stop()
        memory.close()
