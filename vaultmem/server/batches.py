"""JSON-RPC batches (MCP protocol 2025-03-26), taken apart into the messages they carry.

Protocol 2025-03-26 let a client send several messages as one JSON array; 2025-06-18 dropped
batches, and the MCP SDK reads one message at a time. Over HTTP it refused a batch with a 400
carrying pydantic's validation dump; over stdio it dropped the line and answered none of its
requests, so the host waited for its own timeout. Here each message of a batch is handled as if it
had been sent alone, in the batch's order: over stdio each becomes a line of its own (answered one
per line, matched by id as always, :func:`batch_lines`); over HTTP each goes through the server as a
POST of its own with the batch's headers, and their answers come back together as one JSON array,
as protocol 2025-03-26 has it (:class:`Unbatched`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from vaultmem.server.asgi import replaying

#: JSON whitespace, then the bracket that opens a batch (matched in place: a body is up to 1 MiB).
_OPENS_ARRAY = re.compile(rb"[ \t\r\n]*\[")
_EMPTY_BATCH = {"code": -32600, "message": "the batch is empty: send at least one JSON-RPC message"}


def _batch(text: bytes) -> list[Any] | None:
    """The messages of ``text`` if it is a JSON array (a batch), else None."""
    if not _OPENS_ARRAY.match(text):
        return None
    try:
        messages = json.loads(text)
    except (ValueError, RecursionError):  # not JSON: the SDK's parser answers it
        return None
    return messages if isinstance(messages, list) else None


def batch_lines(line: bytes) -> list[bytes]:
    """One stdio line as the lines the SDK reads: a batch's messages each on its own (without the
    newline), any other line as it is."""
    messages = _batch(line)
    if not messages:
        return [line]
    return [json.dumps(m, ensure_ascii=False).encode("utf-8") for m in messages]


class Unbatched:
    """ASGI middleware: a POST to ``path`` whose body is a batch is answered message by message.

    It expects the body in one ``http.request`` message (behind :class:`~vaultmem.server.app.WholeBody`).
    """

    def __init__(self, app: ASGIApp, *, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        first = await receive()
        messages = _batch(first.get("body", b""))
        if messages is None:
            await self.app(scope, replaying(first, receive), send)
            return
        if not messages:
            await _answer(send, 400, [], {"jsonrpc": "2.0", "id": None, "error": _EMPTY_BATCH})
            return
        answers = [
            await self._one(scope, receive, m) if isinstance(m, dict) else _not_a_message(i, m)
            for i, m in enumerate(messages)
        ]
        if not any(isinstance(m, dict) for m in messages):  # JSON-RPC: an error for each of them
            await _answer(send, 400, [], [reply for _, _, reply in answers])
            return
        statuses = {status for status, _, _ in answers}
        if len(statuses) == 1 and min(statuses) >= 400:
            # Refused alike (no such session, a header the SDK refuses): none of them ran.
            status, headers, body = answers[0]
            await _answer(send, status, headers, body)
            return
        replies = [reply for _, _, reply in answers if reply is not None]
        kept = [h for h in answers[0][1] if h[0].lower() == b"mcp-session-id"]
        await _answer(send, 200 if replies else 202, kept, replies or None)

    async def _one(self, scope: Scope, receive: Receive, message: Any) -> tuple[int, list[Any], Any]:
        """``message`` sent alone: the status, headers and JSON body it is answered with."""
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
        alone: Scope = {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
        start: list[Message] = []
        chunks: list[bytes] = []

        async def capture(sent: Message) -> None:
            if sent["type"] == "http.response.start":
                start.append(sent)
            elif sent["type"] == "http.response.body":
                chunks.append(sent.get("body", b""))

        whole: Message = {"type": "http.request", "body": body, "more_body": False}
        await self.app(alone, replaying(whole, receive), capture)
        status = int(start[0]["status"]) if start else 500
        raw_headers = list(start[0].get("headers", [])) if start else []
        text = b"".join(chunks)
        is_json = Headers(raw=raw_headers).get("content-type", "").startswith("application/json")
        try:
            reply = json.loads(text) if text and is_json else None
        except ValueError:
            reply = None
        return status, raw_headers, reply


def _not_a_message(at: int, member: Any) -> tuple[int, list[Any], Any]:
    """The answer to a batch member that is no JSON object (``[1, {...}]``), in the batch's answer
    array as JSON-RPC has it (an invalid request, id null), not sent to the server: alone, the SDK
    answered such a member with pydantic's whole validation dump."""
    shown = json.dumps(member, ensure_ascii=False)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    message = f"batch member {at} is not a JSON-RPC message (a JSON object with jsonrpc, method): got {shown}"
    return 400, [], {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}


async def _answer(send: Send, status: int, headers: list[Any], body: Any) -> None:
    data = b"" if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
    kept = [(k, v) for k, v in headers if k.lower() not in (b"content-length", b"content-type")]
    kept += [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": kept})
    await send({"type": "http.response.body", "body": data})
