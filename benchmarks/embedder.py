"""The embedding model alone: the packaged model against another export, side by side.

    .venv/bin/python benchmarks/embedder.py                      # the packaged model
    .venv/bin/python benchmarks/embedder.py --against DIR        # and DIR (model.onnx + tokenizer.json)

Each model runs in a fresh process (so RSS is its own): RSS added by loading it and embedding one
query, a query's latency (p50 / p95 of 200 questions-like texts embedded one at a time), and
throughput on 300 short texts (8-30 words) and 64 long ones (200 words, past the model's 256 word
pieces) at the model's default batch size and at 1, 8 and 32. With ``--against``, the cosine of
the two models' vectors for the same texts. Texts are made from a fixed word list and seed.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, pct

PROSE = (
    "the design record says staging cluster moves to new region because latency mattered for users "
    "in europe and the team agreed after a long review of costs which drug reduces risk of stroke in "
    "patients what did caroline research about adoption agencies last week when do deploys happen"
)
WORDS = PROSE.split()


def texts() -> tuple[list[str], list[str], list[str]]:
    rng = random.Random(2178)
    queries = [" ".join(rng.choices(WORDS, k=rng.randint(4, 14))) for _ in range(200)]
    short = [" ".join(rng.choices(WORDS, k=rng.randint(8, 30))) for _ in range(300)]
    long = [" ".join(rng.choices(WORDS, k=200)) for _ in range(64)]
    return queries, short, long


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(model_dir: str | None, vectors_out: str | None) -> dict[str, object]:
    """In this process: load the model, time it, optionally save the vectors of ``texts()``."""
    import numpy as np

    from vaultmem.index.embedder import OnnxEmbedder, import_onnxruntime

    import_onnxruntime()
    before = rss_mib()
    folder = Path(model_dir) if model_dir else None
    started = time.perf_counter()
    embedder = OnnxEmbedder(folder)
    embedder.embed(["a first query"])
    out: dict[str, object] = {
        "model": embedder.model_id,
        "load_s": round(time.perf_counter() - started, 3),
        "rss_added_mib": round(rss_mib() - before, 1),
    }
    queries, short, long = texts()
    times = []
    for q in queries:
        t = time.perf_counter()
        embedder.embed([q])
        times.append((time.perf_counter() - t) * 1000)
    out["query_ms"] = {"p50": round(pct(times, 50), 2), "p95": round(pct(times, 95), 2)}
    for batch in (None, 1, 8, 32):
        e = embedder if batch is None else OnnxEmbedder(folder, batch_size=batch)
        e.embed(["warm"])
        t = time.perf_counter()
        e.embed(short)
        s = time.perf_counter() - t
        t = time.perf_counter()
        e.embed(long)
        lg = time.perf_counter() - t
        out[f"batch {batch or 'default'}"] = {
            "short_per_s": round(len(short) / s),
            "long_per_s": round(len(long) / lg, 1),
        }
    if vectors_out:
        np.save(vectors_out, embedder.embed(queries[:50] + short[:50] + long[:20]))
    return out


def run(model_dir: str | None, vectors_out: str) -> dict[str, object]:
    args = [sys.executable, __file__, "--child", model_dir or "-", vectors_out]
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        model = None if sys.argv[2] == "-" else sys.argv[2]
        print(json.dumps(measure(model, sys.argv[3])))
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--against", help="another export's folder (model.onnx + tokenizer.json)")
    args = parser.parse_args()
    import tempfile

    import numpy as np

    print(f"# {machine()}; load average {Path('/proc/loadavg').read_text().split()[:3]}")
    with tempfile.TemporaryDirectory(prefix="vaultmem-embedder-") as tmp:
        results = {"packaged": run(None, f"{tmp}/a.npy")}
        if args.against:
            results["against"] = run(args.against, f"{tmp}/b.npy")
            a, b = np.load(f"{tmp}/a.npy"), np.load(f"{tmp}/b.npy")
            cos = (a * b).sum(axis=1)
            results["cosine"] = {
                "min": round(float(cos.min()), 4),
                "p50": round(float(statistics.median(cos.tolist())), 4),
            }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
