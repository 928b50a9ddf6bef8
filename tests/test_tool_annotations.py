"""Every tool a host lists carries the four MCP annotations, as docs/tools.md states them (issue 16,
item 6): the hints hosts use to decide which calls to confirm with the person."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
from mcp_harness import REPO, mcp_client, running_daemon

HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def documented_annotations() -> dict[str, dict[str, bool]]:
    """The "Tool annotations" table of docs/tools.md: ``{tool: {hint: value}}``."""
    text = (REPO / "docs" / "tools.md").read_text(encoding="utf-8")
    section = text.split("## Tool annotations", 1)[1].split("\n## ", 1)[0]
    table: dict[str, dict[str, bool]] = {}
    for line in section.splitlines():
        row = re.match(
            r"^\| `(\w+)` \| (true|false) \| (true|false) \| (true|false) \| (true|false) \|", line
        )
        if row:
            table[row.group(1)] = {hint: row.group(i + 2) == "true" for i, hint in enumerate(HINTS)}
    return table


async def listed_annotations(url: str, token: str) -> dict[str, dict[str, object]]:
    async with mcp_client(url, token) as client:
        listed = await client.list_tools()
    return {
        tool.name: tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}
        for tool in listed.tools
    }


def test_every_listed_tool_carries_the_four_annotations_docs_tools_md_gives_it(
    vault: Path, tmp_path: Path
) -> None:
    with running_daemon(vault, tmp_path / "token") as daemon:
        served = anyio.run(listed_annotations, daemon.url, daemon.token())
    documented = documented_annotations()
    assert set(documented) == set(served)  # every tool, and only the served ones, in the table
    missing = {name: [h for h in HINTS if h not in hints] for name, hints in served.items()}
    assert all(not gaps for gaps in missing.values()), missing
    assert {name: {h: hints[h] for h in HINTS} for name, hints in served.items()} == documented


def test_the_annotations_say_what_the_contract_says_of_the_tools_that_read_and_delete() -> None:
    """The table itself against the contract's sentences: memory_search and memory_status never
    write ("Read the system's state; never writes"), memory_forget is "idempotent" and deletes, and
    no memory tool's world is open (the protocol's own example: "that of a memory tool is not")."""
    table = documented_annotations()
    assert table["memory_search"]["readOnlyHint"] and table["memory_status"]["readOnlyHint"]
    assert table["memory_forget"] == {
        "readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False,
    }  # fmt: skip
    for deleting in (
        "memory_store",
        "memory_supersede",
        "memory_manage",
        "retention_review",
        "memory_primers",
    ):
        assert table[deleting]["destructiveHint"], deleting
    assert not any(row["openWorldHint"] for row in table.values())
