"""Scale benchmark: synthetic vaults of 1k, 10k (and 100k) notes through the public runtime.

    .venv/bin/python benchmarks/scale.py                     # 1k and 10k
    .venv/bin/python benchmarks/scale.py --sizes 1000,10000,100000

For each size, in its own process (so peak RSS is per size): write the vault (``synthetic.py``,
one git commit), build the index with ``Memory.reconcile`` (embeddings cached under
``benchmarks/out/embcache`` so only the first run of a size embeds for real), then measure

- hybrid search p50/p95, warm, distinct queries (``Memory.search``, scope ``all`` and one project);
- append latency through the service with the index listening (read your writes);
- a restart with nothing changed (open the runtime + reconcile);
- cold start to first answer in a fresh Python process (imports, model, index, reconcile, search);
- freshness: a hand edit written to a note file until a search finds it, via the real watcher.

Once per run: reindex throughput of a fresh index over a sample vault with the real model, against
the raw embedder's throughput on the same texts. Prints a Markdown table; ``--json`` saves the raw
figures.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

import synthetic  # noqa: E402
from _common import BLOCK_PANDAS, machine, parts, pct  # noqa: E402

OUT = HERE / "out"


def _settings(root: Path) -> Any:
    from vaultmem.config import Settings

    return Settings.resolve(root, commit_quiet_period=1.0)


def _ms(samples: list[float]) -> dict[str, float]:
    return {"p50": round(pct(samples, 50), 2), "p95": round(pct(samples, 95), 2)}


def _peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM: ``ru_maxrss`` would count the parent's peak after a fork)."""
    for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


COLD_START = """
import json, sys, time
{block_pandas}
t0 = time.perf_counter()
sys.path.insert(0, {root!r})
from vaultmem.config import Settings
from vaultmem.memory import Memory
from vaultmem.operations.search import SearchRequest
t1 = time.perf_counter()
rt = Memory(Settings.resolve({vault!r}))
t2 = time.perf_counter()
report = rt.reconcile()
t3 = time.perf_counter()
found = rt.search(SearchRequest({query!r}, limit=10))
t4 = time.perf_counter()
answered = time.time()
rt.close()
print(json.dumps({{"answered_at": answered, "imports": t1 - t0, "open": t2 - t1, "reconcile": t3 - t2,
    "first_search": t4 - t3, "close": time.perf_counter() - t4,
    "changed": len(report.indexed) + len(report.removed), "hits": len(found["results"]),
    "pandas_loaded": "pandas" in sys.modules,
    "rss_mb": int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024}}))
"""


def cold_start(vault: Path, query: str, *, runs: int = 5) -> dict[str, Any]:
    """A fresh interpreter until its first answer (the state directory is warm on disk).

    Timed from just before the process is spawned to the moment the first search has returned
    (a wall-clock stamp the child prints; closing and exiting come after the answer and are
    reported apart). The median of ``runs`` starts, with pandas hidden (the user install) and,
    once, with it importable (as in the dev environment).
    """

    def one(block_pandas: bool) -> dict[str, Any]:
        code = COLD_START.format(
            root=str(ROOT), vault=str(vault), query=query, block_pandas=BLOCK_PANDAS if block_pandas else ""
        )
        spawned = time.time()
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        wall = time.perf_counter() - started
        inner: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        answered = inner.pop("answered_at") - spawned
        return {
            "to_answer_s": round(answered, 3),
            "process_s": round(wall, 3),
            **{k: round(v, 3) if isinstance(v, float) else v for k, v in inner.items()},
        }

    samples = sorted((one(block_pandas=True) for _ in range(runs)), key=lambda r: r["to_answer_s"])
    result = samples[len(samples) // 2]
    result["runs"] = runs
    result["to_answer_all_s"] = [r["to_answer_s"] for r in samples]
    result["with_pandas_to_answer_s"] = one(block_pandas=False)["to_answer_s"]
    return result


def freshness(
    runtime: Any, written: list[synthetic.SyntheticNote], trials: int, missed: list[str]
) -> list[float]:
    """Hand edit (a new word appended to a note's file) until ``memory_search`` finds it."""
    from vaultmem.operations.search import SearchRequest

    samples: list[float] = []
    step = max(1, len(written) // trials)
    for t in range(trials):
        target = written[(t * step + 3) % len(written)]
        word = f"zqfresh{t:04d}x"
        path = runtime.settings.vault / target.rel
        text = path.read_text(encoding="utf-8")
        started = time.perf_counter()
        path.write_text(f"{text.rstrip()} {word}\n", encoding="utf-8")
        while True:
            hits = runtime.search(SearchRequest(word, limit=1))["results"]
            if hits and hits[0]["id"] == target.id:
                samples.append((time.perf_counter() - started) * 1000)
                break
            if time.perf_counter() - started > 10:
                print(f"a hand edit of {target.rel} was not searchable within 10 s", file=sys.stderr)
                missed.append(target.rel)
                break
            time.sleep(0.005)
        time.sleep(0.2)
    return samples


def one_size(size: int, n_queries: int, trials: int) -> dict[str, Any]:
    from retrieval import CachedEmbedder

    from vaultmem.index.embedder import OnnxEmbedder
    from vaultmem.memory import Memory
    from vaultmem.operations.search import SearchRequest

    result: dict[str, Any] = {"notes": size, "load_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix=f"vaultmem-scale-{size}-") as tmp:
        vault = Path(tmp) / "vault"
        started = time.perf_counter()
        written = synthetic.write_vault(vault, size)
        result["generate_s"] = round(time.perf_counter() - started, 1)

        # Build the index (embeddings from the benchmark cache after the first run of a size).
        cached = CachedEmbedder(OnnxEmbedder())
        runtime = Memory(_settings(vault), embedder=cached)
        started = time.perf_counter()
        runtime.reconcile()
        parts(runtime).index.wait_for_writes()
        result["build_s"] = round(time.perf_counter() - started, 1)
        cached.save()
        parts(runtime).index.maintenance()
        runtime.close()
        del cached

        # A restart with nothing changed (the model package is already imported here).
        started = time.perf_counter()
        runtime = Memory(_settings(vault))
        opened = time.perf_counter()
        report = runtime.reconcile()
        result["restart_s"] = {
            "total": round(time.perf_counter() - started, 3),
            "open": round(opened - started, 3),
            "reconcile": round(time.perf_counter() - opened, 3),
            "changed": len(report.indexed) + len(report.removed),
        }

        # Warm hybrid search, distinct queries (no query-vector cache hits).
        texts = synthetic.queries(2 * n_queries + 20)
        project = "proj-001"
        for q in texts[:20]:
            runtime.search(SearchRequest(q, limit=10))
        for label, scope in (
            ("search_all", {}),
            ("search_project", {"scope": "project", "project": project}),
        ):
            samples = []
            offset = 20 if label == "search_all" else 20 + n_queries
            for q in texts[offset : offset + n_queries]:
                t0 = time.perf_counter()
                runtime.search(SearchRequest(q, limit=10, **scope))
                samples.append((time.perf_counter() - t0) * 1000)
            result[label] = _ms(samples)
            result[label]["load"] = round(os.getloadavg()[0], 2)

        # Append through the service with the index listening, then search for it at once.
        samples, visible = [], 0
        for i in range(100):
            body = f"Benchmark append {i}: {synthetic.note(10_000_000 + i).body}"
            t0 = time.perf_counter()
            written_id = runtime.append(body, "reference", title=f"bench append {i}")["id"]
            samples.append((time.perf_counter() - t0) * 1000)
            hits = runtime.search(SearchRequest(f"Benchmark append {i}", limit=20))["results"]
            visible += any(h["id"] == written_id for h in hits)
        result["append"] = {**_ms(samples), "visible_at_once": f"{visible}/100"}
        result["append"]["load"] = round(os.getloadavg()[0], 2)

        # Freshness through the real watcher.
        runtime.start_watching()
        time.sleep(0.5)
        missed: list[str] = []
        try:
            result["freshness"] = _ms(freshness(runtime, written, trials, missed))
        finally:
            runtime.close()
        result["freshness"]["missed"] = len(missed)
        result["freshness"]["load"] = round(os.getloadavg()[0], 2)

        result["cold_start"] = cold_start(vault, texts[-1])
        result["cold_start"]["load"] = round(os.getloadavg()[0], 2)
    result["peak_rss_mb"] = round(_peak_rss_mb(), 0)
    return result


def reindex_throughput(size: int) -> dict[str, Any]:
    """A fresh index over a ``size``-note vault with the real model vs the raw embedder."""
    from vaultmem.index.embedder import OnnxEmbedder
    from vaultmem.memory import Memory

    with tempfile.TemporaryDirectory(prefix="vaultmem-reindex-") as tmp:
        vault = Path(tmp) / "vault"
        written = synthetic.write_vault(vault, size)
        texts = [n.embedded_text for n in written]
        raw = OnnxEmbedder()
        raw.embed(["warm up"])
        started = time.perf_counter()
        raw.embed(texts)
        raw_rate = size / (time.perf_counter() - started)
        runtime = Memory(_settings(vault))
        parts(runtime).index.embedder.embed(["warm up"])
        started = time.perf_counter()
        runtime.reconcile()
        parts(runtime).index.wait_for_writes()
        index_rate = size / (time.perf_counter() - started)
        runtime.close()
        started = time.perf_counter()
        raw.embed(texts)
        raw_rate = (raw_rate + size / (time.perf_counter() - started)) / 2
    return {
        "notes": size,
        "raw_notes_per_s": round(raw_rate, 1),
        "reindex_notes_per_s": round(index_rate, 1),
        "ratio": round(index_rate / raw_rate, 3),
        "load": round(os.getloadavg()[0], 2),
    }


def _child(args: list[str]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"scale.py {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def print_table(results: list[dict[str, Any]], reindex: dict[str, Any] | None) -> None:
    print(f"\nMachine: {machine()}\n")
    header = "| measure | " + " | ".join(f"{r['notes']:,} notes" for r in results) + " |"
    print(header)
    print("|---|" + "---|" * len(results))

    def row(label: str, fmt: Any) -> None:
        print(f"| {label} | " + " | ".join(fmt(r) for r in results) + " |")

    row(
        "hybrid search, scope all: p50 / p95 (ms)",
        lambda r: f"{r['search_all']['p50']} / {r['search_all']['p95']}",
    )
    row(
        "hybrid search, one project: p50 / p95 (ms)",
        lambda r: f"{r['search_project']['p50']} / {r['search_project']['p95']}",
    )
    row(
        "append with index: p50 / p95 (ms); found by the next search",
        lambda r: f"{r['append']['p50']} / {r['append']['p95']}; {r['append']['visible_at_once']}",
    )
    row(
        "freshness, hand edit → found: p50 / p95 (ms); not found in 10 s",
        lambda r: f"{r['freshness']['p50']} / {r['freshness']['p95']}; {r['freshness']['missed']}",
    )
    row("restart, nothing changed (s)", lambda r: f"{r['restart_s']['total']}")
    row(
        "cold start to first answer, new process, median of 5 (s)",
        lambda r: f"{r['cold_start']['to_answer_s']} (runs {r['cold_start']['to_answer_all_s']})",
    )
    row(
        "… of which imports / open / reconcile / first search (s)",
        lambda r: " / ".join(
            str(r["cold_start"][k]) for k in ("imports", "open", "reconcile", "first_search")
        ),
    )
    row(
        "cold start with pandas importable (dev install) (s)",
        lambda r: f"{r['cold_start']['with_pandas_to_answer_s']}",
    )
    row("index build from the vault (s, cached embeddings)", lambda r: f"{r['build_s']}")
    row("peak RSS, benchmark process (MB)", lambda r: f"{r['peak_rss_mb']:.0f}")
    row("peak RSS, cold-start process (MB)", lambda r: f"{r['cold_start']['rss_mb']:.0f}")
    row("load average (1 min) during search", lambda r: f"{r['search_all']['load']}")
    if reindex:
        print(
            f"\nReindex of a fresh {reindex['notes']:,}-note vault with the real model: "
            f"{reindex['reindex_notes_per_s']} notes/s; raw embedder on the same texts "
            f"{reindex['raw_notes_per_s']} notes/s; ratio {reindex['ratio']:.1%} "
            f"(load {reindex['load']})."
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", default="1000,10000", help="comma-separated vault sizes (default 1000,10000)"
    )
    parser.add_argument("--queries", type=int, default=300, help="searches per scope (default 300)")
    parser.add_argument("--freshness", type=int, default=40, help="hand edits timed (default 40)")
    parser.add_argument("--reindex-sample", type=int, default=2000, help="notes in the reindex run (0: skip)")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--reindex-only", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
        print(json.dumps(one_size(args.one, args.queries, args.freshness)))
        return
    if args.reindex_only:
        print(json.dumps(reindex_throughput(args.reindex_only)))
        return
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        started = time.perf_counter()
        results.append(
            _child(["--one", str(size), "--queries", str(args.queries), "--freshness", str(args.freshness)])
        )
        print(f"{size} notes: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    reindex = _child(["--reindex-only", str(args.reindex_sample)]) if args.reindex_sample else None
    print_table(results, reindex)
    if args.json:
        args.json.write_text(
            json.dumps({"machine": machine(), "sizes": results, "reindex": reindex}, indent=1)
        )


if __name__ == "__main__":
    main()
