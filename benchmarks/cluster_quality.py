"""``memory_crystallize action=auto_cluster``: how long it takes on a 10k-note vault, and whether the
clusters it proposes are coherent.

The vault is real text embedded by the shipped model: every LoCoMo dialogue turn (5,882, labelled with
its conversation and session) plus SciFact claims' titles up to ``--n`` notes (labelled ``scifact``),
written with ``bulk_create`` (one commit). Then, for each ``min_similarity`` (a maximum cosine distance):

- the time of an ``auto_cluster`` preview (eligibility from the catalog and edge graph, the vectors
  from the index's in-memory matrix, the blocked pair scan, Union-Find, the group rows), median of
  ``--runs``;
- coherence over every group (``max_clusters`` 500): purity against the conversation label (the share of
  a group's turns from its majority conversation, weighted by size, LoCoMo turns only), the same
  against the session, source purity (LoCoMo vs SciFact), and the baseline purity random groups of the
  same sizes would reach (the shares of the labels); coverage is the share of notes placed in a group.

Finally the time of a confirmed run at the default settings (the cluster notes written, one commit).

    .venv/bin/python benchmarks/cluster_quality.py [--n 10000] [--runs 3] [--distances 0.1,0.15,0.2,0.25,0.3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from _common import machine, parts, uncapped_vault

from vaultmem.config import Settings
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.memory import Memory

BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"


def load_rows(n: int) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Up to ``n`` (thought, labels) pairs: LoCoMo turns first, then SciFact titles."""
    rows: list[dict[str, Any]] = []
    labels: list[dict[str, str]] = []
    for line in (BENCH / "locomo" / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        meta = doc["metadata"]
        rows.append({"content": doc["text"], "title": doc["title"][:200]})
        labels.append(
            {"source": "locomo", "conv": meta["conv"], "session": f"{meta['conv']}:{meta['session']}"}
        )
    for line in (BENCH / "scifact" / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        if len(rows) >= n:
            break
        doc = json.loads(line)
        rows.append({"content": doc["title"]})
        labels.append({"source": "scifact"})
    return rows[:n], labels[:n]


def purity(groups: list[list[str]], labels: dict[str, dict[str, str]], key: str) -> tuple[float, float]:
    """(size-weighted majority share of ``key`` in each group, the same for random groups: sum of p^2
    over label shares is the expected majority-free agreement, so the random baseline is the largest
    label share)."""
    majority = total = 0
    seen: Counter[str] = Counter()
    for group in groups:
        values = [labels[i][key] for i in group if key in labels[i]]
        if not values:
            continue
        counts = Counter(values)
        majority += counts.most_common(1)[0][1]
        total += len(values)
        seen.update(values)
    if not total:
        return float("nan"), float("nan")
    baseline = max(seen.values()) / total
    return majority / total, baseline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--distances", default="0.1,0.15,0.2,0.25,0.3")
    parser.add_argument("--fake-embedder", action="store_true", help="skip the ONNX model (timing only)")
    args = parser.parse_args()
    distances = [float(d) for d in args.distances.split(",")]
    rows, row_labels = load_rows(args.n)
    out: dict[str, Any] = {"notes": len(rows), "machine": machine(), "runs": args.runs}
    with tempfile.TemporaryDirectory() as tmp:
        root = uncapped_vault(Path(tmp))
        runtime = Memory(
            Settings.resolve(root, durable=False), embedder=FakeEmbedder() if args.fake_embedder else None
        )
        try:
            runtime.reconcile()
            start = time.perf_counter()
            created = runtime.bulk_create(rows)
            parts(runtime).index.wait_for_writes()
            out["index_s"] = round(time.perf_counter() - start, 1)
            labels = {
                item["thought"].id: label
                for item, label in zip(created.items, row_labels, strict=True)
                if item["status"] == "created"
            }
            results = []
            for distance in distances:
                times = []
                for _ in range(args.runs):
                    start = time.perf_counter()
                    answer = runtime.auto_cluster(distance, None, 500, False, None)
                    times.append(time.perf_counter() - start)
                groups = [[m["id"] for m in g["members"]] for g in answer.items]
                clustered = sum(len(g) for g in groups)
                conv, conv_base = purity(groups, labels, "conv")
                session, session_base = purity(groups, labels, "session")
                source, source_base = purity(groups, labels, "source")
                results.append(
                    {
                        "min_similarity": distance,
                        "preview_s": round(statistics.median(times), 3),
                        "candidates": answer.counts["candidates"],
                        "clusters": len(groups),
                        "largest": max((len(g) for g in groups), default=0),
                        "coverage": round(clustered / max(1, len(labels)), 3),
                        "purity_conversation": round(conv, 3),
                        "baseline_conversation": round(conv_base, 3),
                        "purity_session": round(session, 3),
                        "baseline_session": round(session_base, 3),
                        "purity_source": round(source, 3),
                        "baseline_source": round(source_base, 3),
                    }
                )
                print(json.dumps(results[-1]), flush=True)
            out["results"] = results
            start = time.perf_counter()
            preview = runtime.auto_cluster(None, None, None, False, None)
            token = preview.preview["token"] if preview.preview else None
            done = runtime.auto_cluster(None, None, None, True, str(token)) if token else preview
            runtime.flush()
            out["confirmed_default"] = {
                "settings": {
                    k.removeprefix("auto_cluster_"): v
                    for k, v in asdict(runtime.settings).items()
                    if k.startswith("auto_cluster_")
                },
                "preview_plus_confirm_s": round(time.perf_counter() - start, 2),
                "clusters_written": len(done.items),
                "members_linked": sum(len(row["members"]) for row in done.items),
            }
            out["load_average"] = os.getloadavg()
        finally:
            runtime.close()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
