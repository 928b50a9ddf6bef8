"""The response envelope and the wire envelope of the graph tools.

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
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp_types import CallToolResult, TextContent
from typing_extensions import TypedDict

from vaultmem.errors import CapReached, Conflict, GitError, IndexError_, InvalidInput, NotFound, VaultmemError
from vaultmem.graph.answer import Answer, WithColumns
from vaultmem.graph.thoughts import THOUGHT_COLUMNS, Shaping, Thought, shape
from vaultmem.runtime import Runtime

NO_CWD_WARNING = "no cwd — the answer spans every project"
RESOLVE_HINT = "(check it with memory_manage action=resolve)"
_STATUS_CODES: tuple[tuple[type[VaultmemError], int], ...] = (
    (Conflict, 409),
    (NotFound, 404),
    (InvalidInput, 400),
    (CapReached, 429),
    (IndexError_, 503),
    (GitError, 503),
)


class ToolOutput(TypedDict):
    """What every graph tool declares as its output: the payload under ``result``."""

    result: dict[str, Any]


# -- the wire ---------------------------------------------------------------------------------------
def success(payload: dict[str, Any]) -> CallToolResult:
    text = json.dumps(payload, ensure_ascii=False)
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content={"result": payload}
    )


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


# -- scope --------------------------------------------------------------------------------------------
@dataclass
class Scope:
    """What ``cwd`` resolved to: ``payload`` is ``meta.scope``; ``project`` the name to filter on."""

    payload: dict[str, Any] | None = None
    project: str | None = None
    warnings: list[str] = field(default_factory=list)
    given: bool = False


def resolve_scope(runtime: Runtime, cwd: str | None, *, reader: bool) -> Scope:
    """Resolve ``cwd`` to a project. A reader without one answers across every project and says so;
    a path that names no registered project answers globally (``global: true``) with a warning."""
    if cwd is None or not cwd.strip():
        return Scope(warnings=[NO_CWD_WARNING] if reader else [])
    service = runtime.service
    project = service.projects.for_cwd(service.contract(), cwd)
    if project is None:
        tail = "the answer spans every project" if reader else "the thought is stored without a project"
        return Scope(
            payload={"project": None, "project_name": None, "global": True},
            warnings=[f'cwd "{cwd}" matches no known project {RESOLVE_HINT} — {tail}'],
            given=True,
        )
    return Scope(
        payload={"project": project.id, "project_name": project.name, "global": False},
        project=project.name,
        given=True,
    )


# -- shaping ------------------------------------------------------------------------------------------
def render(value: Any, shaping: Shaping) -> Any:
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


def envelope(answer: Answer, scope: Scope, shaping: Shaping) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "action": answer.action,
        "scope": scope.payload,
        "counts": dict(answer.counts),
        "degraded": bool(answer.degraded),
        "warnings": [*scope.warnings, *answer.warnings],
    }
    if answer.reason is not None:
        meta["reason"] = answer.reason
    if answer.preview is not None:
        meta["preview"] = answer.preview
    if answer.collection:
        return {"items": render(answer.items, shaping), **render(answer.beside, shaping), "meta": meta}
    return {"item": render(answer.item, shaping), "meta": meta}


def shaping_for(
    compact: bool | None, fields: list[str] | None, include_url_links: bool | None, *, compact_default: bool
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
def reject_retired(given: Mapping[str, object], replacements: Mapping[str, str | None]) -> None:
    """Refuse a retired argument with the migration message naming what replaced it."""
    for name, replacement in replacements.items():
        if given.get(name) is not None:
            if replacement is None:
                raise InvalidInput(
                    f"{name} was removed and has no replacement; remove the field from the request"
                )
            raise InvalidInput(f"{name} was removed; use {replacement}")
