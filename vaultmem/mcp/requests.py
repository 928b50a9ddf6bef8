"""Requests the SDK refuses in words a client cannot act on, refused here in words it can.

A :class:`RequestShapes` runs in the SDK's server middleware (before it validates a request's
parameters) and answers, as JSON-RPC ``-32602`` (invalid params) with a message that says what to
send:

- ``tools/call`` whose ``arguments`` is not an object: a naive OpenAI-to-MCP bridge passes the
  function call's ``arguments``, a string of JSON, through as it came. Refused, never parsed: a
  string is not what the protocol carries, and guessing would hide the bridge's bug. The SDK said
  only "Invalid request parameters".
- ``tools/call`` without a ``name`` (or one that is not text): the same bare message before.
- ``prompts/get`` of a prompt the server does not have: the SDK answered error code 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

#: How much of a refused value a message repeats.
MAX_SHOWN = 60


class RequestShapes:
    """Server middleware refusing the requests above with a message that names the fix."""

    def __init__(self, server: MCPServer[Any]) -> None:
        self.server = server

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is not None and ctx.method == "tools/call":
            await self._check_call(ctx.params)
        elif ctx.request_id is not None and ctx.method == "prompts/get":
            await self._check_prompt(ctx.params)
        return await call_next(ctx)

    async def _check_call(self, params: Any) -> None:
        if not isinstance(params, Mapping):
            raise _invalid(f"tools/call needs params, an object {{name, arguments}}, not {_shown(params)}")
        name = params.get("name")
        if not isinstance(name, str) or not name:
            tools = ", ".join(t.name for t in await self.server.list_tools())
            given = "has no name" if name is None else f"has name {_shown(name)}"
            raise _invalid(
                f"tools/call {given}: send params.name, the tool to call, as text (one of {tools})"
            )
        arguments = params.get("arguments")
        if isinstance(arguments, str):
            raise _invalid(
                f"tools/call {name}: params.arguments must be a JSON object of the tool's parameters, not "
                f"a string ({_shown(arguments)}); send the object itself, e.g. "
                '"arguments": {"query": "..."}, not "arguments": "{\\"query\\": \\"...\\"}" (a bridge '
                "from OpenAI function calls must parse their arguments before passing them on)"
            )
        if arguments is not None and not isinstance(arguments, Mapping):
            raise _invalid(
                f"tools/call {name}: params.arguments must be a JSON object of the tool's parameters "
                f"(or left out), not {_shown(arguments)}"
            )

    async def _check_prompt(self, params: Any) -> None:
        name = params.get("name") if isinstance(params, Mapping) else None
        known = [p.name for p in await self.server.list_prompts()]
        if isinstance(name, str) and name in known:
            return
        offered = f"the prompts are {', '.join(known)}" if known else "this server has no prompts"
        asked = f"no prompt named {_shown(name)}" if name is not None else "params.name is missing"
        raise _invalid(f"prompts/get: {asked}: {offered} (see prompts/list)")


def _invalid(message: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=message)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"
