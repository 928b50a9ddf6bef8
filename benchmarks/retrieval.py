"""Retrieval benchmark, the honest protocol: the real daemon, written and searched through MCP.

    .venv/bin/python benchmarks/retrieval.py                 # LoCoMo (both orders) + SciFact
    .venv/bin/python benchmarks/retrieval.py --only scifact  # one leg of the protocol
    .venv/bin/python benchmarks/retrieval.py --cold          # the daemon embeds every note itself
    .venv/bin/python benchmarks/retrieval.py --stamped       # extra: the old stamped-clock run

Protocol (issue 15, "the bars' protocol"; data and licences in ../shared/bench/README.md):

- ``vaultmem serve`` runs as a subprocess on a free loopback port (``--port 0``) over a fresh vault
  whose filing contract lifts the daily cap; fsync and git are on, the clock is the real one.
- Every corpus row is one ``memory_append`` through the MCP SDK's streamable-HTTP client with the
  bearer token: ``content`` = the row's text, ``title`` = speaker and session date (SciFact: the
  paper's title, cut at a word to the contract's 200 characters), ``project`` = the conversation
  (SciFact: one project), ``kind`` = ``reference``. Four client sessions write at once:

  * ``locomo/in order``: each conversation is written in order by one session; four sessions
    (four conversations) at a time;
  * ``locomo/interleaved``: the conversations one after another, each split into four contiguous
    quarters written at once by four sessions, so a conversation's notes are interleaved in time
    (concurrent agents on one project, or an unordered import);
  * ``scifact``: the abstracts split into four contiguous quarters written at once.

- Right after the last write is acknowledged, one client asks every question with
  ``memory_search(query, scope="project", project=<conversation>, limit=10)`` (the tool's default
  relevance gate on) and each call's round trip is timed: that is the latency reported.
- The daemon is stopped (SIGTERM), and the index it built is opened in this process
  (``NoteIndex.open`` on its state folder; nothing is written to it) to rank the same questions
  with each leg alone (``search_bm25``, ``search_vector``) and the hybrid with the gate off.

``append``'s exact-content dedup may merge identical turns (greetings) into one note, possibly of
another conversation: a returned note is scored as every corpus id it stands for.

Embeddings: by default the daemon's embedding cache table is seeded from ``benchmarks/out/``
(vectors keyed by model id and text hash, exactly what a re-index reuses), so a run costs minutes,
not the ~6 minutes SciFact takes to embed on 2 cores; the rankings are the same. ``--cold`` leaves
it empty so the daemon embeds every note while it is written (the searches then start while its
writer may still be catching up).

Prints a table per load, the issue's target table, and writes ``benchmarks/out/retrieval.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (str(ROOT), str(HERE), str(ROOT / "tests")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import anyio  # noqa: E402
from _bench_data import (  # noqa: E402  (re-exported for calibrate.py and scale.py)
    OUT,
    TITLE_LIMIT,
    CachedEmbedder,
    Dataset,
    Query,
    evaluate_notes,
    load_locomo,
    load_scifact,
    score_groups,
)
from _common import machine, parts, pct, uncapped_vault  # noqa: E402

from vaultmem.index.embedder import Embedder, OnnxEmbedder  # noqa: E402
from vaultmem.index.records import NoteRecord, SearchFilters, embedding_text  # noqa: E402

__all__ = [
    "TITLE_LIMIT",
    "CachedEmbedder",
    "Dataset",
    "Query",
    "evaluate_notes",
    "load_locomo",
    "load_scifact",
    "score_groups",
]

VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))
WRITERS = 4
K = 10

# ----------------------------------------------------------------------------- load plans


@dataclass(frozen=True)
class Load:
    """One leg of the protocol: which dataset, and which session writes which rows in what order."""

    name: str
    dataset: Dataset
    #: Each phase runs after the previous one; inside a phase each list is one session's writes.
    phases: list[list[list[NoteRecord]]]


def _quarters(rows: Sequence[NoteRecord], n: int = WRITERS) -> list[list[NoteRecord]]:
    size = -(-len(rows) // n)
    return [list(rows[i : i + size]) for i in range(0, len(rows), size)]


def _by_project(dataset: Dataset) -> list[list[NoteRecord]]:
    groups: dict[str, list[NoteRecord]] = {}
    for note in dataset.notes:
        groups.setdefault(note.project or "", []).append(note)
    return list(groups.values())


def locomo_in_order(dataset: Dataset) -> Load:
    """Each conversation in order by its own session, four sessions (conversations) at once."""
    convs = _by_project(dataset)
    phases = [convs[i : i + WRITERS] for i in range(0, len(convs), WRITERS)]
    return Load("locomo/in order", dataset, phases)


def locomo_interleaved(dataset: Dataset) -> Load:
    """Conversation after conversation, each written by four sessions at once (a quarter each)."""
    return Load("locomo/interleaved", dataset, [_quarters(conv) for conv in _by_project(dataset)])


def scifact_load(dataset: Dataset) -> Load:
    """Every abstract in one project, four sessions at once (a quarter each)."""
    return Load("scifact", dataset, [_quarters(dataset.notes)])


# ----------------------------------------------------------------------------- the daemon


@dataclass
class DaemonRun:
    """What one load through the daemon produced."""

    vault: Path
    stands_for: dict[str, set[str]] = field(default_factory=dict)
    rankings: dict[str, list[str]] = field(default_factory=dict)
    append_ms: list[float] = field(default_factory=list)
    search_ms: list[float] = field(default_factory=list)
    load_s: float = 0.0
    loadavg: dict[str, float] = field(default_factory=dict)


def _seed_embedding_cache(state_index: Path, texts: Sequence[str], cache: CachedEmbedder) -> int:
    """Write the cached vectors of ``texts`` into the index's embedding cache table (the table a
    re-index reads), so the daemon embeds none of them; returns how many were seeded."""
    import lancedb
    import pyarrow as pa

    from vaultmem.index import _schema
    from vaultmem.index.records import text_hash

    rows = []
    for text in dict.fromkeys(texts):
        vector = cache.cached(text)
        if vector is not None:
            rows.append({"model_id": cache.model_id, "text_hash": text_hash(text), "vector": vector.tolist()})
    state_index.mkdir(parents=True, exist_ok=True)
    db = lancedb.connect(str(state_index / "lancedb"))
    table = db.create_table("embeddings", schema=_schema.cache_schema())
    for start in range(0, len(rows), 2048):
        table.add(pa.Table.from_pylist(rows[start : start + 2048], schema=_schema.cache_schema()))
    return len(rows)


class Serve:
    """``vaultmem serve --vault V --port 0`` as a subprocess with the real model (the reliability
    suite's ``ServeProcess``); its URL from the banner, its token from the file the banner names."""

    def __init__(self, vault: Path, config_home: Path) -> None:
        from reliability._support import ServeProcess

        self.daemon = ServeProcess(vault, config_home, fake_embedder=False)
        self.process = self.daemon.process
        self.url, self.token = self.daemon.url, self.daemon.token

    def stop(self) -> None:
        """SIGTERM, as a supervisor stops it; every acknowledged write is committed first."""
        self.daemon.stop(timeout=300)


async def _write_rows(url: str, token: str, rows: list[NoteRecord], run: DaemonRun) -> None:
    from mcp_harness import mcp_client, structured

    async with mcp_client(url, token) as client:
        for note in rows:
            args = {"content": note.text, "kind": "reference", "title": note.title, "project": note.project}
            started = time.perf_counter()
            result = structured(await client.call_tool("memory_append", args))
            run.append_ms.append((time.perf_counter() - started) * 1000)
            run.stands_for.setdefault(result["id"], set()).add(note.id)


async def _ask(url: str, token: str, queries: Sequence[Query], run: DaemonRun) -> None:
    from mcp_harness import mcp_client, structured

    async with mcp_client(url, token) as client:
        for q in queries:
            args = {"query": q.text, "scope": "project", "project": q.project, "limit": K}
            started = time.perf_counter()
            result = structured(await client.call_tool("memory_search", args))
            run.search_ms.append((time.perf_counter() - started) * 1000)
            run.rankings[q.id] = [hit["id"] for hit in result["results"]]


class Spy:
    """``py-spy record`` of the daemon (a dev tool: ``pip install py-spy``), started when the
    questions start; writes a speedscope profile."""

    def __init__(self, pid: int, stem: Path) -> None:
        self.pid, self.stem = pid, stem
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        spy = str(Path(sys.executable).with_name("py-spy"))
        self.stem.parent.mkdir(parents=True, exist_ok=True)
        args = [spy, "record", "--pid", str(self.pid), "--rate", "200", "--idle", "--threads"]
        args += ["--format", "speedscope", "--output", f"{self.stem}.speedscope.json"]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self) -> None:
        if self.process is not None:
            self.process.wait(timeout=120)  # py-spy stops when the daemon exits


async def _drive(url: str, token: str, load: Load, run: DaemonRun, spy: Spy | None = None) -> None:
    started = time.perf_counter()
    for phase in load.phases:
        async with anyio.create_task_group() as group:
            for rows in phase:
                group.start_soon(_write_rows, url, token, rows, run)
    run.load_s = time.perf_counter() - started
    run.loadavg["after_load"] = os.getloadavg()[0]
    if spy is not None:
        spy.start()
    await _ask(url, token, load.dataset.queries, run)
    run.loadavg["after_search"] = os.getloadavg()[0]


def index_texts(load: Load, cache: CachedEmbedder) -> list[str]:
    """Every text the daemon's index will embed for ``load``: each note's windows, and the header
    of a short note its session writes right after a similar one (what
    ``vaultmem.index.note_vectors`` builds), predicted from the load's plan."""
    from vaultmem.index.note_vectors import HEADER_FLOOR, HEADER_WORDS, SHORT_WORDS, windows_of

    texts = [t for n in load.dataset.notes for t in windows_of(n)[0]]
    for phase in load.phases:
        for rows in phase:
            pairs = [(b, a) for a, b in itertools.pairwise(rows) if len(b.text.split()) < SHORT_WORDS]
            if not pairs:
                continue
            plain = cache.embed([embedding_text(x) for pair in pairs for x in pair])
            for n, (note, before) in enumerate(pairs):
                if float(plain[2 * n] @ plain[2 * n + 1]) >= HEADER_FLOOR:
                    texts.append(f"{embedding_text(note)}\n{' '.join(before.text.split()[:HEADER_WORDS])}")
    return texts


def through_daemon(
    load: Load, workdir: Path, cache: CachedEmbedder | None, *, profile: bool = False
) -> DaemonRun:
    """Load ``load`` into a fresh vault through a real daemon, ask its questions, stop it."""
    vault = uncapped_vault(workdir)
    run = DaemonRun(vault)
    if cache is not None:
        texts = index_texts(load, cache)
        seeded = _seed_embedding_cache(vault / ".vaultmem" / "index", texts, cache)
        print(f"{load.name}: seeded {seeded}/{len(set(texts))} embeddings from the cache", file=sys.stderr)
    run.loadavg["before"] = os.getloadavg()[0]
    daemon = Serve(vault, workdir / "config")
    stem = OUT / f"profile-{load.name.replace('/', '-').replace(' ', '-')}"
    spy = Spy(daemon.process.pid, stem) if profile else None
    try:
        anyio.run(_drive, daemon.url, daemon.token, load, run, spy)
    finally:
        daemon.stop()
        if spy is not None:
            spy.stop()
    print(
        f"{load.name}: {sum(map(len, run.stands_for.values()))} appends -> {len(run.stands_for)} notes "
        f"in {run.load_s:.0f} s; {len(run.rankings)} searches",
        file=sys.stderr,
    )
    return run


# ----------------------------------------------------------------------------- the legs, in process

SearchFn = Callable[[str, str, int], list[str]]


def legs_on_built_index(run: DaemonRun, dataset: Dataset, embedder: Embedder) -> dict[str, Any]:
    """Open the index the daemon built (after it stopped) and rank with each leg and the ungated
    hybrid; also how many MCP rankings the in-process hybrid reproduces exactly."""
    from vaultmem.index.note_index import NoteIndex

    index = NoteIndex(run.vault / ".vaultmem" / "index", embedder)
    try:
        unindexed = index.unindexed_rows()
        fns: dict[str, SearchFn] = {
            "BM25 leg": lambda t, p, k: [
                h.record.id for h in index.search_bm25(t, SearchFilters(project=p), k).hits
            ],
            "vector leg": lambda t, p, k: [
                h.record.id for h in index.search_vector(t, SearchFilters(project=p), k).hits
            ],
            "hybrid, gate off (in process)": lambda t, p, k: [
                h.record.id
                for h in index.searcher.search(t, SearchFilters(project=p), k, min_relevance=0).hits
            ],
        }
        rankings = {
            name: {q.id: fn(q.text, q.project, K) for q in dataset.queries} for name, fn in fns.items()
        }
        gated = {
            q.id: [
                h.record.id for h in index.searcher.search(q.text, SearchFilters(project=q.project), K).hits
            ]
            for q in dataset.queries
        }
    finally:
        index.close()
    same = sum(gated[q.id] == run.rankings[q.id] for q in dataset.queries)
    return {"rankings": rankings, "unindexed_rows_after_stop": unindexed, "mcp_reproduced": same}


# ----------------------------------------------------------------------------- reporting


def _ms_summary(samples: list[float]) -> dict[str, float]:
    return {"p50": round(pct(samples, 50), 1), "p95": round(pct(samples, 95), 1)}


def measure(
    load: Load, workdir: Path, cache: CachedEmbedder | None, embedder: Embedder, *, profile: bool = False
) -> dict[str, Any]:
    run = through_daemon(load, workdir, cache, profile=profile)
    legs = legs_on_built_index(run, load.dataset, embedder)
    rankings = {"memory_search (MCP)": run.rankings, **legs["rankings"]}
    scores = {name: evaluate_notes(r, run.stands_for, load.dataset) for name, r in rankings.items()}
    return {
        "load": load.name,
        "notes": len(run.stands_for),
        "rows": len(load.dataset.notes),
        "load_s": round(run.load_s, 1),
        "append_ms": _ms_summary(run.append_ms),
        "search_ms": _ms_summary(run.search_ms),
        "search_mean_ms": round(statistics.fmean(run.search_ms), 1),
        # the first and last 100 questions: what a fold or compaction after the load changes
        "search_first100_ms": _ms_summary(run.search_ms[:100]),
        "search_last100_ms": _ms_summary(run.search_ms[-100:]),
        "loadavg": {k: round(v, 2) for k, v in run.loadavg.items()},
        "unindexed_rows_after_stop": legs["unindexed_rows_after_stop"],
        "mcp_rankings_reproduced_in_process": f"{legs['mcp_reproduced']}/{len(load.dataset.queries)}",
        "scores": scores,
    }


def print_load(result: dict[str, Any]) -> None:
    name = result["load"]
    print(
        f"\n{name}: {result['rows']} rows -> {result['notes']} notes in {result['load_s']} s "
        f"(append p50 {result['append_ms']['p50']} ms); memory_search through MCP p50 "
        f"{result['search_ms']['p50']} ms, p95 {result['search_ms']['p95']} ms (first 100 p50 "
        f"{result['search_first100_ms']['p50']}, last 100 {result['search_last100_ms']['p50']}); "
        "load average "
        f"{result['loadavg']}; rows outside the id index after stop {result['unindexed_rows_after_stop']}; "
        f"in-process gated hybrid = MCP ranking for {result['mcp_rankings_reproduced_in_process']}\n"
    )
    cats = "cat1" in result["scores"]["memory_search (MCP)"]
    head = "| ranking | recall@5 | recall@10 | hit@5 | nDCG@10 |"
    if cats:
        head += " r@5 cat1 | cat2 | cat3 | cat4 | cat5 |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for ranking, groups in result["scores"].items():
        a = groups["all"]
        metrics = ("recall@5", "recall@10", "hit@5", "nDCG@10")
        line = f"| {ranking} | " + " | ".join(f"{a[m]:.3f}" for m in metrics) + " |"
        if cats:
            line += " " + " | ".join(f"{groups[f'cat{c}']['recall@5']:.3f}" for c in range(1, 6)) + " |"
        print(line)


def target_table(results: dict[str, dict[str, Any]], extra: dict[str, Any]) -> None:
    def fig(load: str, ranking: str, metric: str) -> float | None:
        found = results.get(load)
        return None if found is None else float(found["scores"][ranking]["all"][metric])

    def show(value: float | None, fmt: str = "{:.3f}") -> str:
        return "–" if value is None else fmt.format(value)

    mcp = "memory_search (MCP)"
    inter, inter_bm25 = (
        fig("locomo/interleaved", mcp, "recall@5"),
        fig("locomo/interleaved", "BM25 leg", "recall@5"),
    )
    sci = results.get("scifact")
    rows = [
        (
            "LoCoMo recall@5, each conversation in order",
            show(fig("locomo/in order", mcp, "recall@5")),
            "≥ 0.75",
        ),
        ("LoCoMo recall@5, four writers interleaved", show(inter), "≥ 0.68"),
        ("SciFact nDCG@10", show(fig("scifact", mcp, "nDCG@10")), "≥ 0.75"),
        (
            "hybrid − BM25 leg, recall@5, interleaved",
            show(None if inter is None or inter_bm25 is None else inter - inter_bm25, "{:+.3f}"),
            "≥ +0.10",
        ),
        ("search p50, 10k synthetic short notes, in process", extra.get("synthetic_p50", "–"), "≤ 12 ms"),
        (
            "search p50 through MCP, SciFact's 5,183 abstracts in one project, right after loading them",
            "–" if sci is None else f"{sci['search_ms']['p50']} ms (p95 {sci['search_ms']['p95']} ms)",
            "≤ 15 ms",
        ),
        ("reindex throughput vs raw embedder (with chunks)", extra.get("reindex", "–"), "≥ 90%"),
    ]
    print("\nTargets (issue 15)\n")
    print("| figure | this run | target |")
    print("|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


# ----------------------------------------------------------------------------- extras


def synthetic_search_p50(size: int = 10_000, queries: int = 300) -> str:
    """In-process ``Memory.search`` p50 over the scale benchmark's synthetic vault (scope all)."""
    import synthetic

    from vaultmem.config import Settings
    from vaultmem.memory import Memory
    from vaultmem.operations.search import SearchRequest

    with tempfile.TemporaryDirectory(prefix="vaultmem-retrieval-synth-") as tmp:
        vault = Path(tmp) / "vault"
        synthetic.write_vault(vault, size)
        cached = CachedEmbedder(OnnxEmbedder())
        runtime = Memory(Settings.resolve(vault), embedder=cached)
        runtime.reconcile()
        parts(runtime).index.wait_for_writes()
        cached.save()
        parts(runtime).index.maintenance()
        texts = synthetic.queries(queries + 20)
        for q in texts[:20]:
            runtime.search(SearchRequest(q, limit=10))
        samples = []
        for q in texts[20:]:
            started = time.perf_counter()
            runtime.search(SearchRequest(q, limit=10))
            samples.append((time.perf_counter() - started) * 1000)
        runtime.close()
    return f"{pct(samples, 50):.1f} ms (p95 {pct(samples, 95):.1f} ms, load {os.getloadavg()[0]:.1f})"


def reindex_ratio(pages: int) -> str:
    """``benchmarks/reindex_long.py``: pages of 500-2,000 words against the raw embedder."""
    from reindex_long import measure as reindex_long

    found = reindex_long(pages)
    loads = found["load average (start, before reindex, after reindex, end)"]
    print(json.dumps(found), file=sys.stderr)
    return (
        f"{100 * found['ratio']:.1f}% of wall time, {100 * found['ratio by CPU time']:.1f}% of CPU time "
        f"({found['reindex chunks/s']} vs {found['raw chunks/s']} chunks/s, {pages} pages, "
        f"{found['chunks']} chunks, load {loads})"
    )


class _StepClock:
    """The service's clock, set to each corpus row's timestamp before it is appended."""

    def __init__(self) -> None:
        self.now = datetime(2000, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def stamped(dataset: Dataset, embedder: Embedder) -> dict[str, Any]:
    """The old protocol (a labelled extra): in process, one ``Memory``, each row appended under a
    service clock set to the row's own date (LoCoMo: session date + turn seconds; SciFact: one
    second apart), so the time-adjacency step sees each session as written on its day."""
    from vaultmem.config import Settings
    from vaultmem.memory import Memory
    from vaultmem.operations.search import SearchRequest

    clock = _StepClock()
    with tempfile.TemporaryDirectory() as tmp:
        root = uncapped_vault(Path(tmp))
        runtime = Memory(Settings.resolve(root, durable=False), embedder=embedder, clock=clock)
        stands_for: dict[str, set[str]] = {}
        for note in dataset.notes:
            clock.now = datetime.fromisoformat(note.created)
            result = runtime.append(note.text, kind="reference", title=note.title, project=note.project)
            stands_for.setdefault(result["id"], set()).add(note.id)
        parts(runtime).index.wait_for_writes()
        parts(runtime).index.maintenance()
        runs = {
            q.id: [
                r["id"]
                for r in runtime.search(SearchRequest(q.text, scope="project", project=q.project, limit=K))[
                    "results"
                ]
            ]
            for q in dataset.queries
        }
        runtime.close()
    return {
        "load": f"{dataset.name}/stamped clock",
        "scores": {"memory_search": evaluate_notes(runs, stands_for, dataset)},
    }


# ----------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only",
        choices=["locomo-in-order", "locomo-interleaved", "scifact"],
        action="append",
        help="run only these loads",
    )
    parser.add_argument("--cold", action="store_true", help="do not seed the daemon's embedding cache")
    parser.add_argument("--skip-extras", action="store_true", help="skip the 10k synthetic and reindex rows")
    parser.add_argument(
        "--reindex-pages",
        type=int,
        default=1000,
        help="pages of the reindex throughput row (reindex_long.py)",
    )
    parser.add_argument("--stamped", action="store_true", help="also run the old stamped-clock protocol")
    parser.add_argument(
        "--conversations", type=int, help="only the first N LoCoMo conversations (a quick check)"
    )
    parser.add_argument("--keep", type=Path, help="keep each load's vault under this new folder")
    parser.add_argument(
        "--profile", action="store_true", help="sample the daemon with py-spy while it answers"
    )
    parser.add_argument(
        "--json", type=Path, default=OUT / "retrieval.json", help="where to write the figures"
    )
    args = parser.parse_args()

    real = OnnxEmbedder()
    cache = CachedEmbedder(real)
    locomo, scifact = load_locomo(), load_scifact()
    if args.conversations:
        locomo = first_conversations(locomo, args.conversations)
    plans = {
        "locomo-in-order": lambda: locomo_in_order(locomo),
        "locomo-interleaved": lambda: locomo_interleaved(locomo),
        "scifact": lambda: scifact_load(scifact),
    }
    keys = args.only or list(plans)
    # Warm the benchmark's own cache for every text the index embeds and every question (the first
    # run embeds them).
    for key in keys:
        load = plans[key]()
        cache.embed(index_texts(load, cache))
        cache.embed([q.text for q in load.dataset.queries])
        cache.save()
    report: dict[str, Any] = {"machine": machine(), "started": datetime.now(UTC).isoformat(), "loads": {}}
    for key in keys:
        load = plans[key]()
        if args.keep:  # the vault and index stay for a closer look (benchmarks/search_time.py)
            workdir = args.keep / key
            workdir.mkdir(parents=True, exist_ok=False)
            result = measure(load, workdir, None if args.cold else cache, cache, profile=args.profile)
        else:
            with tempfile.TemporaryDirectory(prefix="vaultmem-retrieval-") as tmp:
                result = measure(load, Path(tmp), None if args.cold else cache, cache, profile=args.profile)
        report["loads"][load.name] = result
        print_load(result)
        sys.stdout.flush()
    extra: dict[str, Any] = {}
    if not args.skip_extras:
        extra["synthetic_p50"] = synthetic_search_p50()
        extra["reindex"] = reindex_ratio(args.reindex_pages)
    report["extra"] = extra
    if args.stamped:
        report["stamped"] = [stamped(d, cache) for d in (locomo, scifact)]
        for found in report["stamped"]:
            print_load_simple(found)
    target_table(report["loads"], extra)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1, default=sorted), encoding="utf-8")


def first_conversations(dataset: Dataset, n: int) -> Dataset:
    keep = list(dict.fromkeys(note.project for note in dataset.notes))[:n]
    queries = [q for q in dataset.queries if q.project in keep]
    notes = [note for note in dataset.notes if note.project in keep]
    return Dataset(dataset.name, notes, queries, {q.id: dataset.qrels[q.id] for q in queries})


def print_load_simple(result: dict[str, Any]) -> None:
    a = result["scores"]["memory_search"]["all"]
    print(
        f"\n{result['load']} (extra, not the protocol): recall@5 {a['recall@5']:.3f}, recall@10 "
        f"{a['recall@10']:.3f}, hit@5 {a['hit@5']:.3f}, nDCG@10 {a['nDCG@10']:.3f}"
    )


if __name__ == "__main__":
    main()
