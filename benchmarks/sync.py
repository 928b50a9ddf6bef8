"""Sync benchmark (issue 17): one round that brings in N notes from another machine, through a bare
remote on this machine, with real git and the real note merge driver; and the time until those notes
are searchable on the other machine through its daemon.

    python benchmarks/sync.py [--n 1000] [--skip-daemon]

Three round cases, each on fresh vaults: N new notes from the other machine (no note merged by the
driver); N notes both machines changed in different fields (merged by rule); N notes both changed in
the same body line (a conflict note per note). Each prints the round's steps (from its checkpoints)
and the size of the changed-path list the index re-reads.

Then, end to end: the other machine runs `vaultmem serve` (a subprocess, the real embedding model, its
own automatic rounds every 0.5 s, or a `vaultmem sync` run beside it); the time from the push of N
new notes until every sampled one is found by `memory_search` through MCP. The load is printed.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _common import machine
from mcp_harness import mcp_client
from reliability._support import ServeProcess

from vaultmem.vault.history import GitRepo
from vaultmem.vault.init import init_vault
from vaultmem.vault.merge_driver import driver_command
from vaultmem.vault.remote import SyncReport, VaultSync, clone_vault

NOTE = (
    "---\nid: 0190a1b2-{i:04x}-7000-8000-000000000000\ntitle: Note {i}\ntags:\n- bench\n"
    "updated: '{day}'\noccurrences: {n}\n---\n{body}\n"
)


def note(i: int, *, day: str = "2026-03-01T00:00:00Z", n: int = 1, body: str = "", tag: str = "") -> str:
    text = NOTE.format(i=i, day=day, n=n, body=body or f"Benchmark note {i} about the deploy cache.")
    return text.replace("- bench\n", f"- bench\n- {tag}\n") if tag else text


def write_all(root: Path, n: int, make: object) -> None:
    assert callable(make)
    for i in range(n):
        path = root / f"memory/semantic/bench-{i:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(make(i), encoding="utf-8")


def timed_round(repo: GitRepo) -> tuple[SyncReport, dict[str, float], float]:
    marks: dict[str, float] = {}
    start = time.perf_counter()

    def checkpoint(step: str) -> None:
        marks[step] = time.perf_counter() - start

    report = VaultSync(repo, checkpoint=checkpoint).sync()
    assert report.ok, report.errors
    return report, marks, time.perf_counter() - start


def pair(tmp: Path) -> tuple[GitRepo, GitRepo]:
    remote = tmp / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    root, _ = init_vault(tmp / "laptop")
    laptop = GitRepo(root)
    laptop.git("remote", "add", "origin", str(remote))
    VaultSync(laptop).sync()
    desktop = clone_vault(str(remote), tmp / "desktop", git_dir=tmp / "desktop.git")
    return laptop, desktop


def case(name: str, n: int, base: object, laptop_side: object, desktop_side: object) -> None:
    with tempfile.TemporaryDirectory(prefix="vaultmem-sync-bench-") as tmp_name:
        laptop, desktop = pair(Path(tmp_name))
        if base is not None:
            write_all(laptop.work_tree, n, base)
            VaultSync(laptop).sync()
            VaultSync(desktop).sync()
        write_all(laptop.work_tree, n, laptop_side)
        (desktop.work_tree / "memory/semantic/desktop-only.md").write_text("local\n", encoding="utf-8")
        if desktop_side is not None:
            write_all(desktop.work_tree, n, desktop_side)
        VaultSync(laptop).sync()
        report, marks, total = timed_round(desktop)
        diff_start = time.perf_counter()
        desktop.git("diff", "--name-status", "--no-renames", "-z", f"{report.merge_commit}^1", "HEAD", "--")
        diff_ms = (time.perf_counter() - diff_start) * 1000
        merge_s = marks.get("concluded", marks.get("merged", 0.0)) - marks.get("committed pending", 0.0)
        print(
            f"| {name} | {n} | {total:.2f} s | {marks.get('fetched', 0):.2f} s | {merge_s:.2f} s | "
            f"{len(report.incoming)} | {len(report.conflict_files)} | {diff_ms:.0f} ms |"
        )


def driver_call_ms(samples: int = 20) -> float:
    with tempfile.TemporaryDirectory(prefix="vaultmem-driver-bench-") as tmp_name:
        tmp = Path(tmp_name)
        subprocess.run(["git", "init", "-q", str(tmp)], check=True)
        files = []
        for side, text in (("o", note(1)), ("a", note(1, n=2)), ("b", note(1, tag="x"))):
            (tmp / side).write_text(text, encoding="utf-8")
            files.append(str(tmp / side))
        command = driver_command(sys.executable).replace("%O %A %B %P", " ".join([*files, "n.md"]))
        start = time.perf_counter()
        for _ in range(samples):
            subprocess.run(command, shell=True, cwd=tmp, check=True)
        return (time.perf_counter() - start) / samples * 1000


def load() -> str:
    return "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())


async def all_found(url: str, token: str, words: list[str]) -> bool:
    async with mcp_client(url, token) as client:
        for word in words:
            result = await client.call_tool("memory_search", {"query": word, "limit": 5})
            found = (result.structured_content or {}).get("results", [])
            if result.is_error or not any(word in hit["snippet"] for hit in found):
                return False
    return True


def searchable(n: int, how: str) -> None:
    """N new notes pushed by the laptop; seconds until the desktop's daemon finds sampled ones."""
    with tempfile.TemporaryDirectory(prefix="vaultmem-sync-bench-") as tmp_name:
        tmp = Path(tmp_name)
        laptop, desktop = pair(tmp)
        interval = "0.5" if how == "daemon" else "0"
        (desktop.work_tree / "vaultmem.yaml").write_text(
            f"sync_interval: {interval}\nsync_debounce: 0\n", encoding="utf-8"
        )
        daemon = ServeProcess(desktop.work_tree, tmp / "config", fake_embedder=False)
        try:
            for i in range(n):
                path = laptop.work_tree / f"memory/semantic/bench-{i:05d}.md"
                path.write_text(
                    note(i, body=f"Benchmark note zq{i:05d} about the deploy cache."), encoding="utf-8"
                )
            VaultSync(laptop).sync()
            sample = sorted({0, n - 1, *random.Random(1).sample(range(n), min(n, 8))})
            words = [f"zq{i:05d}" for i in sample]
            loads = [load()]
            start = time.perf_counter()
            if how == "cli":
                command = [str(Path(sys.executable).with_name("vaultmem")), "--vault", str(desktop.work_tree)]
                done = subprocess.run([*command, "sync"], capture_output=True, text=True)
                assert done.returncode == 0, done.stderr
                synced = time.perf_counter() - start
            while not anyio.run(all_found, daemon.url, daemon.token, words):
                time.sleep(0.05)
            total = time.perf_counter() - start
            loads.append(load())
        finally:
            daemon.stop()
        label = (
            "the daemon's own round (every 0.5 s)" if how == "daemon" else "`vaultmem sync` beside the daemon"
        )
        extra = f" (the CLI round: {synced:.2f} s)" if how == "cli" else ""
        print(f"| {label} | {n} | {total:.2f} s{extra} | {loads[0]}; {loads[1]} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--skip-daemon", action="store_true", help="only the rounds, not the daemons")
    args = parser.parse_args()
    n = args.n
    print(f"Machine: {machine()}, {load()}\n")
    print("| case | notes | round | fetch | merge + commit | incoming paths | conflict notes | diff |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    case("new notes from the other machine", n, None, note, None)
    case(
        "both changed other fields (merged by rule)", n, note,
        lambda i: note(i, n=2, day="2026-03-02T00:00:00Z"),
        lambda i: note(i, tag="desk", day="2026-03-03T00:00:00Z"),
    )  # fmt: skip
    case(
        "both changed one body line (conflict notes)", n, note,
        lambda i: note(i, body="laptop line", day="2026-03-02T00:00:00Z"),
        lambda i: note(i, body="desktop line", day="2026-03-03T00:00:00Z"),
    )  # fmt: skip
    print(f"\nOne merge driver call (a Python start + one note merge): {driver_call_ms():.0f} ms")
    if args.skip_daemon:
        return
    print("\nFrom the push of N new notes to all of them searchable on the other machine, through MCP:\n")
    print("| how the other machine syncs | notes | push to searchable | load before; after |")
    print("| --- | --- | --- | --- |")
    for how in ("daemon", "cli"):
        searchable(n, how)


if __name__ == "__main__":
    main()
