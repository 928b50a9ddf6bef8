"""Start time of a vault whose notes link each other in their text (issue 16, item 2).

    .venv/bin/python benchmarks/text_links.py --baseline /path/to/a/checkout/of/main

Writes a synthetic vault of ``--size`` notes (``synthetic.py``'s texts, each note given 2-6 body
links to other notes in every form: ``[[slug]]``, ``[[slug|shown]]``, ``[[folder/slug]]``,
``[text](slug.md)``, embeds, 5% dangling, and a ``#tag`` in a third of them), then for each
checkout (this one, and ``--baseline``, which does not read body links) on its own copy of the
vault: one priming start (builds the index and the catalog cache), then ``--runs`` cold starts
in fresh processes, alternating checkouts: imports, ``Memory(...)`` (catalog from its cache),
``reconcile()`` (index compared, typed edges built) and a first search, then the first read of
the graph (which derives the ``links_to`` edges of the notes' text, unless a daemon's warm-up
thread already has). The fake embedder is used
so the figures isolate what this change touches (the model loads on a thread beside all this);
also timed: a catalog scan without its cache (every note parsed, the links and tags included).
Prints the machine, the load before and after, and a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

import synthetic  # noqa: E402
from _common import machine  # noqa: E402

OUT = HERE / "out" / "text-links"
GIT_QUIET = ["git", "-c", "gc.auto=0"]  # no background gc: the vault is copied next

START = """
import json, sys, time
c0 = time.process_time()
t0 = time.perf_counter()
sys.path.insert(0, {root!r})
from vaultmem.config import Settings
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.memory import Memory
from vaultmem.operations.search import SearchRequest
t1 = time.perf_counter()
memory = Memory(Settings.resolve({vault!r}), embedder=FakeEmbedder())
t2 = time.perf_counter()
memory.reconcile()
t3 = time.perf_counter()
memory.search(SearchRequest("billing-api timeouts in staging", limit=10))
t4 = time.perf_counter()
c4 = time.process_time()
graph = memory._ctx.graph
graph.outgoing("0")  # the first read that needs the links of the notes' text
t5 = time.perf_counter()
edges = sum(len(graph.outgoing(e.id or "")) for e in memory._ctx.catalog.entries())
memory.close()
peak = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(json.dumps({{"imports": t1 - t0, "open": t2 - t1, "reconcile": t3 - t2, "answer": t4 - t3,
                   "total": t4 - t0, "cpu": c4 - c0, "first_graph_read": t5 - t4, "edges": edges,
                   "rss_mib": int(peak) / 1024}}))
"""

SCAN = """
import json, sys, tempfile, time
sys.path.insert(0, {root!r})
from pathlib import Path
from vaultmem.vault.catalog import Catalog
from vaultmem.vault.layout import VaultLayout
with tempfile.TemporaryDirectory(dir={scratch!r}) as state:
    catalog = Catalog(VaultLayout(Path({vault!r}), Path(state)))
    t0 = time.perf_counter()
    catalog.scan()
    print(json.dumps({{"scan_uncached": time.perf_counter() - t0}}))
"""


def write_linked_vault(root: Path, size: int) -> None:
    """A vault of ``size`` synthetic notes that link each other in their bodies."""
    from vaultmem.vault.init import init_vault

    init_vault(root)
    written = list(synthetic.notes(size))
    rng = random.Random(16)
    for i, note in enumerate(written):
        lines = []
        for k in range(rng.randrange(2, 7)):
            other = written[rng.randrange(size)]
            slug = other.rel.rsplit("/", 1)[1].removesuffix(".md")
            form = (i + k) % 5
            if rng.random() < 0.05:
                lines.append(f"[[not written yet {i}-{k}]]")
            elif form == 0:
                lines.append(f"[[{slug}]]")
            elif form == 1:
                lines.append(f"[[{slug}|{other.title}]]")
            elif form == 2:
                lines.append(f"[[{other.rel.removesuffix('.md')}]]")
            elif form == 3:
                lines.append(f"[{other.title}]({slug}.md)")
            else:
                lines.append(f"![[{slug}#Notes]]")
        tag = f" #topic-{rng.randrange(40)}" if rng.random() < 0.33 else ""
        text = note.markdown().rstrip("\n") + f"{tag}\n\nSee also: " + ", ".join(lines) + "\n"
        path = root / note.rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, capture_output=True)
    subprocess.run(
        [*GIT_QUIET, "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-qm", "b"],
        cwd=root,
        check=True,
        capture_output=True,
    )


def run(script: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="a checkout of the code to compare with (main)")
    args = parser.parse_args()
    checkouts = {"this branch": ROOT}
    if args.baseline is not None:
        checkouts["baseline"] = args.baseline.resolve()
    base = OUT / str(args.size)
    source = base / "vault"
    if not (source / ".git").is_dir():
        shutil.rmtree(base, ignore_errors=True)
        write_linked_vault(source, args.size)
    vaults: dict[str, Path] = {}
    for label in checkouts:
        copy = base / f"vault-{label.replace(' ', '-')}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(source, copy, symlinks=True)
        vaults[label] = copy
    print(f"machine: {machine()}; load before: {load()}")
    figures: dict[str, list[dict[str, Any]]] = {label: [] for label in checkouts}
    scans: dict[str, list[float]] = {label: [] for label in checkouts}
    for label, root in checkouts.items():  # priming start: index and catalog cache built
        run(START.format(root=str(root), vault=str(vaults[label])))
    for _ in range(args.runs):
        for label, root in checkouts.items():
            figures[label].append(run(START.format(root=str(root), vault=str(vaults[label]))))
            scans[label].append(
                run(SCAN.format(root=str(root), vault=str(vaults[label]), scratch=str(base)))["scan_uncached"]
            )
    print(f"load after: {load()}\n")
    print(f"{args.size} notes with body links, {args.runs} cold starts each (median, seconds)\n")
    print(
        "| code | imports | open (catalog) | reconcile (+ typed edges) | first answer | start total "
        "| start, CPU s | first graph read (text edges) | edges | peak RSS MiB | catalog scan, no cache |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for label in checkouts:
        rows = figures[label]

        def med(key: str, rows: list[dict[str, Any]] = rows) -> float:
            return statistics.median(r[key] for r in rows)

        print(
            f"| {label} | {med('imports'):.3f} | {med('open'):.3f} | {med('reconcile'):.3f} | "
            f"{med('answer'):.3f} | {med('total'):.3f} | {med('cpu'):.3f} | {med('first_graph_read'):.3f} | "
            f"{rows[0]['edges']} | {med('rss_mib'):.0f} | "
            f"{statistics.median(scans[label]):.3f} |"
        )
    (base / "results.json").write_text(
        json.dumps({"figures": figures, "scans": scans}, indent=1), encoding="utf-8"
    )
    if os.environ.get("KEEP_VAULTS") != "1":
        for copy in vaults.values():
            shutil.rmtree(copy, ignore_errors=True)


if __name__ == "__main__":
    main()
