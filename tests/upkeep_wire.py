"""Helpers for the tests of memory_supersede, memory_manage, memory_reflect, memory_status,
memory_primers and memory_guide: the SDK client talking MCP to the server in-process (no port, no
HTTP), over a Memory with the fake embedder, commits made inline (one action, one commit, at once)
and a clock the test moves."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import FakeClock, git
from graph_wire import Wire, add_project
from mcp import Client
from mcp_types import CallToolResult

from vaultmem.config import Settings
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.mcp.tools import build_mcp_server
from vaultmem.memory import Memory
from vaultmem.notes.frontmatter import parse


class LocalWire(Wire):
    """:class:`graph_wire.Wire`'s checks, calling an in-process server."""

    def __init__(self, runtime: Memory) -> None:  # no daemon: the server runs in this process
        self.runtime = runtime
        self.server = build_mcp_server(runtime)

    def call(self, tool: str, **arguments: Any) -> CallToolResult:
        out: list[CallToolResult] = []

        async def main() -> None:
            async with Client(self.server) as client:
                out.append(await client.call_tool(tool, arguments))

        anyio.run(main)
        return out[0]

    def text(self, tool: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
        """(content[0].text, structuredContent.result) of a raw-text answer."""
        result = self.call(tool, **arguments)
        assert not result.is_error, result.content
        assert result.structured_content is not None and set(result.structured_content) == {"result"}
        return result.content[0].text, dict(result.structured_content["result"])  # type: ignore[union-attr]

    # shortcuts
    def supersede(self, **arguments: Any) -> dict[str, Any]:
        return self.ok("memory_supersede", **arguments)

    def confirm(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """Preview, then confirm with the preview's token; the executed answer."""
        preview = self.ok(tool, **arguments)
        token = preview["meta"]["preview"]["token"]
        return self.ok(tool, **arguments, confirm=True, preview_token=token)


@contextmanager
def local_runtime(vault: Path, clock: FakeClock, **overrides: Any) -> Iterator[Memory]:
    settings = Settings.resolve(vault, durable=False, **overrides)
    runtime = Memory(settings, embedder=FakeEmbedder(), background_commits=False, clock=clock)
    runtime.reconcile()
    try:
        yield runtime
    finally:
        runtime.close()


# -- fixtures the test modules import: a registered project, a runtime on the vault, a wire to it ----------
@pytest.fixture
def probe(vault: Path, tmp_path: Path) -> str:
    """The cwd of the project "Doc Probe" (registered before the runtime opens)."""
    return add_project(vault, "Doc Probe", "doc-probe", tmp_path / "code" / "probe")


@pytest.fixture
def runtime(vault: Path, clock: FakeClock, probe: str) -> Iterator[Memory]:
    with local_runtime(vault, clock) as rt:
        yield rt


@pytest.fixture
def wire(runtime: Memory) -> LocalWire:
    return LocalWire(runtime)


def frontmatter(vault: Path, rel: str) -> dict[str, Any]:
    return parse((vault / rel).read_text(encoding="utf-8")).meta


def log_subjects(vault: Path, count: int) -> list[str]:
    """The subject lines of the last ``count`` commits, newest first."""
    return git(vault, "log", f"-{count}", "--format=%s").splitlines()


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
