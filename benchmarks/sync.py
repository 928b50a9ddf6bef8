"""Sync benchmark (issue 17): one round that brings in N notes from another machine, through a bare
remote on this machine, with real git and the real note merge driver.

    python benchmarks/sync.py [--n 1000]

Three cases, each on fresh vaults: N new notes from the other machine (no note merged by the
driver); N notes both machines changed in different fields (the driver runs once per note); N notes
both changed in the same body line (a conflict note per note). Each prints the round's steps
(from its checkpoints) and the size of the changed-path list the index would re-read.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine

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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    args = parser.parse_args()
    n = args.n
    print(f"Machine: {machine()}\n")
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


if __name__ == "__main__":
    main()
