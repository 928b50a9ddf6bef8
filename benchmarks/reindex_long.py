"""Reindex throughput on long notes (issue 16 item 5, issue 15's chunks): a vault of pages of
500-2,000 words, reindexed with the real model, against the raw embedder on the same chunks.

    .venv/bin/python benchmarks/reindex_long.py                # 1,000 pages
    .venv/bin/python benchmarks/reindex_long.py --pages 200    # a quicker look

The pages are SciFact abstracts (../shared/bench) run together into pages of 500-2,000 words
(lengths drawn uniformly, seeded), written as Markdown files a person could have written (a
title in frontmatter and a body, no vaultmem keys) and committed once. The **reindex** is
``Memory.reindex()`` on that vault from a fresh state folder, the model loaded and warmed first
(what ``vaultmem reindex`` runs, without the process start), until every note is stored and
every window embedded. The **raw embedder** is ``OnnxEmbedder.embed`` of exactly the texts the
index embeds (each page's windows, :func:`vaultmem.index.note_vectors.windows_of`) in one call,
timed before and after the reindex and averaged, so both see the same machine. Throughput is
chunks (windows) per second of wall time, and per CPU second of the process (on a shared machine
the wall-time ratio moves with the other jobs' load; the CPU-time one shows the reindex's own
overhead beside the model).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (str(ROOT), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from _bench_data import OUT, load_scifact  # noqa: E402
from _common import machine, parts  # noqa: E402

from vaultmem.index.records import NoteRecord  # noqa: E402


def pages(count: int, seed: int = 16) -> list[tuple[str, str]]:
    """``count`` (title, body) pages of 500-2,000 words made of SciFact abstracts in corpus order."""
    abstracts = [n.text.strip() for n in load_scifact().notes]
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    at = 0
    for n in range(count):
        want = rng.randint(500, 2000)
        paragraphs: list[str] = []
        words = 0
        while words < want:
            text = abstracts[at % len(abstracts)]
            at += 1
            paragraphs.append(text)
            words += len(text.split())
        body = "\n\n".join(paragraphs)
        cut = body.split()[:want]
        out.append((f"Reading notes {n + 1}", " ".join(cut)))
    return out


def write_vault(root: Path, count: int) -> list[tuple[str, str]]:
    from _common import uncapped_vault

    vault = uncapped_vault(root)
    made = pages(count)
    folder = vault / "reading"
    folder.mkdir()
    for n, (title, body) in enumerate(made):
        (folder / f"page-{n:04d}.md").write_text(f"---\ntitle: {title}\n---\n{body}\n", encoding="utf-8")
    os.system(f"cd {vault} && git add -A && git -c user.name=b -c user.email=b@b commit -qm pages")
    return made


def measure(count: int) -> dict[str, Any]:
    from vaultmem.config import Settings
    from vaultmem.index.embedder import OnnxEmbedder
    from vaultmem.index.note_vectors import windows_of
    from vaultmem.memory import Memory

    with tempfile.TemporaryDirectory(prefix="vaultmem-reindex-long-") as tmp:
        made = write_vault(Path(tmp), count)
        vault = Path(tmp) / "vault"
        texts: list[str] = []
        for title, body in made:  # what the index will embed (checked against its records below)
            texts.extend(windows_of(_record(title, body + "\n"))[0])
        raw = OnnxEmbedder()
        raw.embed(["warm up"])
        loads = [os.getloadavg()[0]]
        started, cpu = time.perf_counter(), time.process_time()
        raw.embed(texts)
        raw_first, raw_cpu = time.perf_counter() - started, time.process_time() - cpu
        memory = Memory(Settings.resolve(vault, commit_quiet_period=1.0))
        index = parts(memory).index
        index.embedder.embed(["warm up"])
        loads.append(os.getloadavg()[0])
        started, cpu = time.perf_counter(), time.process_time()
        report, rows = memory.reindex()
        reindex_s, reindex_cpu = time.perf_counter() - started, time.process_time() - cpu
        embedded = report.embedded
        indexed_texts = [t for r in index.iter_records() for t in windows_of(r)[0]]
        memory.close()
        if sorted(indexed_texts) != sorted(texts):
            print("warning: the raw pass embedded other texts than the index", file=sys.stderr)
        loads.append(os.getloadavg()[0])
        started = time.perf_counter()
        raw.embed(indexed_texts)
        raw_second = time.perf_counter() - started
        loads.append(os.getloadavg()[0])
    raw_rate = (len(texts) / raw_first + len(indexed_texts) / raw_second) / 2
    words = [len(b.split()) for _, b in made]
    return {
        "machine": machine(),
        "pages": count,
        "rows": rows,
        "words per page": {"min": min(words), "mean": round(sum(words) / len(words)), "max": max(words)},
        "chunks": len(indexed_texts),
        "chunks embedded by the reindex": embedded,
        "reindex s": round(reindex_s, 1),
        "reindex chunks/s": round(embedded / reindex_s, 1),
        "raw embedder s (before, after)": [round(raw_first, 1), round(raw_second, 1)],
        "raw chunks/s": round(raw_rate, 1),
        "ratio": round(embedded / reindex_s / raw_rate, 3),
        # CPU seconds of this process (every thread): what the reindex costs beside the model,
        # unmoved by what else the machine runs.
        "reindex CPU s": round(reindex_cpu, 1),
        "raw embedder CPU s (before)": round(raw_cpu, 1),
        "ratio by CPU time": round((embedded / reindex_cpu) / (len(texts) / raw_cpu), 3),
        "load average (start, before reindex, after reindex, end)": [round(x, 2) for x in loads],
    }


def _record(title: str, body: str) -> NoteRecord:
    return NoteRecord(
        id="", path="", slug="", title=title, kind="", status="", project=None, tags=(),
        text=body, content_hash="", created="", updated="",
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--json", type=Path, default=OUT / "reindex_long.json")
    args = parser.parse_args()
    found = measure(args.pages)
    print(json.dumps(found, indent=1))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(found, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
