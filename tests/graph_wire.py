"""Helpers for the graph-tool tests: a synchronous MCP caller for a running daemon, the wire checks,
and the normalisation that compares an answer with the graph document's JSON examples shape for
shape (ids and timestamps aside)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
from conftest import commit_count
from mcp_harness import mcp_client
from mcp_types import CallToolResult

from vaultmem.server.daemon import Daemon

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z")


class Wire:
    """Calls a daemon's tools, one MCP session per call."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon

    def call(self, tool: str, **arguments: Any) -> CallToolResult:
        out: list[CallToolResult] = []

        async def main() -> None:
            async with mcp_client(self.daemon.url, self.daemon.token()) as client:
                out.append(await client.call_tool(tool, arguments))

        anyio.run(main)
        return out[0]

    def ok(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """The payload of a successful call, checked against the wire envelope."""
        result = self.call(tool, **arguments)
        assert not result.is_error, result.content
        assert result.structured_content is not None and set(result.structured_content) == {"result"}
        payload = result.structured_content["result"]
        text = result.content[0].text  # type: ignore[union-attr]
        assert json.loads(text) == payload, "content[0].text must be the JSON of structuredContent.result"
        return dict(payload)

    def error(self, tool: str, **arguments: Any) -> tuple[str, dict[str, Any] | None]:
        """(message, structuredContent.result.error or None) of a failed call."""
        result = self.call(tool, **arguments)
        assert result.is_error, result.structured_content
        text = " ".join(getattr(block, "text", "") for block in result.content)
        if result.structured_content is None:
            return text, None
        return text, dict(result.structured_content["result"]["error"])

    def recall(self, **arguments: Any) -> dict[str, Any]:
        return self.ok("memory_recall", **arguments)

    def store(self, **arguments: Any) -> dict[str, Any]:
        return self.ok("memory_store", **arguments)

    def create(self, content: str, **arguments: Any) -> str:
        return str(self.store(action="create", content=content, **arguments)["item"]["id"])


def normalised(value: Any) -> Any:
    """``value`` with every UUID and timestamp replaced by a placeholder (for shape comparison)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return json.loads(_TIME.sub("<time>", _UUID.sub("<id>", text)))


def flushed_commits(daemon: Daemon) -> int:
    """How many commits the daemon's vault has once its commit queue has drained."""
    runtime = daemon.memory
    assert runtime is not None
    runtime.flush()
    return commit_count(runtime.settings.vault)


def add_project(vault: Path, name: str, slug: str, code_path: Path) -> str:
    """Register a project whose code lives in ``code_path``; return that path (a ``cwd``)."""
    folder = vault / "desk" / "projects" / slug
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "project.yaml").write_text(f"name: {name}\ncode_paths: [{code_path}]\n", encoding="utf-8")
    return str(code_path)
