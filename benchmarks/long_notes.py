"""Do long notes crowd out the right answers? A diagnostic lab, in process (not the MCP protocol).

    .venv/bin/python benchmarks/long_notes.py --windows 50,300          # 0, then 6 long notes of each size
    .venv/bin/python benchmarks/long_notes.py --windows 300 --gate     # also the shown score and the gate
    .venv/bin/python benchmarks/long_notes.py --windows 300 --holding 300  # also long notes holding answers

A person's vault holds a few very long notes (a journal, a meeting log, pasted pages). A long note
is searched by every window of it (the vector leg takes its best window, ``chunk_matrix``): the
more windows, the more chances one of them lands close to any query by chance, so a note of 2,000
windows may top queries it has nothing to do with (found in a helper's vault: a 1.9 MB note of
2,362 windows topped most of its queries).

What this measures: SciFact's 5,183 abstracts as notes (embeddings from ``benchmarks/out/``), and
``--long`` notes made of sentences drawn at random from the abstracts no test query is judged
against (so every long note is wrong for every query, by the qrels), of ``--windows`` sizes in
turn. For each set it ranks the 300 test queries with ``NoteIndex.search`` (hybrid, the shipped
fusion, gate off) and prints nDCG@10, and how often a long note is in the top 1 / top 10. With
``--gate``: the same with the relevance gate, the share of first hits whose shown score is >= 0.5
and how many of them are right, and off-topic questions (LoCoMo's, about people's chats) against
this science corpus. With ``--holding``: the other side, long notes that hold a query's answer at
their end must still be found. Results and what was tried: docs/benchmarks.md, "Long notes".
The long notes' windows are embedded once and cached in ``benchmarks/out/embcache-long-notes``.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (str(ROOT), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
from _bench_data import OUT, CachedEmbedder, Dataset, evaluate_notes, load_locomo, load_scifact  # noqa: E402

from vaultmem.index.embedder import OnnxEmbedder  # noqa: E402
from vaultmem.index.note_index import NoteIndex  # noqa: E402
from vaultmem.index.records import NoteRecord, SearchFilters  # noqa: E402

#: Words in a window (the chunker's windows are ~256 tokens; ~190 words of these abstracts).
WORDS_PER_WINDOW = 190


class TwoCaches:
    """Vectors from ``shared`` when it has them, else from (and saved to) a cache of its own."""

    def __init__(self, shared: CachedEmbedder, own: Path) -> None:
        self.shared = shared
        self.own = CachedEmbedder(shared.inner, own)
        self.model_id, self.dim = shared.model_id, shared.dim

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        known = [self.shared.cached(t) for t in texts]
        missing = [t for t, v in zip(texts, known, strict=True) if v is None]
        fresh = iter(self.own.embed(missing)) if missing else iter(())
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([v if v is not None else next(fresh) for v in known]).astype(np.float32)

    def save(self) -> None:
        self.own.save()


def long_notes(count: int, windows: int, pool: list[str], seed: int) -> list[NoteRecord]:
    rng = random.Random(seed)
    sentences = [s for text in pool for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) > 4]
    out = []
    for n in range(count):
        words: list[str] = []
        picked: list[str] = []
        while len(words) < windows * WORDS_PER_WINDOW:
            s = rng.choice(sentences)
            picked.append(s)
            words.extend(s.split())
        text = " ".join(picked)
        out.append(
            NoteRecord(
                id=f"long-{windows}-{n}",
                path=f"journal/long-{windows}-{n}.md",
                slug=f"long-{windows}-{n}",
                title=f"Journal {n}",
                kind="note",
                status="active",
                project="scifact",
                tags=(),
                text=text,
                content_hash=f"long-{windows}-{n}-{seed}",
                created="2025-06-01T10:00:00+00:00",
                updated="2025-06-01T10:00:00+00:00",
            )
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--long", type=int, default=6, help="long notes per size (default 6)")
    parser.add_argument("--holding", type=int, default=0, metavar="WINDOWS",
                        help="also: answers at the end of long notes of this many windows")  # fmt: skip
    parser.add_argument(
        "--gate", action="store_true", help="also: with the relevance gate, and off-topic questions"
    )
    parser.add_argument("--windows", default="1000", help="window counts of the long notes, comma-separated")
    args = parser.parse_args()
    dataset = load_scifact()
    off_topic = [q.text for q in load_locomo().queries[:300]] if args.gate else []
    judged = set().union(*dataset.qrels.values())
    pool = [r.text for r in dataset.notes if r.id not in judged]
    # The abstracts' vectors from the shared cache (never saved here: other runs may be writing
    # it), the long notes' windows from a cache of this lab's own.
    cache = TwoCaches(CachedEmbedder(OnnxEmbedder()), OUT / "embcache-long-notes")
    with tempfile.TemporaryDirectory(prefix="vaultmem-long-") as tmp:
        index = NoteIndex(Path(tmp) / "index", cache)
        for start in range(0, len(dataset.notes), 512):
            index.upsert(dataset.notes[start : start + 512])
        index.wait_for_writes()
        sizes = [0] + [int(w) for w in args.windows.split(",")]
        held: list[str] = []
        for windows in sizes:
            if held:  # one size at a time
                index.delete_ids(held)
            if windows:
                started = time.perf_counter()
                notes = long_notes(args.long, windows, pool, seed=windows)
                held = [r.id for r in notes]
                index.upsert(notes)
                index.wait_for_writes()
                cache.save()
                took = time.perf_counter() - started
                print(f"{args.long} notes of ~{windows} windows embedded in {took:.0f} s")
            runs: dict[str, list[str]] = {}
            top1 = top10 = 0
            for q in dataset.queries:
                hits = index.search(q.text, SearchFilters(project="scifact"), 10, min_relevance=0).hits
                ids = [h.record.id for h in hits]
                runs[q.id] = ids
                top1 += bool(ids) and ids[0].startswith("long-")
                top10 += any(i.startswith("long-") for i in ids)
            scores = evaluate_notes(runs, {}, dataset)["all"]
            n = len(dataset.queries)
            print(
                f"{args.long if windows else 0} long notes of ~{windows} windows: "
                f"nDCG@10 {scores['nDCG@10']:.4f}, a long note first in {top1}/{n}, "
                f"in the top 10 of {top10}/{n}",
                flush=True,
            )
            if args.gate:
                gated(index, dataset, off_topic)
        if args.holding:
            holding(index, dataset, pool, args.holding, held)
        index.close()


def gated(index: NoteIndex, dataset: Dataset, off_topic: list[str]) -> None:
    """With the shipped relevance gate (``min_relevance`` left to the index's default): SciFact's
    nDCG@10, and off-topic questions (LoCoMo's, about people's chats) against this science
    corpus, where every hit is wrong: how many get any hit, and how many a long note first."""
    runs: dict[str, list[str]] = {}
    tops: list[
        tuple[float, bool]
    ] = []  # the first hit's score as memory_search shows it, and whether it is right
    for q in dataset.queries:
        hits = index.search(q.text, SearchFilters(project="scifact"), 10).hits
        runs[q.id] = [h.record.id for h in hits]
        if hits:
            tops.append((hits[0].calibrated or 0.0, hits[0].record.id in dataset.qrels[q.id]))
    answered = long_first = 0
    wrong: list[float] = []
    for text in off_topic:
        hits = index.search(text, SearchFilters(project="scifact"), 10).hits
        answered += bool(hits)
        long_first += bool(hits) and hits[0].record.id.startswith(("long-", "holds-"))
        if hits:
            wrong.append(hits[0].calibrated or 0.0)
    sure = [right for score, right in tops if score >= 0.5]
    ndcg = evaluate_notes(runs, {}, dataset)["all"]["nDCG@10"]
    median = statistics.median(wrong) if wrong else 0.0
    print(
        f"   gated: nDCG@10 {ndcg:.4f}; first hits scoring >= 0.5: {len(sure)}/{len(tops)}, "
        f"right {sum(sure)}; "
        f"off-topic questions with a hit {answered}/{len(off_topic)}, a long note first {long_first}, "
        f"their first hit's score median {median:.3f}, >= 0.5 in {sum(w >= 0.5 for w in wrong)}",
        flush=True,
    )


def holding(index: NoteIndex, dataset: Dataset, pool: list[str], windows: int, held: list[str]) -> None:
    """The other side: a long note that holds a query's answer must still be found. For the first
    60 queries with one relevant abstract, the abstract is moved to the end of a long note of
    ``windows`` windows of unrelated sentences (the note stands for it), and nDCG@10 of those
    queries is printed (against the same queries with the abstract as a note of its own)."""
    if held:
        index.delete_ids(held)
    queries = [q for q in dataset.queries if len(dataset.qrels[q.id]) == 1][:60]
    by_id = {r.id: r for r in dataset.notes}

    def ndcg() -> float:
        runs = {}
        for q in queries:
            hits = index.search(q.text, SearchFilters(project="scifact"), 10, min_relevance=0).hits
            runs[q.id] = [h.record.id for h in hits]
        sub = Dataset(dataset.name, dataset.notes, queries, dataset.qrels)
        return evaluate_notes(runs, stands_for, sub)["all"]["nDCG@10"]

    stands_for: dict[str, set[str]] = {}
    alone = ndcg()
    base = long_notes(1, windows, pool, seed=windows)[0]
    moved = []
    for q in queries:
        (doc,) = dataset.qrels[q.id]
        if doc not in by_id or f"holds-{doc}" in stands_for:
            continue
        note = base.but(id=f"holds-{doc}", path=f"journal/holds-{doc}.md", slug=f"holds-{doc}",
                        text=f"{base.text} {by_id[doc].text}", content_hash=f"holds-{doc}")  # fmt: skip
        moved.append(note)
        stands_for[note.id] = {doc}
    index.delete_ids([stands_for_doc for n in moved for stands_for_doc in stands_for[n.id]])
    started = time.perf_counter()
    index.upsert(moved)
    index.wait_for_writes()
    print(f"{len(moved)} long notes holding an answer embedded in {time.perf_counter() - started:.0f} s")
    print(
        f"{len(moved)} queries whose one relevant abstract is the end of a note of ~{windows} windows: "
        f"nDCG@10 {ndcg():.4f} (the abstract as a note of its own: {alone:.4f})",
        flush=True,
    )


if __name__ == "__main__":
    main()
