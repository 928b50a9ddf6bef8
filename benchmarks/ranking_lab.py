"""In-process lab for ranking experiments (issue 15): quick, cached, not the protocol.

    .venv/bin/python benchmarks/ranking_lab.py baseline allcos rm3 ...   # named variants

Builds a ``NoteIndex`` straight from the corpus rows (embeddings from ``benchmarks/out/``), with
``created`` stamped the way the protocol's two LoCoMo loads leave it: ``in order`` one second
apart in conversation order; ``interleaved`` the four quarters of a conversation merged
round-robin, one second apart (what four sessions writing at once produce); ``round robin``
turn i dealt to writer i mod 4, the four writing at once (which of a round's four writes lands
first is drawn at random, seeded by the conversation; from research round 2). Each variant ranks
every question from the legs' candidates; winners are confirmed with ``retrieval.py`` (MCP).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (str(ROOT), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import numpy as np  # noqa: E402
from _bench_data import OUT, CachedEmbedder, Dataset, evaluate_notes, load_locomo, load_scifact  # noqa: E402

from vaultmem.index.embedder import OnnxEmbedder  # noqa: E402
from vaultmem.index.fusion import FusedScore, FusionConfig, fuse, propagate_context  # noqa: E402
from vaultmem.index.note_index import NoteIndex  # noqa: E402
from vaultmem.index.records import NoteRecord, SearchFilters  # noqa: E402

T0 = datetime(2026, 12, 1, tzinfo=UTC)
WRITERS = 4
#: Whether each note records the session that wrote it (``--no-sessions``: as if every note came
#: from the CLI or a person, or a client whose connection closed between writes).
SESSIONS = True


@dataclass
class Built:
    name: str
    dataset: Dataset
    index: NoteIndex
    #: note id -> the writer session that wrote it (LoCoMo: conversation or quarter)
    writer: dict[str, str]
    #: (project, writer) -> note ids in write order
    by_writer: dict[tuple[str, str], list[str]]


def stamp(dataset: Dataset, order: str) -> tuple[list[NoteRecord], dict[str, str]]:
    """Records with ``created`` as the protocol's load leaves it, and each note's writer."""
    out: list[NoteRecord] = []
    writer: dict[str, str] = {}
    groups: dict[str, list[NoteRecord]] = {}
    for note in dataset.notes:
        groups.setdefault(note.project or "", []).append(note)
    for project, rows in groups.items():
        size = -(-len(rows) // WRITERS)
        jitter = random.Random(project)
        rounds: dict[int, list[int]] = {}
        for i, note in enumerate(rows):
            if order == "in order":
                slot, who = i, project
            elif order == "round robin":  # turn i to writer i mod 4, the four writing at once
                r, w = divmod(i, WRITERS)
                if r not in rounds:  # which of a round's four writes lands first: by chance
                    rounds[r] = jitter.sample(range(WRITERS), WRITERS)
                slot, who = r * WRITERS + rounds[r][w], f"{project}/w{w}"
            else:
                quarter, j = divmod(i, size)
                slot, who = j * WRITERS + quarter, f"{project}/w{quarter}"
            created = (T0 + timedelta(seconds=slot)).isoformat()
            out.append(note.but(created=created, updated=created, session=who if SESSIONS else None))
            writer[note.id] = who
    return out, writer


def build(dataset: Dataset, order: str, cache: CachedEmbedder, workdir: Path, **kw: Any) -> Built:
    records, writer = stamp(dataset, order)
    transform: Callable[[list[NoteRecord], dict[str, str]], list[NoteRecord]] | None = kw.pop(
        "transform", None
    )
    if transform is not None:
        records = transform(records, writer)
    index = NoteIndex(workdir / f"{dataset.name}-{order.replace(' ', '-')}", cache, **kw)
    for start in range(0, len(records), 512):
        index.upsert(records[start : start + 512])
    index.wait_for_writes()
    index.maintenance()
    cache.save()
    by_writer: dict[tuple[str, str], list[str]] = {}
    for r in sorted(records, key=lambda r: (r.created, r.id)):
        by_writer.setdefault((r.project or "", writer[r.id]), []).append(r.id)
    return Built(f"{dataset.name}/{order}", dataset, index, writer, by_writer)


# ----------------------------------------------------------------------------- candidates


@dataclass
class Cands:
    bm25: list[tuple[str, float]]
    vector: list[tuple[str, float]]
    qvec: Any


def candidates(b: Built, text: str, project: str, pool: int = 50) -> Cands:
    s = b.index.searcher
    f = SearchFilters(project=project)
    bm25 = s.mirror.lexical(text, f, pool)
    qvec = s.embed_query(text)
    vector = b.index.mirror.nearest(qvec, f, pool)
    return Cands(bm25, vector, qvec)


Ranker = Callable[[Built, str, str], list[str]]


def shipped(b: Built, text: str, project: str) -> list[str]:
    return [
        h.record.id
        for h in b.index.searcher.search(text, SearchFilters(project=project), 10, min_relevance=0).hits
    ]


def bm25_only(b: Built, text: str, project: str) -> list[str]:
    return [h.record.id for h in b.index.search_bm25(text, SearchFilters(project=project), 10).hits]


def vector_only(b: Built, text: str, project: str) -> list[str]:
    return [h.record.id for h in b.index.search_vector(text, SearchFilters(project=project), 10).hits]


def _time_adjacency(b: Built, ids: Sequence[str]) -> dict[str, list[str]]:
    return {i: b.index.timeline.neighbours(i, 600.0) for i in ids}


def _positions(b: Built) -> dict[str, tuple[tuple[str, str], int]]:
    pos: dict[str, tuple[tuple[str, str], int]] = b.__dict__.setdefault("_pos", {})
    if not pos:
        for key, seq in b.by_writer.items():
            for n, i in enumerate(seq):
                pos[i] = (key, n)
    return pos


def writer_neighbours(b: Built, note_id: str, radius: int = 1) -> list[str]:
    """The notes written just before and after ``note_id`` by the same writer session."""
    key, n = _positions(b)[note_id]
    seq = b.by_writer[key]
    return [seq[m] for d in range(1, radius + 1) for m in (n - d, n + d) if 0 <= m < len(seq)]


def _writer_adjacency(b: Built, ids: Sequence[str]) -> dict[str, list[str]]:
    return {i: writer_neighbours(b, i) for i in ids}


def hybrid(
    *,
    bm25_w: float = 0.6,
    context_w: float = 0.5,
    adjacency: str = "time",
    allcos: bool = False,
    expand: int = 10,
    rm3: float = 0.0,
    radius: int = 1,
    decay: float = 0.5,
    agg: str = "max",
    min_pair_cos: float | None = None,
) -> Ranker:
    """The shipped pipeline rebuilt from its parts, with switches for the ideas measured."""
    config = FusionConfig(bm25_weight=bm25_w, vector_weight=1 - bm25_w, context_weight=context_w)

    def rank(b: Built, text: str, project: str) -> list[str]:
        c = candidates(b, text, project)
        bm25 = c.bm25
        if rm3 > 0:
            bm25 = rm3_expand(b, text, project, bm25, rm3)
        f = SearchFilters(project=project)
        extra: dict[str, float] = {}
        if allcos:
            have = {i for i, _ in c.vector}
            missing = [i for i, _ in bm25 if i not in have]
            extra.update(b.index.mirror.similarities(missing, c.qvec, f))
        fused = fuse(bm25, c.vector, config, extra_similarities=extra or None)
        if context_w > 0 and fused:
            adj_fn = _time_adjacency if adjacency == "time" else _writer_adjacency
            top = [x.id for x in fused[:expand]]
            have = {x.id for x in fused}
            if adjacency == "writer":
                near = {i: writer_neighbours(b, i, radius) for i in top}
            else:
                near = adj_fn(b, top)
            wanted = {n for ns in near.values() for n in ns if n not in have}
            if wanted:
                extra.update(b.index.mirror.similarities(sorted(wanted), c.qvec, f))
                fused = fuse(bm25, c.vector, config, extra_similarities=extra)
            if radius == 1 and min_pair_cos is None:
                fused = propagate_context(fused, adj_fn(b, [x.id for x in fused]), context_w)
            else:
                fused = propagate_radius(b, fused, context_w, radius, decay, agg, min_pair_cos, adjacency)
        return [x.id for x in fused[:10]]

    return rank


def propagate_radius(
    b: Built,
    fused: list[FusedScore],
    weight: float,
    radius: int,
    decay: float,
    agg: str = "max",
    min_pair_cos: float | None = None,
    adjacency: str = "writer",
) -> list[FusedScore]:
    """Like propagate_context over notes up to ``radius`` away (same writer, or by time), a
    neighbour at distance d lending ``decay ** (d - 1)`` of its score; with ``min_pair_cos`` only
    neighbours at least that similar to the note lend anything."""
    own = {f.id: f.score for f in fused}
    mirror = b.index.mirror
    out = []
    for f in fused:
        if adjacency == "writer":
            key, n = _positions(b)[f.id]
            seq = b.by_writer[key]
            near = [(d, seq[m]) for d in range(1, radius + 1) for m in (n - d, n + d) if 0 <= m < len(seq)]
        else:
            near = [(1, x) for x in b.index.timeline.neighbours(f.id, 600.0)]
        lent = 0.0
        for d, other in near:
            if other not in own:
                continue
            if min_pair_cos is not None:
                va, vb = mirror.vector(f.id), mirror.vector(other)
                if va is None or vb is None or float(va @ vb) < min_pair_cos:
                    continue
            part = own[other] * decay ** (d - 1)
            lent = lent + part if agg == "sum" else max(lent, part)
        out.append(FusedScore(f.id, f.score + weight * lent, f.bm25, f.similarity, lent))
    out.sort(key=lambda f: (-f.score, f.id))
    return out


_TOKEN = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    (  # noqa: SIM905
        "a an and are as at be been but by did do does for from had has have he her his how i if in "
        "into is it its me my of on or our she so that the their them then there they this to too "
        "was we were what when where which who why will with you your yes no not just really so "
        "very can could would should about like get got also all any some more most much one two oh "
        "hey hi "
    ).split()
)


def rm3_expand(
    b: Built, text: str, project: str, bm25: list[tuple[str, float]], weight: float
) -> list[tuple[str, float]]:
    """RM3-style: terms of the top 10 BM25 hits weighted by the hits' scores, the 10 best not in the
    query asked as a second BM25 query; the two score lists are mixed (1 - weight) : weight."""
    if not bm25:
        return bm25
    top = bm25[:10]
    records = b.index.mirror.get_many(i for i, _ in top)
    high = top[0][1] or 1.0
    q_terms = set(_TOKEN.findall(text.lower()))
    weights: Counter[str] = Counter()
    for i, s in top:
        words = [w for w in _TOKEN.findall(records[i].text.lower()) if w not in _STOP and len(w) > 2]
        if not words:
            continue
        for w, n in Counter(words).items():
            if w not in q_terms:
                weights[w] += (s / high) * n / len(words)
    terms = [w for w, _ in weights.most_common(10)]
    if not terms:
        return bm25
    s = b.index.searcher
    f = SearchFilters(project=project)
    second = s.mirror.lexical(" ".join(terms), f, 50)
    mix: dict[str, float] = {}
    for leg, w in ((bm25, 1 - weight), (second, weight)):
        if not leg:
            continue
        hi = leg[0][1] or 1.0
        for i, sc in leg:
            mix[i] = mix.get(i, 0.0) + w * sc / hi
    return sorted(mix.items(), key=lambda x: -x[1])[:50]


# ----------------------------------------------------------------------------- chunked vectors


class Chunked:
    """Every note's chunk vectors (``vaultmem.index.chunking``), scanned per query like the mirror."""

    def __init__(self, b: Built, cache: CachedEmbedder, **kw: int) -> None:
        from vaultmem.index.chunking import chunk_texts

        self.owner: list[str] = []
        texts: list[str] = []
        for note in b.dataset.notes:
            chunks = chunk_texts(note.title, note.text, **kw)
            if len(chunks) > 1:
                for c in chunks:
                    self.owner.append(note.id)
                    texts.append(c.text)
        self.matrix = cache.embed(texts) if texts else np.zeros((0, cache.dim), dtype=np.float32)
        cache.save()
        self.project = {n.id: n.project for n in b.dataset.notes}
        print(f"# {len(texts)} chunks of {len(set(self.owner))} long notes", file=sys.stderr)

    def best(self, qvec: Any, project: str) -> dict[str, list[float]]:
        sims = self.matrix @ qvec
        out: dict[str, list[float]] = {}
        for i, s in zip(self.owner, sims.tolist(), strict=True):
            if self.project[i] == project:
                out.setdefault(i, []).append(s)
        return out


def chunked(
    chunks_of: Callable[[Built], Chunked], mode: str = "max", keep_note: bool = True, **kw: Any
) -> Ranker:
    """The hybrid with the vector leg scored per note from its chunks (and its whole-note vector)."""
    from vaultmem.index.chunking import aggregate_topk

    base = FusionConfig(context_weight=kw.get("context_w", 0.5))

    def rank(b: Built, text: str, project: str) -> list[str]:
        c = candidates(b, text, project, pool=50)
        f = SearchFilters(project=project)
        ch = chunks_of(b).best(c.qvec, project)
        mirror = b.index.mirror
        sims = mirror.nearest(c.qvec, f, 100000)
        scored = []
        for i, s in sims:
            if i in ch:
                agg = max(ch[i]) if mode == "max" else aggregate_topk(ch[i])
                s = max(s, agg) if keep_note else agg
            scored.append((i, s))
        scored.sort(key=lambda x: -x[1])
        vector = scored[:50]
        fused = fuse(c.bm25, vector, base)
        if base.context_weight > 0 and fused:
            fused = propagate_context(fused, _time_adjacency(b, [x.id for x in fused]), base.context_weight)
        return [x.id for x in fused[:10]]

    return rank


# ----------------------------------------------------------------------------- driver


def run(b: Built, ranker: Ranker) -> dict[str, Any]:
    runs = {q.id: ranker(b, q.text, q.project) for q in b.dataset.queries}
    return evaluate_notes(runs, {}, b.dataset)


#: ``shipped@k1=0.9,bt=0.4,bb=0.6,tw=2`` or ``bm25@...``: the lexical leg's parameters
#: (:mod:`vaultmem.index.bm25`, applied at query time) set for one variant's run.
LEXICAL_KNOBS = {"k1": "K1", "bt": "B_TITLE", "bb": "B_BODY", "tw": "TITLE_WEIGHT"}


def with_lexical(ranker: Ranker, spec: str) -> Ranker:
    from vaultmem.index import bm25

    knobs = {LEXICAL_KNOBS[k]: float(v) for k, _, v in (p.partition("=") for p in spec.split(",") if p)}

    def rank(b: Built, text: str, project: str) -> list[str]:
        saved = {name: getattr(bm25, name) for name in knobs}
        for name, value in knobs.items():
            setattr(bm25, name, value)
        try:
            return ranker(b, text, project)
        finally:
            for name, value in saved.items():
                setattr(bm25, name, value)

    return rank


def variant(name: str) -> Ranker:
    base, _, spec = name.partition("@")
    return with_lexical(VARIANTS[base], spec) if spec else VARIANTS[base]


def line(name: str, variant: str, scores: dict[str, Any]) -> str:
    a = scores["all"]
    cats = " ".join(f"{scores[f'cat{c}']['recall@5']:.3f}" for c in range(1, 6) if f"cat{c}" in scores)
    return (
        f"{name:22s} {variant:28s} r@5 {a['recall@5']:.3f} r@10 {a['recall@10']:.3f} "
        f"hit@5 {a['hit@5']:.3f} nDCG {a['nDCG@10']:.3f}  {cats}"
    )


VARIANTS: dict[str, Ranker] = {
    "bm25": bm25_only,
    "vector": vector_only,
    "shipped": shipped,
    "rebuilt": hybrid(),
    "allcos": hybrid(allcos=True),
    "writer-adj": hybrid(adjacency="writer"),
    "writer-adj+allcos": hybrid(adjacency="writer", allcos=True),
    "no-context": hybrid(context_w=0),
    "no-context+allcos": hybrid(context_w=0, allcos=True),
    "rm3-0.3": hybrid(rm3=0.3),
    "rm3-0.5": hybrid(rm3=0.5),
    "rm3-0.3-noctx": hybrid(rm3=0.3, context_w=0),
    "w-r2": hybrid(adjacency="writer", radius=2, expand=20),
    "w-r3": hybrid(adjacency="writer", radius=3, expand=20),
    "w-r2-d.7": hybrid(adjacency="writer", radius=2, decay=0.7, expand=20),
    "w-sum-r2": hybrid(adjacency="writer", radius=2, decay=0.7, expand=20, agg="sum"),
    "w-sum-r3": hybrid(adjacency="writer", radius=3, decay=0.7, expand=20, agg="sum"),
    "w-r2-d.7-c.4": hybrid(adjacency="writer", radius=2, decay=0.7, expand=20, context_w=0.4),
    "gate.1": hybrid(min_pair_cos=0.1),
    "gate.2": hybrid(min_pair_cos=0.2),
    "w-r2-d.7-gate.1": hybrid(adjacency="writer", radius=2, decay=0.7, expand=20, min_pair_cos=0.1),
    "w-r2-d.7-gate.2": hybrid(adjacency="writer", radius=2, decay=0.7, expand=20, min_pair_cos=0.2),
    "w-ctx.35": hybrid(adjacency="writer", context_w=0.35),
    "w-ctx.65": hybrid(adjacency="writer", context_w=0.65),
    "w-rm3-0.3": hybrid(adjacency="writer", rm3=0.3),
    "bm25w-0.5": hybrid(bm25_w=0.5),
    "bm25w-0.7": hybrid(bm25_w=0.7),
}


#: The constants ``--set`` may change, and the module each lives in (read where it is used).
TUNABLE = {
    "CONTEXT_WEIGHT": "vaultmem.index.lexical",
    "B_CONTEXT": "vaultmem.index.lexical",
    "HEADER_WORDS": "vaultmem.index.note_vectors",
    "HEADER_FLOOR": "vaultmem.index.note_vectors",
    "SHORT_WORDS": "vaultmem.index.note_vectors",
}


def retune(change: str) -> None:
    """``NAME=VALUE``: set one of :data:`TUNABLE` for this run (the weight sweeps of docs/benchmarks.md)."""
    import importlib

    name, _, value = change.partition("=")
    if name not in TUNABLE or not value:
        raise SystemExit(f"--set takes NAME=VALUE with NAME one of {', '.join(TUNABLE)}, not {change!r}")
    module = importlib.import_module(TUNABLE[name])
    setattr(module, name, type(getattr(module, name))(value))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("variants", nargs="*", default=["bm25", "vector", "shipped"])
    parser.add_argument("--sets", default="locomo/in order,locomo/interleaved,scifact")
    parser.add_argument("--no-sessions", action="store_true", help="notes record no writing session")
    parser.add_argument(
        "--model-dir", type=Path, help="an ONNX export (model.onnx + tokenizer.json), not the packaged model"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="change one of the index's constants for this run, e.g. CONTEXT_WEIGHT=0.4 or "
        "HEADER_WORDS=200 (the lexical leg's and the vector header's: " + ", ".join(TUNABLE) + ")",
    )
    args = parser.parse_args()
    global SESSIONS
    SESSIONS = not args.no_sessions
    for change in args.set:
        retune(change)
    cache = CachedEmbedder(OnnxEmbedder(args.model_dir))  # the packaged model unless told
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="vaultmem-lab-") as tmp:
        for spec in args.sets.split(","):
            name, _, order = spec.partition("/")
            dataset = load_locomo() if name == "locomo" else load_scifact()
            started = time.perf_counter()
            b = build(dataset, order or "in order", cache, Path(tmp))
            print(f"# built {spec} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
            if any(v.startswith("chunk") for v in args.variants):
                made = Chunked(b, cache)
                VARIANTS["chunk-max"] = chunked(lambda _b, m=made: m)
                VARIANTS["chunk-max-only"] = chunked(lambda _b, m=made: m, keep_note=False)
                VARIANTS["chunk-top2"] = chunked(lambda _b, m=made: m, mode="top2")
                VARIANTS["chunk-max-noctx"] = chunked(lambda _b, m=made: m, context_w=0.0)
            for v in args.variants:
                scores = run(b, variant(v))
                results[f"{spec}|{v}"] = scores
                print(line(spec, v, scores), flush=True)
            b.index.close()
            cache.save()
    (OUT / "lab.json").write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
