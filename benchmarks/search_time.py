"""Where a search's time goes on long notes (issue 15): a breakdown on an index the protocol built.

    .venv/bin/python benchmarks/retrieval.py --only scifact --keep /tmp/kept --skip-extras
    .venv/bin/python benchmarks/search_time.py /tmp/kept/scifact

Opens the kept vault's index in this process and times, per question, each step of
``HybridSearcher.search``: embedding the query (the real model, distinct texts, no cache), the
lexical leg (full question and its first three words), the vector scan, fusion and the context
step, then the whole search on other questions. Last, a daemon is started on the same vault and
``memory_search`` is timed through MCP next to a no-op tool call (``memory_guide``), which is the
MCP hop alone.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (str(ROOT), str(HERE), str(ROOT / "tests")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import anyio  # noqa: E402
from _bench_data import load_scifact  # noqa: E402
from _common import pct  # noqa: E402

from vaultmem.index.embedder import OnnxEmbedder  # noqa: E402
from vaultmem.index.fusion import fuse, propagate_context  # noqa: E402
from vaultmem.index.note_index import NoteIndex  # noqa: E402
from vaultmem.index.records import SearchFilters  # noqa: E402


def timed(samples: dict[str, list[float]], key: str, fn: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    value = fn()
    samples.setdefault(key, []).append((time.perf_counter() - started) * 1000)
    return value


def show(samples: dict[str, list[float]]) -> None:
    for key, values in samples.items():
        print(f"| {key} | {pct(values, 50):.2f} | {pct(values, 95):.2f} |")


def breakdown(index: NoteIndex, queries: list[str], project: str) -> dict[str, list[float]]:
    s = index.searcher
    f = SearchFilters(project=project)
    samples: dict[str, list[float]] = {}
    for q in queries:
        vec = timed(samples, "embed the query (real model)", lambda q=q: index.embedder.embed([q])[0])
        bm25 = timed(samples, "BM25 leg, whole question", lambda q=q: s.mirror.lexical(q, f, 50))
        short = " ".join(q.split()[:3])
        timed(samples, "BM25 leg, first 3 words", lambda t=short: s.mirror.lexical(t, f, 50))
        vector = timed(samples, "vector scan (mirror)", lambda v=vec: index.mirror.nearest(v, f, 50))

        def fuse_and_context(bm25: Any = bm25, vector: Any = vector, vec: Any = vec) -> Any:
            fused = fuse(bm25, vector, s.fusion)
            extra = s._context_neighbours(fused, f, vec)
            if extra:
                fused = fuse(bm25, vector, s.fusion, extra_similarities=extra)
            adjacency = {x.id: index.timeline.neighbours(x.id, s.fusion.context_window_s) for x in fused}
            return propagate_context(fused, adjacency, s.fusion.context_weight)

        timed(samples, "fusion + context step", fuse_and_context)
        timed(samples, "whole search, in process", lambda q=q: s.search(q, f, 10))
    return samples


async def mcp_times(url: str, token: str, queries: list[str], project: str) -> dict[str, list[float]]:
    from mcp_harness import mcp_client

    samples: dict[str, list[float]] = {}
    async with mcp_client(url, token) as client:
        await client.call_tool("memory_guide", {})
        for q in queries:
            started = time.perf_counter()
            await client.call_tool("memory_guide", {})
            samples.setdefault("MCP round trip of a no-op tool (memory_guide)", []).append(
                (time.perf_counter() - started) * 1000
            )
            started = time.perf_counter()
            args = {"query": q, "scope": "project", "project": project, "limit": 10}
            await client.call_tool("memory_search", args)
            samples.setdefault("memory_search through MCP", []).append((time.perf_counter() - started) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("kept", type=Path, help="a folder --keep left (holds vault/)")
    parser.add_argument("--project", default="scifact")
    parser.add_argument("--queries", type=int, default=150)
    args = parser.parse_args()
    vault = args.kept / "vault"
    texts = [q.text for q in load_scifact().queries]
    first, second, third = (
        texts[: args.queries],
        texts[args.queries : 2 * args.queries],
        texts[-args.queries :],
    )

    index = NoteIndex(vault / ".vaultmem" / "index", OnnxEmbedder())
    index.embedder.embed(["warm up"])
    print(f"load average {os.getloadavg()[0]:.2f}; notes {index.count()}\n")
    print("| step (as the daemon left the index) | p50 ms | p95 ms |")
    print("|---|---|---|")
    show(breakdown(index, first, args.project))
    print("\n| step (other questions) | p50 ms | p95 ms |")
    print("|---|---|---|")
    show(breakdown(index, second, args.project))
    index.close()

    from retrieval import Serve

    daemon = Serve(vault, args.kept / "config")
    try:
        samples = anyio.run(mcp_times, daemon.url, daemon.token, third, args.project)
    finally:
        daemon.stop()
    print(f"\n| through the daemon (load {os.getloadavg()[0]:.2f}) | p50 ms | p95 ms |")
    print("|---|---|---|")
    show(samples)


if __name__ == "__main__":
    main()
