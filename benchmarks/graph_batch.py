"""Time ``memory_store`` batches: ``bulk_create`` of 1000 thoughts and ``link_batch`` of 1000 edges.

Each is one action through the real write path (atomic durable writes, the catalog, one git commit,
the index told before the call returns). Reported per run: the call's wall time (what the agent
waits for), the time until the index has applied the batch (what the next search may wait for), and
the commits the action made (must be 1). The graph tools read the in-memory edge graph, which is
current when the call returns.

    .venv/bin/python benchmarks/graph_batch.py [--n 1000] [--runs 3] [--fake-embedder] [--no-fsync]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import parts, uncapped_vault

from vaultmem.config import Settings
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.memory import Memory


def commits(root: Path) -> int:
    out = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=root, capture_output=True, text=True)
    return int(out.stdout.strip())


def one_run(n: int, fake: bool, durable: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = uncapped_vault(Path(tmp))
        settings = Settings.resolve(root, durable=durable)
        runtime = Memory(settings, embedder=FakeEmbedder() if fake else None)
        try:
            runtime.reconcile()
            runtime.flush()
            before = commits(root)
            rows = [{"content": f"Benchmark thought {i}: caching policy note number {i}."} for i in range(n)]
            start = time.perf_counter()
            created = runtime.bulk_create(rows)
            bulk_call = time.perf_counter() - start
            parts(runtime).index.wait_for_writes()
            bulk_indexed = time.perf_counter() - start
            runtime.flush()
            bulk_commits = commits(root) - before
            ids = [item["thought"].id for item in created.items]  # type: ignore[index, union-attr]
            assert created.counts["created"] == n, created.counts

            links = [{"source": ids[i], "target": ids[(i + 1) % n], "type": "supports"} for i in range(n)]
            before = commits(root)
            start = time.perf_counter()
            linked = runtime.link_batch(links)
            link_call = time.perf_counter() - start
            parts(runtime).index.wait_for_writes()
            link_indexed = time.perf_counter() - start
            runtime.flush()
            link_commits = commits(root) - before
            assert linked.counts["linked"] == n, linked.counts
            assert len(parts(runtime).graph.outgoing(ids[0])) == 1
        finally:
            runtime.close()
    return {
        "bulk_create_call_s": round(bulk_call, 3),
        "bulk_create_indexed_s": round(bulk_indexed, 3),
        "bulk_create_commits": bulk_commits,
        "link_batch_call_s": round(link_call, 3),
        "link_batch_indexed_s": round(link_indexed, 3),
        "link_batch_commits": link_commits,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--fake-embedder", action="store_true", help="skip the ONNX model (isolates the write path)"
    )
    parser.add_argument("--no-fsync", action="store_true")
    args = parser.parse_args()
    runs = [one_run(args.n, args.fake_embedder, not args.no_fsync) for _ in range(args.runs)]
    summary = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print(
        json.dumps(
            {
                "n": args.n,
                "runs": runs,
                "median": summary,
                "cores": os.cpu_count(),
                "embedder": "fake" if args.fake_embedder else "all-MiniLM-L6-v2 int8 (ONNX)",
                "durable": not args.no_fsync,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
