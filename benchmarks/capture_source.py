"""A capture's cost as the vault grows: ``memory_capture`` through the facade, three kinds.

A capture that names its source (``source_id`` or ``source_url``) and a title first looks for that
source's card, to update it in place, and an idea is compared with every card of the ideas folder
(the 10k vault holds ~250 idea cards, the 100k one ~2,200); both ran inside the write lock. This
times captures on a copy of each prepared vault of ``startup.py`` (built there once; the copy
hard-links the notes, which vaultmem only ever replaces by renames, and git's objects, and leaves
the index out: the facade opens with ``index=False``, so the figure is the write path's own, not
the embedder's).

    .venv/bin/python benchmarks/capture_source.py --sizes 10000,100000
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]

from _common import machine  # noqa: E402
from startup import prepared  # noqa: E402

WORK = HERE / "out" / "capture_source"
_NATO = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
    "uniform", "victor", "whiskey", "xray", "yankee", "zulu",
]  # fmt: skip


def copy_of(size: int) -> Path:
    source = prepared(size)
    target = WORK / str(size) / "vault"
    shutil.rmtree(target.parent, ignore_errors=True)
    target.parent.mkdir(parents=True)
    subprocess.run(["cp", "-al", str(source), str(target)], check=True)
    shutil.rmtree(target / ".vaultmem" / "index", ignore_errors=True)
    git = target / ".git"  # git writes some of its files in place (the reflog, COMMIT_EDITMSG)
    for part in git.iterdir():
        if part.name != "objects":  # objects are never rewritten: they stay linked
            if part.is_dir():
                shutil.rmtree(part)
                shutil.copytree(source / ".git" / part.name, part)
            else:
                part.unlink()
                shutil.copy2(source / ".git" / part.name, part)
    contract = target / "filing.yaml"
    text = contract.read_text(encoding="utf-8").replace("daily_write_cap: 200", "daily_write_cap: 10000000")
    contract.unlink()  # a hard link: write a file of its own
    contract.write_text(text, encoding="utf-8")
    return target


def measure(root: Path, rounds: int) -> dict[str, list[float]]:
    from vaultmem.config import Settings
    from vaultmem.memory import Memory

    memory = Memory(Settings.resolve(root), index=False)
    times: dict[str, list[float]] = {"with a source": [], "without": [], "an idea no card matches": []}
    rng = random.Random(7)
    try:
        for i in range(rounds):
            for kind, spent in times.items():
                source = {"source_id": f"feed-{i % 10}"} if kind == "with a source" else {}
                title = f"Feed item {i % 10}" if source else None
                text = f"Item {i} ({kind}): the quarterly numbers moved again."
                idea = {"kind": "idea"} if kind.startswith("an idea") else {}
                if idea:  # compared with every card of the ideas folder, title and body
                    title = f"{' '.join(rng.sample(_NATO, 3))} {i}"
                    text = f"{' '.join(rng.sample(_NATO, 8))} {i}."
                started = time.perf_counter()
                memory.capture(text, title=title, **source, **idea)  # type: ignore[arg-type]
                spent.append((time.perf_counter() - started) * 1000)
    finally:
        memory.close()
    return {k: v[5:] for k, v in times.items()}  # the first few open files and warm caches


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args(argv)
    os.environ.setdefault("VAULTMEM_TOKEN_FILE", str(WORK / "token"))
    print(f"# {machine()}; load {os.getloadavg()[0]:.2f}")
    print("| notes | capture | p50 (ms) | p95 (ms) |\n|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        for kind, spent in measure(copy_of(size), args.rounds).items():
            p95 = statistics.quantiles(spent, n=20)[-1]
            print(f"| {size} | {kind} | {statistics.median(spent):.2f} | {p95:.2f} |", flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
