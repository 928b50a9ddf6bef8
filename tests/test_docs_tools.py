"""docs/tools.md lists exactly the server's tools, and for each exactly its parameters."""

from __future__ import annotations

import re
from pathlib import Path
from unittest.mock import MagicMock

import anyio
from mcp_harness import REPO

from vaultmem.mcp.tools import build_mcp_server


def documented_tools(text: str) -> dict[str, set[str]]:
    tools: dict[str, set[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        heading = re.match(r"^## (\w+)\s*$", line)
        if heading:
            current = heading.group(1)
            tools[current] = set()
            continue
        row = re.match(r"^\| `(\w+)` \|", line)
        if row and current is not None:
            tools[current].add(row.group(1))
    return tools


def served_tools() -> dict[str, set[str]]:
    runtime = MagicMock()  # listing tools touches nothing but the contract's kinds
    runtime.contract.return_value.kinds = {"fix": "memory/episodic"}
    server = build_mcp_server(runtime)
    tools = anyio.run(server.list_tools)
    return {t.name: set(t.input_schema["properties"]) for t in tools}


def test_docs_tools_md_lists_exactly_the_servers_tools_and_parameters() -> None:
    documented = documented_tools((REPO / "docs" / "tools.md").read_text(encoding="utf-8"))
    assert documented == served_tools()


def test_every_tool_is_named_in_the_readme() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for name in served_tools():
        assert name in readme


def test_the_hosts_guide_covers_each_host() -> None:
    hosts = Path(REPO / "docs" / "hosts.md").read_text(encoding="utf-8")
    for host in ("Claude Desktop", "Claude Code", "Cursor", "Codex", "OpenAI Agents SDK"):
        assert host in hosts
