"""Where a search's time goes on long notes (issue 15): a breakdown on an index the protocol built.

    .venv/bin/python benchmarks/retrieval.py --only scifact --keep /tmp/kept --skip-extras
    .venv/bin/python benchmarks/search_time.py /tmp/kept/scifact

Opens the kept vault's index in this process (as the daemon left it: rows the full-text index
does not cover yet included) and times, per question, each step of ``HybridSearcher.search``:
embedding the query (the real model, distinct texts, no cache), the BM25 leg (full question and
its first three words), the vector scan, fusion and the context step. Then it folds every row
into the full-text index and times the BM25 leg and the whole search again. Last, a daemon is
started on the same vault and ``memory_search`` is timed through MCP next to a no-op tool call
(``memory_guide``), which is the MCP hop alone.
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
        bm25 = timed(
            samples, "BM25 leg, whole question", lambda q=q: s.mirror.lexical(q, f, 50)
        )
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


def bm25_states(index_dir: Path, texts: list[str], project: str) -> None:
    """The BM25 leg alone as the load left the index, after folding its lagging rows, and after
    compacting its fragments too (each state: fragments, FTS segments, unindexed rows)."""
    import lance

    from vaultmem.index.compaction import compact_table, fold_indices, unindexed_rows
    from vaultmem.index.search import run_async

    table_path = index_dir / "lancedb" / "notes.lance"
    where = SearchFilters(project=project).to_sql()

    def probe(label: str, part: list[str]) -> None:
        ds = lance.dataset(str(table_path))
        fts = next(i for i in ds.describe_indices() if i.name == "search_text_idx")
        index = NoteIndex(index_dir, OnnxEmbedder())
        table = index.async_notes_table
        samples: list[float] = []
        for q in part:
            query = table.query().nearest_to_text(q, columns="search_text").where(where)
            started = time.perf_counter()
            run_async(query.select(["id", "_score"]).limit(50).to_arrow())
            samples.append((time.perf_counter() - started) * 1000)
        index.close()
        print(
            f"| {label}: {len(ds.get_fragments())} fragments, {len(fts.segments)} FTS segment(s), "
            f"{unindexed_rows(ds)} rows unindexed | {pct(samples, 50):.2f} | {pct(samples, 95):.2f} |"
        )

    print("| BM25 leg alone | p50 ms | p95 ms |\n|---|---|---|")
    probe("as the load left it", texts[:100])
    fold_indices(table_path, fold=True)
    probe("after folding the lagging rows", texts[100:200])
    compact_table(table_path)
    probe("after compacting too", texts[200:300])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("kept", type=Path, help="a folder --keep left (holds vault/)")
    parser.add_argument("--project", default="scifact")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--states", action="store_true", help="only the BM25 leg before/after fold/compact")
    args = parser.parse_args()
    vault = args.kept / "vault"
    texts = [q.text for q in load_scifact().queries]
    if args.states:
        bm25_states(vault / ".vaultmem" / "index", texts, args.project)
        return
    first, second, third = (
        texts[: args.queries],
        texts[args.queries : 2 * args.queries],
        texts[-args.queries :],
    )

    index = NoteIndex(vault / ".vaultmem" / "index", OnnxEmbedder())
    index.embedder.embed(["warm up"])
    unindexed = index.unindexed_rows()
    print(f"load average {os.getloadavg()[0]:.2f}; notes {index.count()}; FTS rows unindexed {unindexed}\n")
    print(f"| step (as the daemon left the index: {unindexed} rows unindexed) | p50 ms | p95 ms |")
    print("|---|---|---|")
    show(breakdown(index, first, args.project))
    index.maintenance(fold=True)
    print(f"\n| step (after folding every row: {index.unindexed_rows()} unindexed) | p50 ms | p95 ms |")
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
