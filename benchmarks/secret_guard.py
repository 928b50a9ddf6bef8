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

Prints Markdown, with the machine and its load (``uptime``) before and after.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _common import machine, pct
from secret_samples import MAKERS, clean_texts, samples

from vaultmem.filing.secrets import AgentWrite, SecretFound, guard_write

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
    print(f"\nLoad after: {uptime()}")


def guard_write_refuses(text: str) -> bool:
    try:
        guard_write(AgentWrite(content=text))
    except SecretFound:
        return True
    return False


if __name__ == "__main__":
    main()
