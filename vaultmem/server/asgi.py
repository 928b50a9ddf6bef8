"""What the server's ASGI middleware share: a request's body read ahead and handed on."""

from __future__ import annotations

from starlette.types import Message, Receive


def replaying(first: Message, receive: Receive) -> Receive:
    """``receive`` that gives ``first`` (a message already read) once, then what ``receive`` gives."""
    pending = [first]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return replay
