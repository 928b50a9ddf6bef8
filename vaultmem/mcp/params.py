"""The parameter declarations the MCP tools share: descriptions, tombstones, the output type, and the
arguments several tools take with the same meaning.

A parameter's description is what a model reads to decide how to call a tool, so each tool words
its own where the meaning differs per action; the aliases here are the ones that mean the same
everywhere they appear.
"""

# No `from __future__ import annotations`: the SDK reads these annotations.
from typing import Annotated, Any, Literal

from mcp_types import CallToolResult
from pydantic import Field
from typing_extensions import TypedDict

from vaultmem.limits import EDGE_TYPES


def describe(text: str) -> Any:
    """A parameter's description, as the model reads it."""
    return Field(description=text)


def tombstone(replacement: str) -> Any:
    """A retired parameter: kept in the advertised schema so the caller is told what replaced it.

    Its schema type is ``null`` (the graph document's "never-valued tombstone"): a strict schema
    converter refuses a property without a type, and a client that validates before sending may
    refuse a value there itself. The tool still takes any value sent, to answer the migration
    message.
    """
    return Field(
        description=f"Retired: {replacement}. Any value is refused with a migration message.",
        json_schema_extra={"type": "null"},
    )


class ToolOutput(TypedDict):
    """What every graph tool declares as its output: the payload under ``result`` (rendered JSON)."""

    result: dict[str, Any]


#: A graph tool's answer: ``{result: <payload>}`` in structured content, its JSON as text.
Output = Annotated[CallToolResult, ToolOutput]
#: Thought statuses a read filters on.
StatusFilter = Literal["draft", "active", "archived", "all"]
EdgeType = Literal[
    "related", "parent", "develops", "replaces", "cluster", "references", "depends_on", "contradicts",
    "supports",
]  # fmt: skip
assert set(EdgeType.__args__) == set(EDGE_TYPES)  # type: ignore[attr-defined]

#: The token of a preview, sent back with ``confirm: true`` (edge_review, memory_supersede).
PreviewToken = Annotated[str | None, describe("With confirm: true: the token the preview returned.")]
#: memory_manage and memory_primers: the delete action's confirmation.
ConfirmDelete = Annotated[bool, describe("delete: false (default) previews; true deletes.")]
DeleteToken = Annotated[str | None, describe("delete with confirm: true: the preview's token.")]
