"""Secret guard benchmark: false positives on real prose, detection of synthetic secrets, latency.

    python benchmarks/secret_guard.py [--draws 200] [--reps 200]

- False positives: every LoCoMo turn (title + text) and every SciFact document (title + abstract)
  from ../shared/bench, each checked as one agent write (``guard_write`` in refuse mode); a refusal
  is a false positive (none of these texts holds a credential). Each one is printed to be looked at.
  Also the synthetic clean set of tests/secret_samples.py (ids, hashes, image names, public keys).
- Detection: each synthetic secret format of tests/secret_samples.py, ``--draws`` random draws
  each, placed in a note's content: found (any finding), found as its kind, and redacted without a
  trace (no fragment of it left in the redacted text). No real secret is used anywhere.
- Latency of ``guard_write`` per write: a short turn, a 2 kB note, and 100 kB notes (prose of each
  corpus, and code-like text whose every line holds a secret word), p50/p95 over ``--reps`` calls;
  and the one-off cost of the first scan in a fresh process (importing detect-secrets).
- Through the write path (issue 18, phase 2): both corpora written as notes into a fresh vault with
  ``memory_store``'s bulk_create (1,000 rows a call) in ``redact`` mode, the guard the writer runs
  on every plan; a note the guard touched is a false positive. And the time the writer's check adds
  to one write (``PlanGuard.check``): a new 2 kB note, and an update of its body.

Prints Markdown, with the machine and its load (``uptime``) before and after.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _common import machine, parts, pct
from secret_samples import MAKERS, clean_texts, samples

from vaultmem.caller import Caller, acting_as, redactions
from vaultmem.config import Settings
from vaultmem.filing.secrets import AgentWrite, SecretFound, guard_write
from vaultmem.memory import Memory
from vaultmem.notes import frontmatter as fm
from vaultmem.vault.plan import FileWrite

BENCH = Path(__file__).resolve().parent.parent.parent / "shared" / "bench"


def load(name: str) -> list[dict[str, str]]:
    with (BENCH / name / "corpus.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def false_positives(rows: list[dict[str, str]]) -> list[tuple[str, str]]:
    out = []
    for row in rows:
        try:
            guard_write(AgentWrite(content=row["text"], title=row["title"]))
        except SecretFound as exc:
            out.append((row["_id"], str(exc)))
    return out


def detection(draws: int) -> list[tuple[str, str, float, float, float]]:
    rows = []
    for name, make in MAKERS.items():
        found = as_kind = clean = 0
        kind = ""
        for draw in range(draws):
            sample = make(random.Random(f"{name}/{draw}"))
            kind = sample.kind
            result = guard_write(AgentWrite(content=sample.text), "redact")
            found += bool(result.redacted)
            as_kind += [f.kind for f in result.redacted] == [sample.kind]
            clean += not any(fragment in result.write.content for fragment in sample.fragments)
        rows.append((name, kind, found / draws, as_kind / draws, clean / draws))
    return rows


def latency(text: str, reps: int, mode: str = "refuse") -> tuple[float, float]:
    write = AgentWrite(content=text, title="A note")
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        with contextlib.suppress(SecretFound):
            guard_write(write, mode)  # type: ignore[arg-type]
        times.append((time.perf_counter() - start) * 1000)
    return pct(times, 50), pct(times, 95)


def first_scan_ms() -> float:
    code = (
        "import time; t = time.perf_counter()\n"
        "from vaultmem.filing.secrets import find_secrets; find_secrets('a note')\n"
        "print((time.perf_counter() - t) * 1000)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--draws", type=int, default=200, help="random draws per synthetic secret format")
    parser.add_argument("--reps", type=int, default=200, help="calls per latency measure")
    parser.add_argument("--skip-writer", action="store_true", help="leave out the write-path runs")
    args = parser.parse_args()

    print(f"Machine: {machine()}")
    print(f"Load before: {uptime()}\n")

    print("## False positives (writes refused that hold no secret)\n")
    print("| corpus | writes | refused | rate |")
    print("|---|---|---|---|")
    corpora = {"LoCoMo turns": load("locomo"), "SciFact title + abstract": load("scifact")}
    refused: dict[str, list[tuple[str, str]]] = {}
    for label, rows in corpora.items():
        refused[label] = false_positives(rows)
        print(f"| {label} | {len(rows):,} | {len(refused[label])} | {len(refused[label]) / len(rows):.3%} |")
    total = sum(len(r) for r in corpora.values())
    wrong = sum(len(r) for r in refused.values())
    print(f"| both | {total:,} | {wrong} | {wrong / total:.3%} |")
    seeds = range(args.draws)
    clean = [
        (seed, name)
        for seed in seeds
        for name, text in clean_texts(seed).items()
        if guard_write_refuses(text)
    ]
    print(f"| synthetic ids, hashes, names, public keys | {args.draws * len(clean_texts())} | {len(clean)} | "
          f"{len(clean) / (args.draws * len(clean_texts())):.3%} |")  # fmt: skip
    for label, items in refused.items():
        for doc_id, message in items:
            print(f"\n- {label} {doc_id}: {message}")
    for seed, name in clean:
        print(f"\n- synthetic clean text {name!r} (seed {seed}) refused")

    print(f"\n## Detection ({args.draws} random draws per format, in a note's content)\n")
    print("| format | kind | found | found as its kind | redacted without a trace |")
    print("|---|---|---|---|---|")
    for name, kind, found, as_kind, no_trace in detection(args.draws):
        print(f"| {name} | `{kind}` | {found:.1%} | {as_kind:.1%} | {no_trace:.1%} |")

    print(f"\n## Latency of guard_write ({args.reps} calls each)\n")
    print("| write | size | p50 | p95 |")
    print("|---|---|---|---|")
    turn = corpora["LoCoMo turns"][0]["text"]
    locomo = "\n".join(row["text"] for row in corpora["LoCoMo turns"])
    scifact = "\n\n".join(row["text"] for row in corpora["SciFact title + abstract"])
    code = "\n".join(
        f"    key_{i} = settings.get('key_{i}')  # the api key for step {i}" for i in range(3000)
    )
    with_secrets = scifact[:50_000] + "\n" + "\n".join(s.text for s in samples()) + "\n" + scifact[50_000:]
    cases = [
        ("a LoCoMo turn", turn, "refuse"),
        ("a 2 kB note (SciFact)", scifact[:2_000], "refuse"),
        ("100 kB of LoCoMo turns", locomo[:100_000], "refuse"),
        ("100 kB of SciFact abstracts", scifact[:100_000], "refuse"),
        ("100 kB of code, a secret word on every line", code[:100_000], "refuse"),
        ("100 kB with 40 secrets, redacted", with_secrets[:100_000], "redact"),
    ]
    for label, text, mode in cases:
        p50, p95 = latency(text, args.reps if len(text) < 10_000 else max(20, args.reps // 5), mode)
        print(f"| {label} ({mode}) | {len(text.encode('utf-8')):,} B | {p50:.2f} ms | {p95:.2f} ms |")
    print(f"\nFirst scan in a fresh process (imports detect-secrets): {first_scan_ms():.0f} ms")
    if not args.skip_writer:
        through_the_writer(corpora, args.reps)
    print(f"\nLoad after: {uptime()}")


def through_the_writer(corpora: dict[str, list[dict[str, str]]], reps: int) -> None:
    """The corpora written through the real write path in redact mode; the writer's check timed."""
    print("\n## Through the write path (bulk_create, redact mode)\n")
    print("| corpus | notes written | notes redacted | rate | seconds |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="vaultmem-guard-") as tmp:
        root, _ = Memory.init(Path(tmp) / "vault")
        contract = root / "filing.yaml"
        rules = contract.read_text(encoding="utf-8").replace("mode: refuse", "mode: redact")
        contract.write_text(re.sub(r"daily_write_cap: \d+", "daily_write_cap: 100000", rules), "utf-8")
        settings = Settings.resolve(root, durable=False)
        with Memory(settings, index=False, background_commits=False) as memory, acting_as(Caller("bench")):
            for label, rows in corpora.items():
                start, earlier = time.perf_counter(), len(redactions())
                for i in range(0, len(rows), 1000):
                    chunk = [
                        {"content": r["text"], "title": r["title"][:200] or None} for r in rows[i : i + 1000]
                    ]
                    memory.bulk_create(chunk)
                touched = {str(r["path"]) for r in redactions()[earlier:]}
                seconds = time.perf_counter() - start
                rate = len(touched) / len(rows)
                print(f"| {label} | {len(rows):,} | {len(touched)} | {rate:.3%} | {seconds:.1f} |")
                for path in sorted(touched):
                    print(f"\n- redacted: {path}")
            guard, store = parts(memory).writer.guard, parts(memory).store
            note = max((root / "memory").rglob("*.md"), key=lambda p: p.stat().st_size)
            rel = str(note.relative_to(root))
            read = store.read(rel).text
            assert read is not None
            text = read
            create = [FileWrite("memory/new.md", text, create=True, action="create")]
            update = [FileWrite(rel, fm.with_body(text, text.body + "One more line.\n"), False, "update")]
            print("\n| the writer's check (PlanGuard.check) | size | p50 | p95 |")
            print("|---|---|---|---|")
            for label, writes in (("a new note", create), ("an update of its body", update)):
                times = []
                for _ in range(reps):
                    began = time.perf_counter()
                    guard.check(writes)
                    times.append((time.perf_counter() - began) * 1000)
                size = len(text.to_bytes())
                print(f"| {label} | {size:,} B | {pct(times, 50):.2f} ms | {pct(times, 95):.2f} ms |")


def guard_write_refuses(text: str) -> bool:
    try:
        guard_write(AgentWrite(content=text))
    except SecretFound:
        return True
    return False


if __name__ == "__main__":
    main()
