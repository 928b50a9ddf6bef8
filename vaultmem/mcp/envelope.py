"""The response envelope and the wire envelope of the graph tools, and how thoughts are shaped.

Response envelope: ``{items, meta}`` for a collection, ``{item, meta}`` for one object, where
``meta`` always carries ``action``, ``scope``, ``counts`` (``total``, ``returned``,
``filtered_out`` plus the action's own), ``degraded`` and ``warnings``, and ``reason`` /
``preview`` only when they apply.

Wire envelope: every graph tool declares the output ``{result: <payload>}``. Success puts the
payload in ``structuredContent.result`` and its JSON in ``content[0].text``. A failure with a
status code (400 bad request, 404 not found, 409 conflict, 429 daily cap, 503 transient) is
``isError: true`` with the message as text and ``structuredContent.result.error =
{message, statusCode, retryable}`` (``retryable`` only for 503); any other failure keeps the plain
``{content, isError}`` shape.

A client may check a failure's structured content against the tool's output schema too (the
TypeScript SDK does, and refuses the whole answer on a mismatch), so a tool whose own result has
no ``result`` key publishes a schema that also admits the failure (:func:`admitting_failure`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_types import CallToolResult, TextContent

from vaultmem.errors import CapReached, Conflict, GitError, IndexError_, InvalidInput, NotFound, VaultmemError
from vaultmem.limits import THOUGHT_COLUMNS
from vaultmem.memory import Answer, Json, Payload, Thought, WithColumns

#: The compact form of a thought (the graph document's five keys).
COMPACT_FIELDS = ("id", "content", "status", "tags", "project")
_STATUS_CODES: tuple[tuple[type[VaultmemError], int], ...] = (
    (Conflict, 409),
    (NotFound, 404),
    (InvalidInput, 400),
    (CapReached, 429),
    (IndexError_, 503),
    (GitError, 503),
)


# -- the wire ---------------------------------------------------------------------------------------
def success(payload: dict[str, Any]) -> CallToolResult:
    return raw_text(json.dumps(payload, ensure_ascii=False), payload)


def status_code(exc: BaseException) -> int | None:
    for cls, code in _STATUS_CODES:
        if isinstance(exc, cls):
            return code
    return None


def failure(exc: VaultmemError) -> CallToolResult:
    """An ``isError`` result; classified failures mirror ``{message, statusCode, retryable}``."""
    message = str(exc)
    content: list[Any] = [TextContent(type="text", text=message)]
    code = status_code(exc)
    if code is None:
        return CallToolResult(content=content, is_error=True)
    error = {"message": message, "statusCode": code, "retryable": code == 503 or exc.retryable}
    return CallToolResult(content=content, structured_content={"result": {"error": error}}, is_error=True)


#: The structured content of a classified failure, as an output schema's ``result`` property.
FAILURE_RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Only in a failure (isError: true): what went wrong, classified.",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "message": {"type": "string"},
                "statusCode": {"type": "integer"},
                "retryable": {"type": "boolean"},
            },
            "required": ["message", "statusCode", "retryable"],
        }
    },
    "required": ["error"],
}


def admitting_failure(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` widened to admit :func:`failure`'s ``{result: {error}}`` beside the tool's own
    result: its properties gain ``result``, and its required keys become one of two sets (its own,
    or ``result``). A schema that already takes ``result`` as an object is returned as it is."""
    properties = dict(schema.get("properties") or {})
    if properties.get("result", {}).get("type") == "object" and set(schema.get("required", [])) <= {"result"}:
        return schema
    if "anyOf" in schema or "oneOf" in schema or "result" in properties:
        raise ValueError(f"an output schema of this shape cannot admit the failure envelope: {schema}")
    widened = {k: v for k, v in schema.items() if k != "required"}
    widened["properties"] = {**properties, "result": FAILURE_RESULT_SCHEMA}
    widened["anyOf"] = [{"required": list(schema.get("required", []))}, {"required": ["result"]}]
    return widened


def raw_text(text: str, payload: dict[str, Any]) -> CallToolResult:
    """A raw-text answer: ``content[0].text`` is ``text`` verbatim, the payload is structured."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content={"result": payload}
    )


# -- shaping ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Shaping:
    """The output controls of a read: ``compact``, ``fields`` (which win) and ``include_url_links``."""

    compact: bool = False
    fields: tuple[str, ...] | None = None
    include_url_links: bool = False


#: Every column of every thought (the write actions' answers).
FULL = Shaping()


def shape(thought: Thought, shaping: Shaping) -> dict[str, Any]:
    """The thought as a caller asked for it. ``url_links`` is attached after the field selection,
    so ``fields: ["id"]`` with ``include_url_links: true`` answers ``{id, url_links}``."""
    columns = thought.columns()
    if shaping.fields is not None:
        out = {f: columns[f] for f in shaping.fields if f in columns}
    elif shaping.compact:
        out = {f: columns[f] for f in COMPACT_FIELDS}
    else:
        out = dict(columns)
    if shaping.include_url_links:
        out["url_links"] = [{"text": t, "url": u, "label": label} for t, u, label in thought.url_links]
    return out


def render(value: Payload, shaping: Shaping) -> Any:
    """Shape every thought inside ``value`` with one rule, however deeply it is nested."""
    if isinstance(value, Thought):
        return shape(value, shaping)
    if isinstance(value, WithColumns):
        return {**shape(value.thought, shaping), **render(value.extra, shaping)}
    if isinstance(value, Mapping):
        return {k: render(v, shaping) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [render(v, shaping) for v in value]
    return value


def envelope(answer: Answer, shaping: Shaping = FULL) -> dict[str, Any]:
    scope = answer.scope
    meta: dict[str, Any] = {
        "action": answer.action,
        "scope": render(scope.payload, shaping),
        "counts": dict(answer.counts),
        "degraded": bool(answer.degraded),
        "warnings": [*scope.warnings, *answer.warnings],
    }
    if answer.reason is not None:
        meta["reason"] = answer.reason
    if answer.preview is not None:
        meta["preview"] = render(answer.preview, shaping)
    if answer.collection:
        return {"items": render(answer.items, shaping), **render(answer.beside, shaping), "meta": meta}
    return {"item": render(answer.item, shaping), "meta": meta}


def shaping_for(
    compact: bool | None,
    fields: Sequence[str] | None,
    include_url_links: bool | None,
    *,
    compact_default: bool,
) -> Shaping:
    # The known columns asked for, each once: shaping a page of thoughts then costs the same
    # however long (or repetitive) the list a caller sent.
    wanted = tuple(f for f in dict.fromkeys(fields) if f in THOUGHT_COLUMNS) if fields is not None else None
    return Shaping(
        compact=compact_default if compact is None else bool(compact),
        fields=wanted,
        include_url_links=bool(include_url_links),
    )


# -- retired inputs ---------------------------------------------------------------------------------
def reject_retired(given: Mapping[str, Json], replacements: Mapping[str, str | None]) -> None:
    """Refuse a retired argument with the migration message naming what replaced it."""
    for name, replacement in replacements.items():
        if given.get(name) is not None:
            if replacement is None:
                raise InvalidInput(
                    f"{name} was removed and has no replacement; remove the field from the request"
                )
            raise InvalidInput(f"{name} was removed; use {replacement}")
