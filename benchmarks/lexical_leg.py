"""The lexical leg alone, one tree against another (issue 15 phase 3): LanceDB's full-text index (a
tree before index layout 5) or the postings in memory, on the scale benchmark's synthetic notes.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/lexical_leg.py . 100000
    OPENBLAS_NUM_THREADS=1 ../base/.venv/bin/python benchmarks/lexical_leg.py ../base 100000

``TREE`` is the checkout whose ``vaultmem`` is imported (run it with that checkout's venv). Builds a
``NoteIndex`` with the fake embedder from ``synthetic.notes(N)`` in a temporary folder under
``benchmarks/out``, folds it, and times ``search_bm25`` (k 50) over 300 distinct queries, unscoped
and scoped to one project.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("tree", type=Path, help="the checkout whose vaultmem to time")
    parser.add_argument("notes", type=int, nargs="?", default=10_000)
    args = parser.parse_args()
    tree = args.tree.resolve()
    sys.path[:0] = [str(tree), str(HERE)]
    import synthetic

    import vaultmem
    from vaultmem.index.embedder import FakeEmbedder
    from vaultmem.index.note_index import NoteIndex
    from vaultmem.index.records import NoteRecord, SearchFilters

    if not Path(vaultmem.__file__).resolve().is_relative_to(tree):
        raise SystemExit(f"imported {vaultmem.__file__}, not the tree {tree}: run it with that tree's venv")
    records = [
        NoteRecord(
            id=s.id, path=s.rel, slug=s.rel, title=s.title, kind=s.kind, status="active", project=s.project,
            tags=(), text=s.body, content_hash=s.id, created=s.created.isoformat(),
            updated=s.created.isoformat(),
        )
        for s in synthetic.notes(args.notes)
    ]  # fmt: skip
    (HERE / "out").mkdir(exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=HERE / "out", prefix="lexical-leg-"))
    try:
        index = NoteIndex(folder / "index", FakeEmbedder())
        for start in range(0, len(records), 4096):
            index.upsert(records[start : start + 4096])
        index.wait_for_writes()
        index.maintenance()
        queries = synthetic.queries(300)
        for label, scope in (
            ("all notes", SearchFilters()),
            ("one project", SearchFilters(project="proj-003")),
        ):
            samples = []
            for q in queries:
                started = time.perf_counter()
                index.search_bm25(q, scope, 50)
                samples.append((time.perf_counter() - started) * 1000)
            samples.sort()
            print(f"{tree.name} {args.notes} {label}: p50 {samples[150]:.2f} ms, p95 {samples[285]:.2f} ms")
        index.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
