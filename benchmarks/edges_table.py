"""Does the LanceDB edges table pay for itself? Start time and memory at 100k linked notes, with and without.

    .venv/bin/python benchmarks/edges_table.py --notes 100000 [--tree PATH] [--without]

Writes a synthetic vault (``synthetic.py``) whose every note declares two typed links, builds its
index once with the fake embedder at the real model's width (384: the vector matrix is the real
size; embedding is not what is measured), then times fresh processes opening it the way a daemon
starts: open, reconcile (the edge graph derived from frontmatter), and, while the tree still has
the edges table, until the table holds every edge (its background copy). Each process reports its
peak RSS. ``--tree`` runs another checkout's code (the one before issue 14 still has the table);
``--without`` runs that checkout with the copy to the table switched off, so the two runs differ
only in the table. Prints one Markdown row per run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import synthetic  # noqa: E402
from _common import machine  # noqa: E402

EDGE_TYPES = ("related", "supports", "depends_on", "references")

CHILD = """
import json, sys, time
sys.path.insert(0, {tree!r})
t0 = time.perf_counter()
from vaultmem.config import Settings
from vaultmem.index.embedder import FakeEmbedder
settings = Settings.resolve({vault!r})
try:
    from vaultmem.memory import Memory
except ImportError:
    Memory = None
if Memory is None:  # a checkout from before issue 14
    from vaultmem.runtime import Runtime
    if {without!r}:
        from vaultmem.index.store import NoteIndex
        NoteIndex.replace_edges_for = lambda self, source_id, edges: None
    opened = Runtime(settings, embedder=FakeEmbedder(384))
else:
    opened = Memory(settings, embedder=FakeEmbedder(384))
t1 = time.perf_counter()
opened.reconcile()
t2 = time.perf_counter()
edges = getattr(opened, "edges", None)
if edges is not None and hasattr(edges, "drain"):
    edges.drain(timeout=3600)
    opened.index.wait_for_writes()
t3 = time.perf_counter()
status = open("/proc/self/status").read()
rss = int(status.split("VmRSS:")[1].split()[0]) / 1024
peak = int(status.split("VmHWM:")[1].split()[0]) / 1024
opened.close()
print(json.dumps({{"open": t1 - t0, "reconcile": t2 - t1, "edges_copied": t3 - t2,
    "start": t2 - t0, "settled": t3 - t0, "rss_mb": rss, "peak_rss_mb": peak}}))
"""


def write_linked_vault(root: Path, size: int) -> None:
    """A synthetic vault whose note ``i`` links to notes ``i+1`` and ``i+7`` (typed links)."""
    written = synthetic.write_vault(root, size)
    for i, note in enumerate(written):
        targets = [written[(i + step) % size] for step in (1, 7)]
        links = "".join(
            f'{EDGE_TYPES[(i + k) % len(EDGE_TYPES)]}: ["[[{t.rel.rsplit("/", 1)[-1][:-3]}]]"]\n'
            for k, t in enumerate(targets)
        )
        text = note.markdown().replace("\n---\n", f"\n{links}---\n", 1)
        (root / note.rel).write_text(text, encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, capture_output=True)
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-qm", "links"],
        cwd=root,
        check=True,
        capture_output=True,
    )


def run_child(tree: Path, vault: Path, without: bool) -> dict[str, float]:
    code = CHILD.format(tree=str(tree), vault=str(vault), without=without)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", type=int, default=100_000)
    ap.add_argument("--tree", type=Path, default=HERE.parent, help="the checkout whose code runs")
    ap.add_argument("--without", action="store_true", help="switch the copy to the edges table off")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--vault", type=Path, help="reuse (or keep) the vault here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="vaultmem-edges-") as tmp:
        vault = args.vault or Path(tmp) / "vault"
        if not (vault / ".git").exists():
            started = time.perf_counter()
            write_linked_vault(vault, args.notes)
            print(f"vault written in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        first = run_child(args.tree, vault, args.without)  # builds the index (and the edges table)
        print(f"first open (index build): {first}", file=sys.stderr)
        runs = [run_child(args.tree, vault, args.without) for _ in range(args.runs)]
        runs.sort(key=lambda r: r["start"])
        median = runs[len(runs) // 2]
        size = sum(f.stat().st_size for f in (vault / ".vaultmem").rglob("edges.lance/**/*") if f.is_file())
        has_table = any((vault / ".vaultmem").rglob("edges.lance"))
        label = "copy to the table off" if args.without else "with the table" if has_table else "no table"
        print(f"Machine: {machine()}; load {os.getloadavg()[0]:.2f}; tree {args.tree}\n")
        print(
            "| run | start: open + reconcile (s) | until the table holds every edge (s) | RSS / peak (MB) |"
        )
        print("|---|---|---|---|")
        print(
            f"| {label} ({args.notes:,} notes, {2 * args.notes:,} edges; median of "
            f"{args.runs}; edges table {size / 2**20:.1f} MB) | {median['start']:.2f} | "
            f"{median['settled']:.2f} | {median['rss_mb']:.0f} / {median['peak_rss_mb']:.0f} |"
        )
        print(json.dumps(runs), file=sys.stderr)


if __name__ == "__main__":
    main()
