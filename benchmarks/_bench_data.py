"""The retrieval benchmarks' data and scoring: LoCoMo and SciFact (../shared/bench), an on-disk
embedding cache, and recall/nDCG over rankings of notes that may each stand for several corpus rows.

The data is read from ``../shared/bench`` and never copied into the repository (both sets are
licensed for non-commercial use). Embeddings are cached under ``benchmarks/out/`` (git-ignored).
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt

from vaultmem.index.embedder import Embedder
from vaultmem.index.records import NoteRecord

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT.parent / "shared" / "bench"
OUT = Path(__file__).resolve().parent / "out"

#: The filing contract's title limit; a few SciFact titles are longer and are cut at a word.
TITLE_LIMIT = 200


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

    def cached(self, text: str) -> npt.NDArray[np.float32] | None:
        """The cached vector of ``text``, or None (nothing is embedded)."""
        row = self._keys.get(self._key(text))
        return None if row is None else self._rows[row]

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
    """Corpus rows as notes (``created`` is the row's own date: used only by the stamped-clock
    extra and the in-process lab), the questions and their relevant corpus ids."""

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


def note_title(title: str) -> str:
    """The title a note gets: the corpus title, cut at a word to the contract's limit."""
    return title if len(title) <= TITLE_LIMIT else title[:TITLE_LIMIT].rsplit(" ", 1)[0]


def _note(doc_id: str, title: str, text: str, project: str, created: datetime) -> NoteRecord:
    stamp = created.isoformat()
    body = text if text.endswith("\n") else text + "\n"  # as the vault stores a body
    return NoteRecord(
        id=doc_id,
        path=f"{project}/{doc_id.replace(':', '-')}.md",
        slug=doc_id.replace(":", "-").lower(),
        title=note_title(title),
        kind="reference",
        status="active",
        project=project,
        tags=(),
        text=body,
        content_hash=hashlib.sha256(f"{title}\n{body}".encode()).hexdigest(),
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


def score_groups(ranked: Sequence[set[str]], relevant: set[str]) -> dict[str, float]:
    """recall@k counts the relevant corpus ids the top k notes stand for; a note is a hit for
    hit@5 and nDCG@10 when it stands for any relevant id (ideal DCG over ``min(|relevant|, 10)``)."""
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


def evaluate_notes(
    runs: dict[str, list[str]], stands_for: dict[str, set[str]], dataset: Dataset
) -> dict[str, dict[str, float]]:
    """Mean metrics overall (``all``) and per LoCoMo category (``cat1``..``cat5``), for rankings of
    note ids (``stands_for`` maps a note to the corpus ids it holds; unknown ids stand for themselves)."""
    groups: dict[str, list[dict[str, float]]] = {}
    for q in dataset.queries:
        m = score_groups([stands_for.get(i, {i}) for i in runs[q.id]], dataset.qrels[q.id])
        groups.setdefault("all", []).append(m)
        if q.category:
            groups.setdefault(f"cat{q.category}", []).append(m)
    return {
        g: {metric: statistics.fmean(m[metric] for m in ms) for metric in ms[0]} for g, ms in groups.items()
    }
