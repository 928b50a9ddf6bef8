"""A person's map of content: one note linking to hundreds (found by the helper of rows 64-67,
2026-12-03: a note of 5,000 links gave `get` and `context` answers of ~2 MB, every neighbour with
its whole text).

Through `vaultmem serve` and an MCP client: recall `get include_edges`, `context` and `chain` carry a
page of neighbours each way (`limit`, default 50; `offset`), say in `meta.counts` how many there are,
and in `meta.warnings` where the next page starts. Every file of the person's stays byte-identical.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from _support import ServeProcess, persons_vault
from mcp_harness import mcp_client

TOPICS = 130
FILES = {
    **{
        f"Topics/Topic {i:03d}.md": f"Topic {i:03d}: on subject {i:03d}, {'more words ' * 30}\n".encode()
        for i in range(TOPICS)
    },
    "Map of content.md": (
        "The map of every topic, mocmarker.\n\n"
        + "\n".join(f"- [[Topic {i:03d}]]" for i in range(TOPICS))
        + "\n"
    ).encode(),
    "Reading list.md": b"What to read next: [[Map of content]].\n",
}


def test_a_map_of_content_answers_its_neighbours_a_page_at_a_time(tmp_path: Path) -> None:
    vault = persons_vault(tmp_path, FILES)
    server = ServeProcess(vault, tmp_path / "config")
    try:
        asyncio.run(_session(server))
    finally:
        server.stop()
    assert all((vault / rel).read_bytes() == data for rel, data in FILES.items())


async def _session(server: ServeProcess) -> None:
    async with mcp_client(server.url, server.token) as client:

        async def answer(tool: str, **arguments: Any) -> tuple[bool, dict[str, Any]]:
            result = await client.call_tool(tool, arguments)
            got = dict(result.structured_content or {})
            return bool(result.is_error), got.get("result", got)

        async def call(**arguments: Any) -> dict[str, Any]:
            failed, got = await answer("memory_recall", **arguments)
            assert not failed, got
            return got

        (hit,) = (await answer("memory_search", query="mocmarker", limit=1))[1]["results"]
        moc = hit["id"]

        first = await call(action="get", thought_id=moc, include_edges=True)
        counts = first["meta"]["counts"]
        assert (counts["upstream_total"], counts["upstream_returned"]) == (TOPICS, 50)
        assert (counts["downstream_total"], counts["downstream_returned"]) == (1, 1)
        assert (
            "upstream: neighbours 1-50 of 130 (limit 50); the next page: offset 50"
            in first["meta"]["warnings"]
        )
        assert not any(w.startswith("downstream") for w in first["meta"]["warnings"])
        assert first["item"]["downstream"][0]["thought"]["content"].startswith("What to read next")
        # the answer is bounded by the page, not by the note's links (~38 kB; all 131 would be ~95 kB)
        assert len(json.dumps(first)) < 45_000

        async def page(offset: int, **more: Any) -> list[str]:
            got = await call(action="get", thought_id=moc, include_edges=True, offset=offset, **more)
            return [n["thought"]["content"][:9] for n in got["item"]["upstream"]]

        pages = [await page(0), await page(50), await page(100)]
        assert [len(p) for p in pages] == [50, 50, 30]
        every = [name for p in pages for name in p]
        assert sorted(every) == [f"Topic {i:03d}" for i in range(TOPICS)]  # each once, none lost
        assert await page(0) == pages[0]  # the same order on every call
        assert await page(125, limit=10) == pages[2][25:]
        assert await page(500) == []
        past = await call(action="get", thought_id=moc, include_edges=True, offset=500)
        assert "upstream: no neighbours from offset 500; there are 130" in past["meta"]["warnings"]

        context = await call(action="context", thought_id=moc, limit=5)
        assert context["meta"]["counts"]["upstream_total"] == TOPICS
        assert len(context["item"]["chain"]["upstream"]) == 5
        assert all(n["degree"] == 1 for n in context["item"]["chain"]["upstream"])
        by_query = await call(action="context", query="mocmarker", limit=5)
        assert by_query["item"]["thought"]["id"] == moc
        assert len(by_query["item"]["chain"]["upstream"]) == 5
        chain = await call(action="chain", thought_id=moc, offset=120)
        assert [n["thought"]["content"][:9] for n in chain["item"]["upstream"]] == pages[2][20:]

        plain = await call(action="get", thought_id=moc, limit=1000)  # no neighbours asked for: no page
        assert plain["item"]["id"] == moc and "upstream" not in plain["item"]
        for bad in ({"limit": 0}, {"limit": 501}, {"offset": -1}):
            failed, got = await answer(
                "memory_recall", action="get", thought_id=moc, include_edges=True, **bad
            )
            assert failed
            message = json.dumps(got)
            assert "limit must be a whole number from 1 to 500" in message or "offset must be" in message, got
