"""What each tool does to the world, as MCP tool annotations: the hints a host reads to decide
which calls to run unasked and which to confirm with the person.

One row per tool. A tool with several actions carries the most cautious truth over its actions (a
tool one of whose actions deletes is destructive); ``docs/tools.md`` ("Tool annotations") gives
each row's reason, and ``tests/test_tool_annotations.py`` lists the tools through an MCP client and
checks the served hints against that table. No tool reaches beyond the vault and its state
directory (nothing is fetched, nothing is sent), so none is open-world.
"""

from mcp.types import ToolAnnotations

__all__ = ["TOOL_ANNOTATIONS"]


def _hints(*, read_only: bool, destructive: bool = False, idempotent: bool = False) -> ToolAnnotations:
    # The protocol gives destructive and idempotent meaning only for a tool that writes; a read-only
    # tool states them as they are (it destroys nothing, and a repeat changes nothing).
    return ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=destructive and not read_only,
        idempotent_hint=idempotent or read_only,
        open_world_hint=False,
    )


TOOL_ANNOTATIONS: dict[str, ToolAnnotations] = {
    "memory_search": _hints(read_only=True),
    "memory_append": _hints(read_only=False),
    "memory_capture": _hints(read_only=False, destructive=True),
    "memory_forget": _hints(read_only=False, destructive=True, idempotent=True),
    "memory_recall": _hints(read_only=False),
    "memory_store": _hints(read_only=False, destructive=True),
    "memory_supersede": _hints(read_only=False, destructive=True),
    "memory_manage": _hints(read_only=False, destructive=True),
    "memory_reflect": _hints(read_only=False, destructive=True),
    "memory_status": _hints(read_only=True),
    "memory_primers": _hints(read_only=False, destructive=True, idempotent=True),
    "memory_guide": _hints(read_only=True),
    "edge_review": _hints(read_only=False, destructive=True),
    "retention_review": _hints(read_only=False, destructive=True),
    "memory_crystallize": _hints(read_only=False),
}
