"""Retrieval benchmark: LoCoMo and SciFact loaded through the public service API and searched.

    .venv/bin/python benchmarks/retrieval.py            # both datasets through Runtime (the default)
    .venv/bin/python benchmarks/retrieval.py --direct   # straight into a NoteIndex (quick experiments)
    .venv/bin/python benchmarks/retrieval.py --latency  # search latency at ~11k notes (NoteIndex)

Through the service (default): a temporary vault (daily cap raised in its ``filing.yaml``), one
``Runtime(settings)``, every corpus row written with ``runtime.service.append(text, kind="reference",
title=..., project=...)`` under a clock set to the row's timestamp, every question asked with
``runtime.search(SearchRequest(query, scope="project", project=conv, limit=10))``, i.e. the
``memory_search`` tool with its default relevance gate. The exact-fingerprint dedup of ``append``
merges identical turns into one note (possibly in another conversation's project); a retrieved note
is scored as every corpus id it stands for. The legs and the ungated hybrid are measured on the same
index through ``NoteIndex.search_bm25`` / ``search_vector`` / ``searcher.search``.

Protocol (../shared/bench/README.md): LoCoMo stores one note per dialogue turn (title = speaker and
session date, text = the turn, project = the conversation) and asks each question inside its
conversation's project; SciFact stores every abstract in one project. A note's ``created`` is its
session's date-time plus its turn number in seconds (LoCoMo) and one second per document in corpus
order, as a bulk import would stamp them (SciFact). Embeddings are cached under benchmarks/out/.
``load_corpus_into`` and ``run_queries`` take plain callables so the same harness can drive the
service API later.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from vaultmem.index.embedder import Embedder, OnnxEmbedder  # noqa: E402
from vaultmem.index.records import NoteRecord, SearchFilters, SearchResult  # noqa: E402
from vaultmem.index.store import NoteIndex  # noqa: E402

BENCH = ROOT.parent / "shared" / "bench"
OUT = Path(__file__).resolve().parent / "out"


class CachedEmbedder:
    """Wraps an embedder with an on-disk cache under benchmarks/out/ so reruns never re-embed."""

    def __init__(self, inner: Embedder, cache_dir: Path = OUT / "embcache") -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self._dir = cache_dir / self.model_id.replace("/", "_")
        self._dir.mkdir(parents=True, exist_ok=True)
        self._keys: dict[str, int] = {}
        self._rows: list[npt.NDArray[np.float32]] = []
        self._saved = 0
        keys_file = self._dir / "keys.json"
        if keys_file.exists():
            keys = json.loads(keys_file.read_text(encoding="utf-8"))
            matrix = np.load(self._dir / "vectors.npy")
            self._keys = {k: i for i, k in enumerate(keys)}
            self._rows = list(matrix)
            self._saved = len(keys)

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        keys = [self._key(t) for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in self._keys}.items())
        if missing:
            vecs = self.inner.embed([t for _, t in missing])
            for (k, _), v in zip(missing, vecs, strict=True):
                self._keys[k] = len(self._rows)
                self._rows.append(v)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._rows[self._keys[k]] for k in keys]).astype(np.float32)

    def save(self) -> None:
        if len(self._rows) == self._saved:
            return
        keys = [""] * len(self._keys)
        for k, i in self._keys.items():
            keys[i] = k
        np.save(self._dir / "vectors.npy", np.stack(self._rows))
        (self._dir / "keys.json").write_text(json.dumps(keys), encoding="utf-8")
        self._saved = len(self._rows)


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    project: str
    category: int


@dataclass(frozen=True)
class Dataset:
    name: str
    notes: list[NoteRecord]
    queries: list[Query]
    qrels: dict[str, set[str]]


def _jsonl(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _qrels(path: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, score = line.split("\t")
        if int(score) > 0:
            out.setdefault(qid, set()).add(doc)
    return out


def _note(doc_id: str, title: str, text: str, project: str, created: datetime) -> NoteRecord:
    stamp = created.isoformat()
    return NoteRecord(
        id=doc_id,
        path=f"{project}/{doc_id.replace(':', '-')}.md",
        slug=doc_id.replace(":", "-").lower(),
        title=title,
        kind="note",
        status="active",
        project=project,
        tags=(),
        text=text,
        content_hash=hashlib.sha256(f"{title}\n{text}".encode()).hexdigest(),
        created=stamp,
        updated=stamp,
    )


def load_locomo(bench: Path = BENCH) -> Dataset:
    notes = []
    for row in _jsonl(bench / "locomo" / "corpus.jsonl"):
        meta = row["metadata"]
        assert isinstance(meta, dict)
        session = datetime.strptime(str(meta["date"]).replace(" on ", " "), "%I:%M %p %d %B, %Y")
        turn = int(str(meta["dia_id"]).split(":")[1])
        created = session.replace(tzinfo=UTC) + timedelta(seconds=turn)
        notes.append(_note(str(row["_id"]), str(row["title"]), str(row["text"]), str(meta["conv"]), created))
    qrels = _qrels(bench / "locomo" / "qrels.tsv")
    queries = []
    for row in _jsonl(bench / "locomo" / "queries.jsonl"):
        meta = row["metadata"]
        assert isinstance(meta, dict)
        if row["_id"] in qrels:
            queries.append(Query(str(row["_id"]), str(row["text"]), str(meta["conv"]), int(meta["category"])))
    return Dataset("locomo", notes, queries, qrels)


def load_scifact(bench: Path = BENCH) -> Dataset:
    base = datetime(2025, 1, 1, tzinfo=UTC)
    notes = [
        _note(str(row["_id"]), str(row["title"]), str(row["text"]), "scifact", base + timedelta(seconds=i))
        for i, row in enumerate(_jsonl(bench / "scifact" / "corpus.jsonl"))
    ]
    qrels = _qrels(bench / "scifact" / "qrels" / "test.tsv")
    queries = [
        Query(str(row["_id"]), str(row["text"]), "scifact", 0)
        for row in _jsonl(bench / "scifact" / "queries.jsonl")
        if row["_id"] in qrels
    ]
    return Dataset("scifact", notes, queries, qrels)


def load_corpus_into(
    upsert: Callable[[Sequence[NoteRecord]], None], dataset: Dataset, batch: int = 512
) -> None:
    """Write every note of ``dataset`` through ``upsert`` (NoteIndex.upsert, later the service)."""
    for start in range(0, len(dataset.notes), batch):
        upsert(dataset.notes[start : start + batch])


SearchFn = Callable[[str, str, int], list[str]]


def run_queries(search_fn: SearchFn, dataset: Dataset, k: int = 10) -> dict[str, list[str]]:
    """``{query id: ranked note ids}``; ``search_fn(text, project, k)`` returns note ids."""
    return {q.id: search_fn(q.text, q.project, k) for q in dataset.queries}


def score(ranked: list[str], relevant: set[str]) -> dict[str, float]:
    dcg = sum(1 / math.log2(i + 2) for i, doc in enumerate(ranked[:10]) if doc in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
    return {
        "recall@5": len(set(ranked[:5]) & relevant) / len(relevant),
        "recall@10": len(set(ranked[:10]) & relevant) / len(relevant),
        "hit@5": float(bool(set(ranked[:5]) & relevant)),
        "nDCG@10": dcg / ideal,
    }


def evaluate(runs: dict[str, list[str]], dataset: Dataset) -> dict[str, dict[str, float]]:
    """Mean metrics overall (key ``all``) and per LoCoMo category (keys ``cat1``..``cat5``)."""
    groups: dict[str, list[dict[str, float]]] = {}
    for q in dataset.queries:
        m = score(runs[q.id], dataset.qrels[q.id])
        groups.setdefault("all", []).append(m)
        if q.category:
            groups.setdefault(f"cat{q.category}", []).append(m)
    return {
        g: {metric: statistics.fmean(m[metric] for m in ms) for metric in ms[0]} for g, ms in groups.items()
    }


def _ids(result: SearchResult) -> list[str]:
    return [h.record.id for h in result.hits]


def legs(index: NoteIndex) -> dict[str, SearchFn]:
    """The three rankings compared: each leg alone and the hybrid (gate off: ranking quality)."""

    def scope(project: str) -> SearchFilters:
        return SearchFilters(project=project)

    return {
        "bm25": lambda text, project, k: _ids(index.search_bm25(text, scope(project), k)),
        "vector": lambda text, project, k: _ids(index.search_vector(text, scope(project), k)),
        "hybrid (gate off)": lambda text, project, k: _ids(
            index.searcher.search(text, scope(project), k, min_relevance=0)
        ),
    }


def build_index(dataset: Dataset, embedder: Embedder, state_dir: Path) -> NoteIndex:
    index = NoteIndex.open(state_dir, embedder)
    load_corpus_into(index.upsert, dataset)
    index.maintenance()
    return index


def bench_dataset(dataset: Dataset, embedder: Embedder) -> dict[str, dict[str, dict[str, float]]]:
    with tempfile.TemporaryDirectory() as tmp:
        index = build_index(dataset, embedder, Path(tmp))
        if isinstance(embedder, CachedEmbedder):
            embedder.save()
        results = {name: evaluate(run_queries(fn, dataset), dataset) for name, fn in legs(index).items()}
        index.close()
    return results


#: The filing contract's title limit; a few SciFact titles are longer and are cut at a word.
TITLE_LIMIT = 200


class _StepClock:
    """The service's clock, set to each corpus row's timestamp before it is appended."""

    def __init__(self) -> None:
        self.now = datetime(2000, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def _service_runtime(root: Path, embedder: Embedder, clock: _StepClock) -> Any:
    from vaultmem.config import Settings
    from vaultmem.runtime import Runtime
    from vaultmem.vault.init import init_vault

    init_vault(root)
    contract = root / "filing.yaml"
    contract.write_text(
        contract.read_text(encoding="utf-8").replace("daily_write_cap: 200", "daily_write_cap: 10000000"),
        encoding="utf-8",
    )
    # durable=False: no fsync per note; this measures ranking, not the write path.
    return Runtime(Settings.resolve(root, durable=False), embedder=embedder, clock=clock)


def load_through_service(runtime: Any, clock: _StepClock, dataset: Dataset) -> dict[str, set[str]]:
    """Append every row; returns ``{note id: corpus ids it stands for}``."""
    stands_for: dict[str, set[str]] = {}
    for note in dataset.notes:
        clock.now = datetime.fromisoformat(note.created)
        title = note.title if len(note.title) <= TITLE_LIMIT else note.title[:TITLE_LIMIT].rsplit(" ", 1)[0]
        result = runtime.service.append(note.text, kind="reference", title=title, project=note.project)
        stands_for.setdefault(result["id"], set()).add(note.id)
    runtime.index.wait_for_writes()
    return stands_for


def evaluate_notes(
    runs: dict[str, list[str]], stands_for: dict[str, set[str]], dataset: Dataset
) -> dict[str, dict[str, float]]:
    """Like :func:`evaluate`, for rankings of note ids that may each stand for several corpus ids."""
    groups: dict[str, list[dict[str, float]]] = {}
    for q in dataset.queries:
        m = score_groups([stands_for.get(i, {i}) for i in runs[q.id]], dataset.qrels[q.id])
        groups.setdefault("all", []).append(m)
        if q.category:
            groups.setdefault(f"cat{q.category}", []).append(m)
    return {
        g: {metric: statistics.fmean(m[metric] for m in ms) for metric in ms[0]} for g, ms in groups.items()
    }


def score_groups(ranked: list[set[str]], relevant: set[str]) -> dict[str, float]:
    """recall@k counts the relevant corpus ids the top k notes stand for; a note is a hit for
    hit@5 and nDCG@10 when it stands for any relevant id (the ideal ranking as in :func:`score`)."""
    dcg = sum(1 / math.log2(i + 2) for i, ids in enumerate(ranked[:10]) if ids & relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), 10)))

    def covered(k: int) -> int:
        return len(set().union(*ranked[:k]) & relevant) if ranked[:k] else 0

    return {
        "recall@5": covered(5) / len(relevant),
        "recall@10": covered(10) / len(relevant),
        "hit@5": float(covered(5) > 0),
        "nDCG@10": dcg / ideal,
    }


def bench_dataset_service(dataset: Dataset, embedder: Embedder) -> dict[str, dict[str, dict[str, float]]]:
    from vaultmem.search import SearchRequest

    clock = _StepClock()
    with tempfile.TemporaryDirectory() as tmp:
        runtime = _service_runtime(Path(tmp) / "vault", embedder, clock)
        started = time.perf_counter()
        stands_for = load_through_service(runtime, clock, dataset)
        merged = len(dataset.notes) - len(stands_for)
        print(
            f"{dataset.name}: {len(dataset.notes)} rows -> {len(stands_for)} notes "
            f"({merged} merged by the fingerprint dedup) in {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
        if isinstance(embedder, CachedEmbedder):
            embedder.save()
        runtime.index.maintenance()

        def public(text: str, project: str, k: int) -> list[str]:
            found = runtime.search(SearchRequest(text, scope="project", project=project, limit=k))
            return [r["id"] for r in found["results"]]

        rankings = {**legs(runtime.index), "memory_search": public}
        results = {
            name: evaluate_notes(run_queries(fn, dataset), stands_for, dataset)
            for name, fn in rankings.items()
        }
        runtime.close()
    return results


def print_tables(results: dict[str, dict[str, dict[str, dict[str, float]]]]) -> None:
    if "locomo" in results:
        print("\nLoCoMo (1,982 questions, scoped to their conversation)\n")
        print("| ranking | recall@5 | recall@10 | hit@5 | nDCG@10 | r@5 cat1 | cat2 | cat3 | cat4 | cat5 |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for name, groups in results["locomo"].items():
            a = groups["all"]
            cats = " | ".join(f"{groups[f'cat{c}']['recall@5']:.3f}" for c in range(1, 6))
            print(
                f"| {name} | {a['recall@5']:.3f} | {a['recall@10']:.3f} | {a['hit@5']:.3f} "
                f"| {a['nDCG@10']:.3f} | {cats} |"
            )
    if "scifact" in results:
        print("\nSciFact (300 test claims, one project)\n")
        print("| ranking | nDCG@10 | recall@10 |")
        print("|---|---|---|")
        for name, groups in results["scifact"].items():
            a = groups["all"]
            print(f"| {name} | {a['nDCG@10']:.3f} | {a['recall@10']:.3f} |")


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"p50 {p50:.1f} ms, p95 {p95:.1f} ms"


def bench_latency(embedder: Embedder, real: Embedder) -> None:
    """Single-note upsert (real embedder, uncached text) and hybrid search at ~11k notes."""
    notes = load_locomo().notes + load_scifact().notes
    with tempfile.TemporaryDirectory() as tmp:
        index = build_index(Dataset("all", notes, [], {}), embedder, Path(tmp))
        index._embedder = real  # new texts go through the real model, uncached
        queries = [q.text for q in load_locomo().queries[:200]]
        upserts: list[float] = []
        base = datetime(2026, 1, 1, tzinfo=UTC)
        for i in range(200):
            note = _note(f"lat-{i}", "Latency probe", f"note {i}: {queries[i]}", "conv-26", base)
            start = time.perf_counter()
            index.upsert([note])
            index.wait_for_writes()  # the writer's cost: embed + LanceDB add + memory update
            upserts.append((time.perf_counter() - start) * 1000)
        index.wait_for_maintenance()
        print(f"notes: {index.count()}")
        print(f"upsert one note, applied (embed + write, on the writer thread): {_percentiles(upserts)}")
        for label, project in (
            ("scoped to one LoCoMo conversation", "conv-26"),
            ("SciFact project", "scifact"),
        ):
            timings: list[float] = []
            for text in queries:
                start = time.perf_counter()
                index.searcher.search(text, SearchFilters(project=project), 10)
                timings.append((time.perf_counter() - start) * 1000)
            print(f"hybrid search, {label} (embed query + both legs + fusion): {_percentiles(timings)}")
        timings = []
        for text in queries:
            start = time.perf_counter()
            index.search_bm25(text, SearchFilters(), 10)
            timings.append((time.perf_counter() - start) * 1000)
        print(f"bm25 leg alone, all projects: {_percentiles(timings)}")
        index.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", choices=["locomo", "scifact", "both"], default="both")
    parser.add_argument("--latency", action="store_true", help="measure search latency instead")
    parser.add_argument("--direct", action="store_true", help="load straight into a NoteIndex (no vault)")
    args = parser.parse_args()
    real = OnnxEmbedder()
    embedder = CachedEmbedder(real)
    if args.latency:
        bench_latency(embedder, real)
        return
    results = {}
    names = ["locomo", "scifact"] if args.dataset == "both" else [args.dataset]
    for name in names:
        started = time.perf_counter()
        dataset = load_locomo() if name == "locomo" else load_scifact()
        run = bench_dataset if args.direct else bench_dataset_service
        results[name] = run(dataset, embedder)
        print(f"{name}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    print_tables(results)


if __name__ == "__main__":
    main()
