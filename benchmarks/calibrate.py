"""Measure the cosine floors of the shipped embedding model for calibrated ``relevance``.

    .venv/bin/python benchmarks/calibrate.py

Method (the graph-tools document, "Calibrated relevance"): sample 200 notes (100 LoCoMo turns,
100 SciFact abstracts, fixed seed), ask 20 queries written to be unrelated to any of them, and
ask each note's own first sentence (SciFact: its title) as a self-relevant query. Report the
unrelated pair distribution, the per-query maximum of unrelated hits, the self-relevant
similarity percentiles and how many self-relevant top-1 hits each candidate gate would drop.
"""

from __future__ import annotations

import random
import re
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_data import CachedEmbedder, load_locomo, load_scifact

from vaultmem.index.embedder import OnnxEmbedder
from vaultmem.index.records import embedding_text

UNRELATED_QUERIES = [
    "How do I rotate the TLS certificate on a Kubernetes ingress controller?",
    "torque specification for bicycle crank arm bolts",
    "Rust borrow checker error: cannot move out of borrowed content",
    "quarterly VAT return deadline for small businesses",
    "what is the airspeed velocity of an unladen swallow",
    "PostgreSQL vacuum freeze wraparound warning",
    "replace the water pump on a 2009 diesel van",
    "compile-time regular expressions in C++ templates",
    "mortgage amortization schedule with balloon payment",
    "configure BGP route reflectors in a data centre fabric",
    "history of the Byzantine iconoclasm controversy",
    "how many grams of yeast per kilogram of flour for pizza dough",
    "TypeScript generic constraint keyof extends",
    "maximum load of a cantilevered steel I-beam",
    "zoning permit for a backyard accessory dwelling unit",
    "tune a PID controller for a quadcopter",
    "offside rule in ice hockey explained",
    "migrate a Git repository from Mercurial with history",
    "what voltage does a USB-C power delivery charger negotiate",
    "orbital period of Jupiter's moon Europa",
]


def first_sentence(text: str) -> str:
    parts = re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=1)
    return parts[0]


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def main() -> None:
    rng = random.Random(2178)
    locomo = rng.sample(load_locomo().notes, 100)
    scifact = rng.sample(load_scifact().notes, 100)
    notes = locomo + scifact
    embedder = CachedEmbedder(OnnxEmbedder())
    note_vecs = embedder.embed([embedding_text(n) for n in notes])
    self_queries = [first_sentence(n.text) for n in locomo] + [n.title for n in scifact]
    self_vecs = embedder.embed(self_queries)
    unrelated_vecs = embedder.embed(UNRELATED_QUERIES)
    embedder.save()

    unrelated = unrelated_vecs @ note_vecs.T
    pairs = unrelated.ravel().tolist()
    per_query_max = unrelated.max(axis=1).tolist()
    self_sims = np.einsum("ij,ij->i", self_vecs, note_vecs).tolist()
    top1 = (self_vecs @ note_vecs.T).argmax(axis=1)
    self_top1 = sum(int(top1[i] == i) for i in range(len(notes)))

    print(
        f"unrelated pairs ({len(pairs)}): p50 {pct(pairs, 50):.4f}  p95 {pct(pairs, 95):.4f}  "
        f"max {max(pairs):.4f}"
    )
    print(
        f"per-query max of unrelated hits: p50 {statistics.median(per_query_max):.4f}  "
        f"p95 {pct(per_query_max, 95):.4f}  max {max(per_query_max):.4f}"
    )
    print(
        f"self-relevant similarity ({len(self_sims)}): p1 {pct(self_sims, 1):.4f}  "
        f"p5 {pct(self_sims, 5):.4f}  p10 {pct(self_sims, 10):.4f}  "
        f"p50 {pct(self_sims, 50):.4f}  p99 {pct(self_sims, 99):.4f}"
    )
    print(f"self-relevant query ranks its note first: {self_top1}/{len(notes)}")
    for name, group in (("LoCoMo", self_sims[:100]), ("SciFact", self_sims[100:])):
        print(f"  {name}: p5 {pct(group, 5):.4f}  p50 {pct(group, 50):.4f}")
    for threshold in (0.20, 0.22, 0.25, 0.30, 0.40):
        dropped = sum(s < threshold for s in self_sims)
        unrelated_kept = sum(s >= threshold for s in pairs)
        print(
            f"raw cosine gate {threshold:.2f}: drops {dropped}/200 self-relevant, "
            f"keeps {unrelated_kept}/{len(pairs)} unrelated pairs"
        )


def score_floors() -> None:
    """The cross-query score (``vaultmem/index/calibration.py``): the best hit's confidence for
    the unrelated queries against every LoCoMo turn and SciFact abstract (scope all), and for the
    benchmark questions (scoped as the protocol asks) whose top hit is relevant or not."""
    import tempfile
    from datetime import UTC, datetime, timedelta

    from vaultmem.index.calibration import ScoreCalibration, confidence, lexical_coverage
    from vaultmem.index.note_index import NoteIndex
    from vaultmem.index.records import SearchFilters

    locomo_set, scifact_set = load_locomo(), load_scifact()
    base = datetime(2026, 12, 1, tzinfo=UTC)
    notes = [
        n.but(created=(base + timedelta(seconds=i)).isoformat())
        for i, n in enumerate(locomo_set.notes + scifact_set.notes)
    ]
    embedder = CachedEmbedder(OnnxEmbedder())
    calibration = ScoreCalibration()
    with tempfile.TemporaryDirectory(prefix="vaultmem-calibrate-") as tmp:
        index = NoteIndex(Path(tmp), embedder)
        for start in range(0, len(notes), 512):
            index.upsert(notes[start : start + 512])
        index.maintenance()

        def best(query: str, project: str | None) -> tuple[str | None, float | None, float, float]:
            filters = SearchFilters(project=project)
            hits = index.searcher.search(query, filters, 10, min_relevance=0).hits
            if not hits:
                return None, None, 0.0, 0.0
            top = hits[0]
            vector = index.searcher.embed_query(query)
            sim = index.mirror.similarities([top.record.id], vector, filters).get(top.record.id)
            cov = lexical_coverage(query, f"{top.record.title}\n{top.record.text}")
            return top.record.id, sim, cov, confidence(sim, cov, calibration)

        unrelated = [*UNRELATED_QUERIES, "when do deploys happen"]
        found = [best(q, None) for q in unrelated]
        confs = [c for *_, c in found]
        print(f"\ncross-query score, {len(unrelated)} unrelated queries (scope all, 11k notes):")
        print(
            f"  best hit confidence p50 {statistics.median(confs):.3f}  max {max(confs):.3f}; "
            f"coverage max {max(c for _, _, c, _ in found):.3f}; "
            f"cosine max {max(s or 0 for _, s, _, _ in found):.3f}"
        )
        for q, (_, s, c, conf) in zip(unrelated, found, strict=True):
            if conf >= 0.2:
                print(f"    {conf:.3f} (cosine {s or 0:.3f}, coverage {c:.3f}): {q}")
        for dataset in (locomo_set, scifact_set):
            rel, irrel = [], []
            for q in dataset.queries:
                top, _, _, conf = best(q.text, q.project)
                (rel if top in dataset.qrels[q.id] else irrel).append(conf)
            for label, values in (("top hit relevant", rel), ("top hit not relevant", irrel)):
                if values:
                    below = sum(v < calibration.semantic.min_relevance for v in values)
                    print(
                        f"  {dataset.name} {label} ({len(values)}): p5 {pct(values, 5):.3f}  "
                        f"p10 {pct(values, 10):.3f}  p50 {pct(values, 50):.3f}; below the gate "
                        f"{calibration.semantic.min_relevance}: {below}"
                    )
        index.close()
        embedder.save()


if __name__ == "__main__":
    main()
    score_floors()
