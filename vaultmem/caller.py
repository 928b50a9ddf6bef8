"""Who is asking: the agent behind an MCP call, or the person at the CLI.

An adapter says who the caller is for the length of one call (:func:`acting_as`); the layers below
read it where a write is attributed (the commit's author, the note's ``source``) or grouped (the
notes one session wrote). A call nobody attributed is the daemon's own work (:data:`INTERNAL`).
Like the settings and the errors, this module imports nothing of vaultmem's, so every layer may
read it.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["AGENT_DOMAIN", "INTERNAL", "Caller", "acting_as", "current", "record_redactions", "redactions"]


#: The mail domain of an agent's commits when its token names no address.
AGENT_DOMAIN = "vaultmem.local"


@dataclass(frozen=True)
class Caller:
    """One caller. ``agent`` is the name it is known by (an MCP token's name, the OS user at the
    CLI); ``client`` what the MCP client says it is (``name/version``, self-declared, a detail);
    ``session`` the MCP session the call came in on; ``transport`` ``mcp``, ``cli`` or ``internal``;
    ``email`` the address its commits carry when its token sets one (else ``<agent>@vaultmem.local``)."""

    agent: str
    client: str | None = None
    session: str | None = None
    transport: str = "mcp"
    email: str | None = None

    @property
    def address(self) -> str:
        """The mail address of an agent's commits: its token's, else ``<agent>@vaultmem.local``."""
        return self.email or f"{self.agent}@{AGENT_DOMAIN}"


#: The daemon's own work (a start-up commit, a sweep, a watcher's commit of hand edits).
INTERNAL = Caller("vaultmem", transport="internal")

_current: ContextVar[Caller] = ContextVar("vaultmem_caller", default=INTERNAL)
#: What the secret guard redacted during the current call (a fresh list per ``acting_as``).
_redacted: ContextVar[list[dict[str, object]] | None] = ContextVar("vaultmem_redacted", default=None)


def current() -> Caller:
    """The caller of the call running on this thread or task (:data:`INTERNAL` when none was set)."""
    return _current.get()


@contextmanager
def acting_as(caller: Caller) -> Iterator[Caller]:
    """Attribute everything done inside the block to ``caller`` (threads started with the
    context copied, as ``anyio.to_thread`` does, see it too)."""
    token = _current.set(caller)
    found = _redacted.set([])
    try:
        yield caller
    finally:
        _redacted.reset(found)
        _current.reset(token)


def record_redactions(findings: list[dict[str, object]]) -> None:
    """Note what the secret guard replaced by a marker in this call's writes, for its answer."""
    found = _redacted.get()
    if found is not None:
        found.extend(findings)


def redactions() -> list[dict[str, object]]:
    """What the writes of the current call redacted (``[{kind, field, line}]``), oldest first."""
    return list(_redacted.get() or ())


def os_user() -> str:
    """The name of the user running this process (a CLI command's commits carry it)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        return f"uid-{os.getuid()}"
