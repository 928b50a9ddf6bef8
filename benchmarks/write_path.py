"""Write-path benchmark: append latency with and without waiting for the git commit, and
sustained acknowledged appends per second from several threads (commits grouped under load).

    python benchmarks/write_path.py [--n 1000] [--threads 4]

Runs on a fresh temporary vault with real files, fsync and git. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, parts, summary_ms

from vaultmem.config import Settings
from vaultmem.memory import Memory
from vaultmem.vault.init import init_vault


def fresh_service(root: Path) -> Memory:
    init_vault(root)
    contract = (root / "filing.yaml").read_text(encoding="utf-8")
    (root / "filing.yaml").write_text(
        contract.replace("daily_write_cap: 200", "daily_write_cap: 10000000"), encoding="utf-8"
    )
    return Memory(Settings.resolve(root), index=False)


def text(i: int, tag: str) -> str:
    return f"Benchmark memory {tag} {i}: the deploy script needs the --force flag when the cache is cold."


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        service = fresh_service(Path(tmp) / "vault")
        no_wait: list[float] = []
        for i in range(args.n):
            t0 = time.perf_counter()
            service.append(text(i, "a"), "fix", title=f"bench a {i}")
            no_wait.append((time.perf_counter() - t0) * 1000)
        service.flush()
        wait: list[float] = []
        for i in range(max(50, args.n // 5)):
            t0 = time.perf_counter()
            service.append(text(i, "b"), "fix", title=f"bench b {i}", wait_commit=True)
            wait.append((time.perf_counter() - t0) * 1000)
        commits_before = parts(service).writer.commits.commits
        per_thread = args.n // args.threads

        def worker(k: int) -> None:
            for i in range(per_thread):
                service.append(text(i, f"c{k}"), "fix", title=f"bench c {k} {i}")

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(args.threads)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        acked = time.perf_counter() - t0
        service.flush()
        committed = time.perf_counter() - t0
        grouped = parts(service).writer.commits.commits - commits_before
        service.close()
        total = per_thread * args.threads
        status = subprocess.run(
            ["git", "status", "--porcelain"], cwd=Path(tmp) / "vault", capture_output=True, text=True
        ).stdout
        print(f"Machine: {machine()}\n")
        print("| measure | result |\n|---|---|")
        print(f"| append, not waiting for the commit ({args.n}) | {summary_ms(no_wait)} |")
        print(f"| append, waiting for its commit ({len(wait)}) | {summary_ms(wait)} |")
        print(
            f"| sustained, {args.threads} threads x {per_thread} | "
            f"{total / acked:.0f} acknowledged appends/s; "
            f"all committed after {committed:.2f} s ({total / committed:.0f}/s) in {grouped} commits |"
        )
        print(f"| git status after close | {'clean' if not status.strip() else 'DIRTY'} |")


if __name__ == "__main__":
    main()
