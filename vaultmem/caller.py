"""Who is asking: the agent behind an MCP call, or the person at the CLI.

An adapter says who the caller is for the length of one call (:func:`acting_as`); the layers below
read it where a write is attributed (the commit's author, the note's ``source``) or grouped (the
notes one session wrote). A call nobody attributed is the daemon's own work (:data:`INTERNAL`).
Like the settings and the errors, this module imports nothing of vaultmem's, so every layer may
read it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["INTERNAL", "Caller", "acting_as", "current"]


@dataclass(frozen=True)
class Caller:
    """One caller. ``agent`` is the name it is known by (an MCP token's name, the OS user at the
    CLI); ``client`` what the MCP client says it is (``name/version``, self-declared, a detail);
    ``session`` the MCP session the call came in on; ``transport`` ``mcp``, ``cli`` or ``internal``."""

    agent: str
    client: str | None = None
    session: str | None = None
    transport: str = "mcp"


#: The daemon's own work (a start-up commit, a sweep, a watcher's commit of hand edits).
INTERNAL = Caller("vaultmem", transport="internal")

_current: ContextVar[Caller] = ContextVar("vaultmem_caller", default=INTERNAL)


def current() -> Caller:
    """The caller of the call running on this thread or task (:data:`INTERNAL` when none was set)."""
    return _current.get()


@contextmanager
def acting_as(caller: Caller) -> Iterator[Caller]:
    """Attribute everything done inside the block to ``caller`` (threads started with the
    context copied, as ``anyio.to_thread`` does, see it too)."""
    token = _current.set(caller)
    try:
        yield caller
    finally:
        _current.reset(token)
