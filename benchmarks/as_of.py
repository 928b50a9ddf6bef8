"""Time travel (`as_of`, issue 18): a vault of 10k notes with 3 versions each, searched in the past.

    .venv/bin/python benchmarks/as_of.py                     # 10k notes x 3 versions
    .venv/bin/python benchmarks/as_of.py --notes 2000 --skip-cold

The history is the synthetic scale vault's notes (``synthetic.py``), each written, then rewritten
twice with other texts (5% forgotten in their last version), one version per commit as an agent's
writes land: 30,000 commits a minute apart, made with ``git fast-import``. The index is then built
as a daemon that wrote them would hold it: the present notes in the notes table and every text ever
written in the embedding cache (vectors from the benchmarks' on-disk cache after the first run).

A fresh process (so RSS and start are its own) then opens the vault with the real model and
measures: the start (open + reconcile), the present search for comparison, the first ``as_of``
search (which reads the whole history from git: the versioned store is built on first use), RSS
before and after, warm ``as_of`` searches at random moments through ``memory_search``, through
``memory_recall`` search and get, and by commit id, and the first ``as_of`` after 100 new commits.
A third process then opens the vault after that one closed: its first ``as_of`` restores the
snapshot of the versions the second left in the state directory (what every later process pays).
With the embedding cache cold (``--skip-cold`` skips it: a clone, a deleted state directory), the
first ``as_of`` answers before the 20,000 past texts are embedded, and the background embedding
is timed to its end. Figures go to ``benchmarks/out/as_of.json``; the machine's load is printed
with every figure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

import synthetic  # noqa: E402
from _common import machine, parts, pct  # noqa: E402

OUT = HERE / "out"
STEP_S = 60
#: The first version's commit time: after the vault's own first commits (made now), as a history is.
FIRST_COMMIT = int(time.time()) + 3600


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _ms(samples: list[float]) -> dict[str, float]:
    return {"p50": round(pct(samples, 50), 2), "p95": round(pct(samples, 95), 2), "load": _load()}


def first_answer(memory: Any, request: Any) -> dict[str, Any]:
    """The first `as_of` search of a process, asked again as an agent would while it is a 503
    ("still being read"): seconds to the answer, and how many 503s came first."""
    from vaultmem.errors import IndexError_

    t0 = time.perf_counter()
    refused = 0
    while True:
        try:
            result = memory.search(request)
            break
        except IndexError_:
            refused += 1
            time.sleep(1.0)
    return {"seconds": round(time.perf_counter() - t0, 2), "503s": refused, "hits": len(result["results"])}


def versions_of(i: int) -> list[tuple[str, str]]:
    """(markdown, embedded text) of the three versions of note ``i``."""
    base = synthetic.note(i)
    rng = random.Random(7_000_003 + i)
    out = []
    body = base.body
    for version in range(3):
        if version:
            body = f"{base.body} " + synthetic._fill(rng.choice(synthetic.FOLLOW_UPS), rng)
            body += f" Revision {version}: " + synthetic._fill(
                rng.choice(synthetic.TEMPLATES[base.kind]), rng
            )
        note = synthetic.SyntheticNote(
            base.id, base.rel, base.title, base.kind, base.project, base.created, body
        )
        text = note.markdown()
        if version == 2 and rng.random() < 0.05:
            text = text.replace("status: active\n", "status: deleted\ndeleted_at: '2024-02-01T00:00:00Z'\n")
        out.append((text, note.embedded_text))
    return out


def write_history(root: Path, size: int) -> tuple[list[str], dict[int, list[str]]]:
    """The vault with ``size`` notes x 3 versions, one commit per version (fast-import); returns the
    texts every version embeds and the note texts by number."""
    from vaultmem.vault.init import init_vault

    init_vault(root)
    contract = root / "filing.yaml"
    contract.write_text(
        contract.read_text(encoding="utf-8").replace("daily_write_cap: 200", "daily_write_cap: 10000000"),
        encoding="utf-8",
    )
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qam", "cap"], cwd=root)
    embedded: list[str] = []
    stream: list[bytes] = []
    when = FIRST_COMMIT
    first = True
    notes = {i: versions_of(i) for i in range(size)}
    for version in range(3):
        for i in range(size):
            text, emb = notes[i][version]
            embedded.append(emb)
            rel = synthetic.note(i).rel
            message = f"memory_store: {'create' if version == 0 else 'update'} note {i}".encode()
            content = text.encode("utf-8")
            stream.append(b"commit refs/heads/main\n")
            stream.append(f"committer vaultmem <vaultmem@localhost> {when} +0000\n".encode())
            stream.append(b"data %d\n%s\n" % (len(message), message))
            if first:
                stream.append(b"from refs/heads/main^0\n")
                first = False
            stream.append(f"M 100644 inline {rel}\n".encode())
            stream.append(b"data %d\n%s\n" % (len(content), content))
            when += STEP_S
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input=b"".join(stream), check=True)
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=root, check=True)
    return embedded, {i: [t for t, _ in v] for i, v in notes.items()}


def seed_index(root: Path, embedded: list[str], *, every_version: bool) -> None:
    """The index a daemon that wrote the history holds: present notes, and (``every_version``)
    every text ever written in its embedding cache."""
    from _bench_data import CachedEmbedder

    from vaultmem.config import Settings
    from vaultmem.index.embedder import OnnxEmbedder
    from vaultmem.index.records import text_hash
    from vaultmem.memory import Memory

    cached = CachedEmbedder(OnnxEmbedder())
    memory = Memory(Settings.resolve(root), embedder=cached)
    memory.reconcile()
    index = parts(memory).index
    index.wait_for_writes()
    if every_version:
        texts = {text_hash(t): t for t in embedded}
        keys = list(texts)
        for start in range(0, len(keys), 2048):
            index.vectors_of({k: texts[k] for k in keys[start : start + 2048]}, embed=True)
    index.maintenance()
    memory.close()
    cached.save()


def measure(root: Path, size: int, n_queries: int, cold: bool) -> dict[str, Any]:
    """In this (fresh) process: start, present search, first and warm `as_of` reads, RSS."""
    from vaultmem.config import Settings
    from vaultmem.errors import NotFound
    from vaultmem.memory import Memory, SearchRequest, SearchSpec
    from vaultmem.sync.mainline import head_of, main_line

    out: dict[str, Any] = {"notes": size, "versions": 3 * size, "cold_cache": cold, "load_before": _load()}
    rss0 = _rss_mb()
    started = time.perf_counter()
    memory = Memory(Settings.resolve(root))
    memory.reconcile()
    out["start_s"] = round(time.perf_counter() - started, 2)
    queries = synthetic.queries(3 * n_queries + 30)
    for q in queries[:10]:
        memory.search(SearchRequest(q, limit=10))  # the model warm, as in a running daemon
    out["rss_open_mb"] = round(_rss_mb() - rss0, 1)
    samples = []
    for q in queries[10 : 10 + n_queries]:
        t0 = time.perf_counter()
        memory.search(SearchRequest(q, limit=10))
        samples.append((time.perf_counter() - t0) * 1000)
    out["present_search_ms"] = _ms(samples)

    ctx = parts(memory)
    t0 = time.perf_counter()
    line = main_line(ctx.repo, head_of(ctx.repo))
    out["git_log_s"] = {"seconds": round(time.perf_counter() - t0, 2), "commits": len(line), "load": _load()}
    del line
    rss1 = _rss_mb()
    middle = FIRST_COMMIT + STEP_S * int(1.5 * size)
    out["first_as_of_s"] = first_answer(
        memory, SearchRequest(queries[10 + n_queries], limit=10, as_of=_iso(middle))
    )
    out["first_as_of_s"]["load"] = _load()
    out["rss_store_mb"] = round(_rss_mb() - rss1, 1)
    past = ctx.past
    if cold:
        t0 = time.perf_counter()
        while past.texts_to_embed():
            time.sleep(0.5)
        out["background_embedding_s"] = {"seconds": round(time.perf_counter() - t0, 1), "load": _load()}
        out["rss_with_vectors_mb"] = round(_rss_mb() - rss1, 1)

    rng = random.Random(5)
    last = FIRST_COMMIT + STEP_S * (3 * size)
    moments = [_iso(rng.randrange(FIRST_COMMIT, last)) for _ in range(n_queries)]
    offset = 11 + n_queries
    samples = []
    for q, when in zip(queries[offset : offset + n_queries], moments, strict=True):
        t0 = time.perf_counter()
        memory.search(SearchRequest(q, limit=10, as_of=when))
        samples.append((time.perf_counter() - t0) * 1000)
    out["as_of_search_ms"] = _ms(samples)
    samples = []
    for q, when in zip(queries[offset + n_queries : offset + 2 * n_queries], moments, strict=True):
        spec = SearchSpec(q, statuses=frozenset({"active"}), as_of=when)
        t0 = time.perf_counter()
        memory.recall_search(spec)
        samples.append((time.perf_counter() - t0) * 1000)
    out["as_of_recall_search_ms"] = _ms(samples)
    commits = ctx.repo.git("rev-list", "--first-parent", "HEAD").split()
    ids = [synthetic.note(rng.randrange(size)).id for _ in range(n_queries)]
    samples = []
    for note_id, commit in zip(ids, rng.sample(commits, n_queries), strict=True):
        t0 = time.perf_counter()
        with contextlib.suppress(NotFound):  # a note that did not exist (or was forgotten) then
            memory.recall_get(note_id, as_of=commit[:12])
        samples.append((time.perf_counter() - t0) * 1000)
    out["as_of_get_by_commit_ms"] = _ms(samples)

    for i in range(100):
        memory.append(f"Benchmark append {i}: {synthetic.note(20_000_000 + i).body}", "reference")
    memory.flush()
    t0 = time.perf_counter()
    memory.search(SearchRequest("benchmark append", limit=10, as_of="2100-01-01T00:00:00Z"))
    out["as_of_after_100_commits_ms"] = {"ms": round((time.perf_counter() - t0) * 1000, 1), "load": _load()}
    memory.close()
    out["load_after"] = _load()
    return out


def _iso(stamp: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp))


def restored(root: Path, n_queries: int) -> dict[str, Any]:
    """In this (fresh) process, after a process that read the past closed: the first `as_of` read
    restores the snapshot that process left, then the reads after it."""
    from vaultmem.config import Settings
    from vaultmem.memory import Memory, SearchRequest

    snapshot = root / ".vaultmem" / "past.jsonl"
    out: dict[str, Any] = {"load_before": _load(), "snapshot_mb": round(snapshot.stat().st_size / 2**20, 1)}
    memory = Memory(Settings.resolve(root))
    memory.reconcile()
    queries = synthetic.queries(n_queries + 11)
    memory.search(SearchRequest(queries[0], limit=10))
    rss = _rss_mb()
    out["first_as_of_s"] = first_answer(
        memory, SearchRequest(queries[1], limit=10, as_of="2100-01-01T00:00:00Z")
    )
    out["first_as_of_s"]["load"] = _load()
    out["rss_store_mb"] = round(_rss_mb() - rss, 1)
    samples = []
    for q in queries[11:]:
        t0 = time.perf_counter()
        memory.search(SearchRequest(q, limit=10, as_of=_iso(FIRST_COMMIT + STEP_S * 15_000)))
        samples.append((time.perf_counter() - t0) * 1000)
    out["as_of_search_ms"] = _ms(samples)
    memory.close()
    return out


def _child(vault: Path, size: int, n_queries: int, mode: str) -> dict[str, Any]:
    args = [
        sys.executable,
        __file__,
        "--measure",
        str(vault),
        "--notes",
        str(size),
        "--queries",
        str(n_queries),
    ]
    raw = subprocess.run([*args, "--mode", mode], check=True, capture_output=True, text=True)
    return dict(json.loads(raw.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--skip-cold", action="store_true")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=["warm", "cold", "restore"], default="warm", help=argparse.SUPPRESS)
    parser.add_argument("--cold", action="store_true", help=argparse.SUPPRESS)  # the same as --mode cold
    args = parser.parse_args()
    if args.measure is not None:
        if args.mode == "restore":
            print(json.dumps(restored(args.measure, args.queries)))
        else:
            print(
                json.dumps(measure(args.measure, args.notes, args.queries, args.cold or args.mode == "cold"))
            )
        return
    print(f"# as_of benchmark: {machine()}; load {os.getloadavg()}", flush=True)
    results: dict[str, Any] = {"machine": machine()}
    with tempfile.TemporaryDirectory(prefix="vaultmem-as-of-") as tmp:
        vault = Path(tmp) / "vault"
        t0 = time.perf_counter()
        embedded, _ = write_history(vault, args.notes)
        results["history_s"] = round(time.perf_counter() - t0, 1)
        if not args.skip_cold:
            seed_index(vault, embedded, every_version=False)
            shutil.copytree(vault, Path(tmp) / "cold")
            results["cold"] = _child(Path(tmp) / "cold", args.notes, args.queries, "cold")
            print(json.dumps(results["cold"]), flush=True)
            shutil.rmtree(Path(tmp) / "cold")
        seed_index(vault, embedded, every_version=True)
        results["warm"] = _child(vault, args.notes, args.queries, "warm")
        print(json.dumps(results["warm"]), flush=True)
        results["restore"] = _child(vault, args.notes, args.queries, "restore")
        print(json.dumps(results["restore"]), flush=True)
    OUT.mkdir(exist_ok=True)
    (OUT / "as_of.json").write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
