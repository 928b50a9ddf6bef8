"""End-to-end benchmark through MCP: a real daemon (uvicorn, loopback, bearer auth, the real
embedding model, fsync and git on) driven by the SDK's streamable-HTTP client.

    python benchmarks/mcp_e2e.py [--notes 10000] [--calls 200]

Measures, on a vault of ``--notes`` notes:

- daemon start to first answered search, cold (no index: every note is embedded) and warm
  (index up to date, as on every ordinary start);
- memory_append latency (p50/p95) and memory_search latency (p50/p95), one client, sequential;
- the same under 8 concurrent clients.

Each latency is one ``call_tool`` round trip as a host sees it. Prints a Markdown table and writes
``benchmarks/out/mcp_e2e.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _common import machine, pct
from mcp_harness import mcp_client

from vaultmem.config import Settings
from vaultmem.notes.ids import uuid7
from vaultmem.notes.model import new_note_text
from vaultmem.server.daemon import Daemon
from vaultmem.vault.init import init_vault

_VOCABULARY = (
    "deploy cache database index query latency migration schema backup restore token session "
    "cluster replica shard queue worker retry timeout budget roadmap meeting decision review "
    "incident outage alert metric dashboard config secret rotation certificate proxy gateway router "
    "firewall kernel driver compiler linker package release version branch merge rebase commit tag "
    "build pipeline runner artifact registry container image volume network port socket thread "
    "process memory leak profile benchmark regression flaky test fixture mock coffee espresso "
    "grinder recipe garden tomato basil bicycle chain tyre holiday train ticket"
)
WORDS = tuple(_VOCABULARY.split())
KINDS = ("reference", "fix", "decision", "workflow", "convention", "preference")


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def seed_vault(root: Path, notes: int) -> None:
    """``notes`` short notes written as files (as if accumulated over a year), committed once."""
    init_vault(root)
    contract = root / "filing.yaml"
    text = contract.read_text(encoding="utf-8")
    contract.write_text(text.replace("daily_write_cap: 200", "daily_write_cap: 10000000"), encoding="utf-8")
    rng = random.Random(7)
    dirs = {"reference": "memory/semantic", "fix": "memory/episodic", "decision": "memory/episodic",
            "workflow": "memory/procedural", "convention": "memory/procedural",
            "preference": "memory/semantic"}  # fmt: skip
    for i in range(notes):
        kind = KINDS[i % len(KINDS)]
        title = f"{sentence(rng, 4)[:-1]} {i}"
        body = " ".join(sentence(rng, rng.randint(8, 20)) for _ in range(rng.randint(1, 4)))
        day = 1 + i % 28
        stamp = f"2025-{1 + i % 12:02d}-{day:02d}T10:00:00Z"
        fields = {"id": uuid7(), "title": title, "kind": kind, "status": "active", "tags": [kind],
                  "created": stamp, "updated": stamp, "importance": 0.5, "occurrences": 1}  # fmt: skip
        path = root / dirs[kind] / f"note-{i:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(new_note_text(fields, body).render(), encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=b@b", "commit", "-q", "-m", "seed"],
        cwd=root,
        check=True,
    )


async def first_search(url: str, token: str) -> None:
    async with mcp_client(url, token) as client:
        result = await client.call_tool("memory_search", {"query": "deploy cache timeout"})
        assert not result.is_error


def start_to_first_search(settings: Settings, token_file: Path) -> tuple[float, Daemon]:
    started = time.perf_counter()
    daemon = Daemon(settings, port=0, token_file=token_file)
    daemon.start(timeout=3600)
    anyio.run(first_search, daemon.url, daemon.token())
    return time.perf_counter() - started, daemon


async def latencies(url: str, token: str, calls: int, seed: int) -> dict[str, list[float]]:
    rng = random.Random(seed)
    out: dict[str, list[float]] = {"append": [], "search": []}
    async with mcp_client(url, token) as client:
        await client.call_tool("memory_search", {"query": "warm up"})
        for i in range(calls):
            args = {"content": f"{sentence(rng, 15)} ({seed}-{i})", "kind": rng.choice(KINDS)}
            t = time.perf_counter()
            result = await client.call_tool("memory_append", args)
            out["append"].append((time.perf_counter() - t) * 1000)
            assert not result.is_error, result.content
            t = time.perf_counter()
            result = await client.call_tool("memory_search", {"query": sentence(rng, 3)})
            out["search"].append((time.perf_counter() - t) * 1000)
            assert not result.is_error, result.content
    return out


async def concurrent(url: str, token: str, clients: int, calls: int) -> dict[str, list[float]]:
    merged: dict[str, list[float]] = {"append": [], "search": []}

    async def one(n: int) -> None:
        got = await latencies(url, token, calls, seed=100 + n)
        for key, values in got.items():
            merged[key].extend(values)

    async with anyio.create_task_group() as group:
        for n in range(clients):
            group.start_soon(one, n)
    return merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    results: dict[str, Any] = {"machine": machine(), "notes": args.notes}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        t = time.perf_counter()
        seed_vault(root, args.notes)
        print(f"seeded {args.notes} notes in {time.perf_counter() - t:.1f}s", file=sys.stderr)
        settings = Settings.resolve(root)
        token_file = Path(tmp) / "token"

        cold, daemon = start_to_first_search(settings, token_file)
        daemon.stop()
        warm, daemon = start_to_first_search(settings, token_file)
        results["start_cold_s"], results["start_warm_s"] = cold, warm
        print(f"start to first search: cold {cold:.1f}s, warm {warm:.2f}s", file=sys.stderr)
        try:
            url, token = daemon.url, daemon.token()
            single = anyio.run(latencies, url, token, args.calls, 1)
            many = anyio.run(concurrent, url, token, args.clients, max(10, args.calls // args.clients))
        finally:
            daemon.stop()
    for label, data in (("single", single), ("concurrent", many)):
        for op, values in data.items():
            results[f"{label}_{op}_p50_ms"] = pct(values, 50)
            results[f"{label}_{op}_p95_ms"] = pct(values, 95)
            results[f"{label}_{op}_n"] = len(values)
    out = Path(__file__).resolve().parent / "out"
    out.mkdir(exist_ok=True)
    (out / "mcp_e2e.json").write_text(json.dumps(results, indent=2), encoding="utf-8")

    print(f"\nMachine: {results['machine']}; vault of {args.notes} notes\n")
    print("| measure | p50 | p95 |\n|---|---|---|")
    for label, name in (("single", "1 client"), ("concurrent", f"{args.clients} clients")):
        for op in ("append", "search"):
            n = results[f"{label}_{op}_n"]
            print(
                f"| memory_{op}, {name} ({n} calls) | {results[f'{label}_{op}_p50_ms']:.1f} ms "
                f"| {results[f'{label}_{op}_p95_ms']:.1f} ms |"
            )
    print(f"\nStart to first answered search: cold {cold:.1f} s (embeds every note), warm {warm:.2f} s")


if __name__ == "__main__":
    main()
