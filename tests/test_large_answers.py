"""Answers larger than an MCP client's event limit: the daemon answers a tool call as one JSON
body, not as a server-sent event, so a client's cap on event size does not apply.

The MCP SDK's client refuses a server-sent event over 1 MiB ("Server-sent event exceeded the
1048576 byte limit"); a ``bulk_create`` of a few thousand rows answered more than that (each row
carries its thought, and the answer travels twice: as text and as structured content). The graph
document allows ``thoughts[]`` of 1–10000 items with one row per thought in the result."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from conftest import set_cap
from mcp_harness import mcp_client, running_daemon

from vaultmem.vault.init import init_vault

ROWS = 150
#: Each row's text: with its shaped thought twice over, the answer passes 1 MiB at ROWS rows.
FACT = "The greenhouse log for bed {i}: " + "tomatoes, basil and a note on watering. " * 90


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_bulk_create_answer_over_a_mebibyte_reaches_the_client(tmp_path: Path, mode: str) -> None:
    """``legacy`` (a session with its GET stream, as most hosts connect) failed on the code
    before; the modern protocol was already answered as JSON and is kept here as a guard."""
    vault, _ = init_vault(tmp_path / "vault")
    set_cap(vault, 1000)
    thoughts = [{"content": FACT.format(i=i)} for i in range(ROWS)]
    got: dict[str, object] = {}

    with running_daemon(vault, tmp_path / "token") as daemon:

        async def session() -> None:
            async with mcp_client(daemon.url, daemon.token(), mode=mode) as client:  # type: ignore[arg-type]
                result = await client.call_tool(
                    "memory_store", {"action": "bulk_create", "thoughts": thoughts}
                )
                assert not result.is_error, result.content
                assert result.structured_content is not None
                text = result.content[0].text  # type: ignore[union-attr]
                got["bytes"] = len(text.encode()) * 2
                got["payload"] = result.structured_content["result"]
                assert json.loads(text) == got["payload"]

        anyio.run(session)

    assert got["bytes"] > 1024 * 1024  # the case: more than the SDK client's event limit
    payload = got["payload"]
    assert isinstance(payload, dict)
    assert payload["meta"]["counts"]["created"] == ROWS
    rows = payload["items"]
    assert [row["index"] for row in rows] == list(range(ROWS))
    assert rows[7]["thought"]["content"] == FACT.format(i=7)
    on_disk = [p for p in vault.rglob("*.md") if "greenhouse log" in p.read_text(encoding="utf-8")]
    assert len(on_disk) == ROWS
