"""The MCP server every vaultmem tool runs in, and how it answers arguments that do not fit a tool.

The SDK checks a call's arguments against the tool's input schema (pydantic) before the tool runs,
and on a mismatch answers ``isError`` with its own text ("Error executing tool memory_recall: 1
validation error for memory_recallArguments ...") and no status code. :class:`ToolServer` answers
such a call in the wire envelope instead, as a classified failure ``{message, statusCode: 400,
retryable: false}`` whose message names each argument at fault and the values it allows, read from
the same schema the client was given. A vaultmem error raised inside any tool reaches the caller
the same way (:func:`vaultmem.mcp.envelope.failure`), without the SDK's prefix. Every tool's
published output schema admits that failure (:meth:`ToolServer.list_tools`), so a client that checks
an error's structured content against the schema, as the TypeScript SDK does, reads the message.
Anything else (a crash) keeps the SDK's handling: logged here, a generic message there.

A text argument is taken as the text it was sent as (:class:`_TextKept`): the SDK decodes a string
that holds JSON for every parameter not declared plain ``str``, which helps a host that sends a list
as its JSON text, but it also turned an optional text's ``'{"port": 6543}'`` into an object (refused
as "must be text") and ``"null"`` into no value at all.

Every call runs as its caller (:func:`_caller`): the agent its bearer token names, the client's
self-declared ``name/version`` and the MCP session. When the secret guard replaced a secret in
the call's writes (``secrets: {mode: redact}``), the answer says so: ``redacted: [{kind, field,
line}]`` in a memory tool's result, ``meta.redacted`` and a warning in a graph tool's envelope.

A call its client cancels (``notifications/cancelled``) before the tool began never begins (the
SDK cancels it before the worker thread starts). Once begun, it runs to the end: a write is not
stopped halfway (the spec lets a receiver ignore a cancel for a request that cannot be cancelled),
and the SDK answers the client ``-32800`` "Request cancelled" all the same. So that the write's
outcome is not hidden, the daemon logs a warning naming the tool, the request, the caller and what
was written (:meth:`ToolServer.call_tool`): a retry without an idempotency key writes it again.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
import secrets
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from types import UnionType
from typing import Any, Protocol, Union, get_args, get_origin

import anyio
import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp_types import CallToolResult, Icon, InputRequiredResult, TextContent, Tool, ToolAnnotations
from pydantic import BaseModel, ValidationError

from vaultmem.caller import Caller, acting_as, current, redactions
from vaultmem.errors import IndexError_, InvalidInput, VaultError, VaultmemError
from vaultmem.mcp.envelope import admitting_failure, failure
from vaultmem.memory import START_WAIT, STILL_STARTING

#: Tools called while a server's start runs go straight to the facade, which answers them as it
#: can (``Memory.search``: from the index, when every hit shown is its file as it is, or it waits).
ANSWERED_WHILE_STARTING = frozenset({"memory_search"})
START_FAILED = "vaultmem's start failed, so nothing ran and the server is stopping; start it again"
#: How much of a rejected value a message repeats (a caller's 20,000-item list is not echoed back).
MAX_SHOWN = 60
log = logging.getLogger(__name__)
#: What the tool functions of the call running here returned, filled in by the worker thread (so a
#: call whose client cancelled it can say what it did: module docstring).
_ran: ContextVar[list[Any] | None] = ContextVar("vaultmem_tool_ran", default=None)
#: Where the HTTP server's bearer check leaves the agent a token names: ``(name, email)``.
AGENT_SCOPE_KEY = "vaultmem.agent"
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
#: The most of a client's self-declared ``name/version`` kept (it is recorded in commit messages).
MAX_CLIENT_CHARS = 100


class Starting(Protocol):
    """A server's start running beside the protocol (``server/daemon.py``'s ``_Start``)."""

    #: Set once it has ended, well or not.
    done: threading.Event
    #: What it raised (the server then stops), or None.
    error: BaseException | None


class ToolServer(MCPServer[Any]):
    """``MCPServer`` whose refusals are classified failures in the wire envelope."""

    #: Set while a server's start runs beside the protocol: a call (but those of
    #: :data:`ANSWERED_WHILE_STARTING`) waits up to :data:`START_WAIT` for it, then is refused as
    #: retryable (nothing ran); refused too when the start failed (the vault was never scanned).
    start: Starting | None = None

    def add_tool(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> None:
        """Register ``fn`` as the SDK does, its text arguments kept as sent (module docstring)."""
        super().add_tool(fn, name, title, description, annotations, icons, meta, structured_output)
        tool = self._tool_manager.get_tool(name or fn.__name__)
        assert tool is not None
        kept = tool.fn_metadata
        tool.fn_metadata = _TextKept(
            arg_model=kept.arg_model,
            output_schema=kept.output_schema,
            output_model=kept.output_model,
            wrap_output=kept.wrap_output,
        )

    async def list_tools(self) -> list[Tool]:
        """The tools, each output schema admitting the classified failure (module docstring)."""
        return [
            tool.model_copy(update={"output_schema": admitting_failure(tool.output_schema)})
            if tool.output_schema is not None
            else tool
            for tool in await super().list_tools()
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        start = None if name in ANSWERED_WHILE_STARTING else self.start
        if start is not None and not await anyio.to_thread.run_sync(start.done.wait, START_WAIT):
            return failure(IndexError_(STILL_STARTING))
        if start is not None and start.error is not None:  # it stops the server: nothing may run
            return failure(VaultError(f"{START_FAILED}: {start.error}"))
        ran: list[Any] = []
        ran_token = _ran.set(ran)
        try:
            with acting_as(_caller(context)):
                result = await super().call_tool(name, arguments, context)
                # The worker thread is not interrupted: a cancel shows only once it is done.
                if ran and anyio.current_effective_deadline() == -math.inf:
                    _log_landed(name, context, ran)
                redacted = redactions()
            if redacted and isinstance(result, CallToolResult) and not result.is_error:
                return _saying_redacted(result, redacted)
            return result
        except ToolError as exc:
            cause = _origin(exc)
            if isinstance(cause, VaultmemError):  # raised by a tool: its message says the fix
                return failure(cause)
            if isinstance(cause, ValidationError) and not isinstance(exc, UnexpectedToolError):
                schema = next((t.input_schema for t in await self.list_tools() if t.name == name), {})
                return failure(InvalidInput(invalid_arguments(name, cause, schema)))
            raise
        finally:
            _ran.reset(ran_token)


def _log_landed(name: str, context: Context[Any, Any] | None, ran: list[Any]) -> None:
    """A warning that a call its client cancelled ran to the end (module docstring)."""
    try:
        request_id = context.request_context.request_id if context is not None else None
    except ValueError:  # no request behind the context (a call made in process)
        request_id = None
    caller = current()
    written = [str(i) for r in ran if isinstance(i := _written_id(r), str)]
    what = f": {', '.join(written)}" if written else ""
    log.warning(
        "%s (request %s, %s, session %s) was cancelled after it had begun (by its client, or as the "
        "daemon stopped): it ran to the end and what it did is kept%s. The client was answered "
        "'Request cancelled', so a retry without an idempotency key does it again",
        name, request_id, caller.agent, (caller.session or "-")[:8], what,
    )  # fmt: skip


def _written_id(result: Any) -> Any:
    """The id a tool's result names (a memory tool's ``id``, a graph tool's ``item.id``), if any."""
    if isinstance(result, CallToolResult):
        payload = (result.structured_content or {}).get("result")
        item = payload.get("item") if isinstance(payload, dict) else None
        return item.get("id") if isinstance(item, dict) else None
    return result.get("id") if isinstance(result, Mapping) else getattr(result, "id", None)


class _TextKept(FuncMetadata):
    """A tool's argument handling, but a string sent for a text parameter stays that string."""

    async def call_fn(
        self,
        fn: Callable[..., Any | Awaitable[Any]],
        fn_is_async: bool,
        arguments: dict[str, Any],
        arguments_to_pass_directly: dict[str, Any] | None = None,
    ) -> Any:
        """The SDK's call, the tool's result also kept where a cancelled call can read it."""
        ran = _ran.get()
        if fn_is_async or ran is None:
            return await super().call_fn(fn, fn_is_async, arguments, arguments_to_pass_directly)

        def recorded(**kwargs: Any) -> Any:
            result = fn(**kwargs)
            ran.append(result)
            return result

        return await super().call_fn(recorded, False, arguments, arguments_to_pass_directly)

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        parsed = super().pre_parse_json(data)
        text = _text_parameters(self.arg_model)
        return {k: data[k] if k in text and isinstance(data[k], str) else v for k, v in parsed.items()}


@functools.cache
def _text_parameters(arg_model: type[BaseModel]) -> frozenset[str]:
    """The names (and aliases) of the parameters declared ``str | None``: text or nothing."""
    names: set[str] = set()
    for name, field in arg_model.model_fields.items():
        if get_origin(field.annotation) in (Union, UnionType) and set(get_args(field.annotation)) == {
            str,
            type(None),
        }:
            names |= {name, field.alias} if field.alias else {name}
    return frozenset(names)


def _caller(context: Context[Any, Any] | None) -> Caller:
    """Who makes this call: the agent its bearer token names (HTTP), with the client's declared
    ``name/version`` and the MCP session. Over stdio there is no token: the process is the host's
    own, and the agent is the name its client declares (``mcp`` when it declares none). A client
    of the stateless protocol (2026-07-28) opens no session; its HTTP connection stands in for one
    (a client's calls in a burst share a kept-alive connection), so the notes it writes in one go
    still read as one writer's sequence (the ranking's episodes)."""
    try:
        request_context = context.request_context if context is not None else None
    except ValueError:  # no request behind the context (a call made in process)
        request_context = None
    request = request_context.request if request_context is not None else None
    params = request_context.session.client_params if request_context is not None else None
    info = params.client_info if params is not None else None
    client = _printable(f"{info.name}/{info.version}") if info is not None else None
    headers = getattr(request, "headers", None)
    session = headers.get("mcp-session-id") if headers else None
    peer = getattr(request, "client", None)
    if session is None and peer is not None:  # a stateless client: its connection stands in
        session = f"connection {_BOOT} {peer.host}:{peer.port}"
    agent = getattr(request, "scope", {}).get(AGENT_SCOPE_KEY)
    if agent is not None:
        return Caller(agent[0], client=client, session=session, email=agent[1])
    declared = _UNSAFE_NAME.sub("-", info.name).strip("-.")[:64] if info is not None else ""
    return Caller(declared if request is None and declared else "mcp", client=client, session=session)


def _printable(text: str) -> str:
    """A self-declared value made safe to record: one line, no control characters, bounded."""
    return "".join(c if c.isprintable() else " " for c in text)[:MAX_CLIENT_CHARS]


def _saying_redacted(result: CallToolResult, redacted: list[dict[str, object]]) -> CallToolResult:
    """``result`` with what the secret guard redacted: beside a memory tool's fields, in a graph
    tool's ``meta`` (with a warning, which every client shows)."""
    structured = dict(result.structured_content or {})
    payload = structured.get("result")
    if isinstance(payload, dict) and isinstance(payload.get("meta"), dict):
        meta = dict(payload["meta"])
        kinds = ", ".join(dict.fromkeys(str(r["kind"]) for r in redacted))
        warning = f"redacted {len(redacted)} secret(s) ({kinds}): stored with a marker in their place"
        meta.update(redacted=redacted, warnings=[*meta.get("warnings", []), warning])
        payload = {**payload, "meta": meta}
        structured["result"] = payload
        text = json.dumps(payload, ensure_ascii=False)
    else:
        structured["redacted"] = redacted
        text = json.dumps(structured, ensure_ascii=False)
    content = [TextContent(type="text", text=text), *result.content[1:]]
    return result.model_copy(update={"structured_content": structured, "content": content})


#: Tells one run's connections from another's (ports are reused).
_BOOT = secrets.token_hex(8)


def _origin(exc: BaseException) -> BaseException:
    """The first exception in ``exc``'s chain of causes that is not the SDK's ``ToolError`` wrapper."""
    seen: set[int] = set()
    while isinstance(exc, ToolError) and exc.__cause__ is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc = exc.__cause__
    return exc


def invalid_arguments(tool: str, error: ValidationError, schema: Mapping[str, Any]) -> str:
    """One sentence per argument at fault, each naming what the argument allows."""
    problems = [_problem(e, schema) for e in error.errors(include_url=False)]
    unique = list(dict.fromkeys(problems))
    return f"{tool} refused its arguments: {'; '.join(unique)}. Nothing ran; fix the call and send it again"


def _problem(error: Mapping[str, Any], schema: Mapping[str, Any]) -> str:
    loc: Sequence[Any] = error.get("loc", ())
    where = _where(loc)
    if error.get("type") == "missing":
        return f"{where} is required"
    allowed = describe(_schema_at(schema, loc))
    shown = _shown(error.get("input"))
    if allowed:
        return f"{where} must be {allowed}, not {shown}"
    return f"{where}: {error.get('msg', 'not a valid value')}, not {shown}"


def _where(loc: Sequence[Any]) -> str:
    if not loc:
        return "the arguments"
    text = str(loc[0])
    for part in loc[1:]:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


def _schema_at(schema: Mapping[str, Any], loc: Sequence[Any]) -> Mapping[str, Any]:
    """The part of a JSON schema that describes the value at ``loc`` (empty when unknown)."""
    node: Mapping[str, Any] = schema
    for part in loc:
        node = _non_null(node)
        if isinstance(part, int):
            items = node.get("items")
            node = items if isinstance(items, Mapping) else {}
        else:
            props = node.get("properties")
            extra = node.get("additionalProperties")
            if isinstance(props, Mapping) and part in props:
                node = props[part]
            elif isinstance(extra, Mapping):
                node = extra
            else:
                return {}
    return node


def _non_null(node: Mapping[str, Any]) -> Mapping[str, Any]:
    """An optional argument's schema without its ``null`` branch (``anyOf: [X, {type: null}]``)."""
    options = node.get("anyOf")
    if isinstance(options, list):
        real = [o for o in options if isinstance(o, Mapping) and o.get("type") != "null"]
        if len(real) == 1:
            return {**{k: v for k, v in node.items() if k != "anyOf"}, **real[0]}
    return node


def describe(node: Mapping[str, Any]) -> str:
    """What a JSON schema allows, in words: ``one of a, b``, ``a whole number from 1 to 100`` ..."""
    node = _non_null(node)
    if "enum" in node:
        return "one of " + ", ".join(str(v) for v in node["enum"])
    if "const" in node:
        return repr(node["const"])
    kind = node.get("type")
    if kind in ("integer", "number"):
        noun = "a whole number" if kind == "integer" else "a number"
        low, high = node.get("minimum"), node.get("maximum")
        if low is not None and high is not None:
            return f"{noun} from {low} to {high}"
        if low is not None:
            return f"{noun}, at least {low}"
        if high is not None:
            return f"{noun}, at most {high}"
        return noun
    if kind == "boolean":
        return "true or false"
    if kind == "string":
        return "text"
    if kind == "array":
        items = node.get("items")
        inner = describe(items) if isinstance(items, Mapping) else ""
        inner = {"an object": "objects", "text": "texts", "true or false": "booleans"}.get(inner, inner)
        return f"a list of {inner}" if inner else "a list"
    if kind == "object":
        return "an object"
    return ""
