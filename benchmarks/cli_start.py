"""How fast the commands that need no index start (issue 16, item 3), hyperfine-style.

    .venv/bin/python benchmarks/cli_start.py [--runs 21] [--vaultmem PATH]

Runs each command ``--runs`` times as a new process (the installed ``vaultmem`` script, or the one
``--vaultmem`` names: another checkout's, to compare) after two warm-up runs, and prints the p50,
p95 and min wall time, the number of modules the process imported, and whether any index module
(LanceDB, pyarrow, pandas, onnxruntime, NumPy) was among them (``PYTHONPROFILEIMPORTTIME``). The
commands write to a scratch vault under ``benchmarks/out/cli-vault`` (its own git repository, a
token file beside it), which is created when missing. The load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import machine, pct  # noqa: E402

OUT = HERE / "out"
INDEX_ONLY = ("lancedb", "lance", "pyarrow", "pandas", "onnxruntime", "tokenizers", "numpy")


def run(vaultmem: str, args: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([vaultmem, *args], env=env, capture_output=True, check=True)
    return time.perf_counter() - started


def modules(vaultmem: str, args: list[str], env: dict[str, str]) -> set[str]:
    done = subprocess.run(
        [vaultmem, *args], env={**env, "PYTHONPROFILEIMPORTTIME": "1"}, capture_output=True, text=True
    )
    return {
        line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")
    } - {"package"}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--vaultmem", default=str(Path(sys.executable).with_name("vaultmem")))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    vault = OUT / "cli-vault"
    env = {**os.environ, "VAULTMEM_TOKEN_FILE": str(OUT / "cli-vault.token")}
    if not (vault / ".git").exists():
        shutil.rmtree(vault, ignore_errors=True)
        vault.mkdir(parents=True)
        # Its own repository: under benchmarks/out the folder is inside this checkout's work tree.
        subprocess.run(["git", "init", "-q", "-b", "main", str(vault)], check=True)
        subprocess.run([args.vaultmem, "init", str(vault)], env=env, check=True, capture_output=True)
    added = subprocess.run(
        [
            args.vaultmem,
            "--vault",
            str(vault),
            "append",
            "--json",
            "--kind",
            "reference",
            f"kept {time.time()}",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    note_id = json.loads(added.stdout)["id"]
    commands = {
        "--help": ["--help"],
        "token": ["--vault", str(vault), "token"],
        "append": ["--vault", str(vault), "append", "--kind", "reference", "The same note, reinforced."],
        "capture": ["--vault", str(vault), "capture", "An unreviewed thought, reinforced."],
        "log": ["--vault", str(vault), "log", note_id],
    }
    load_before = os.getloadavg()[0]
    rows = {}
    for name, argv in commands.items():
        for _ in range(2):
            run(args.vaultmem, argv, env)
        samples = [run(args.vaultmem, argv, env) for _ in range(args.runs)]
        loaded = modules(args.vaultmem, argv, env)
        rows[name] = {
            "p50_s": round(pct(samples, 50), 3),
            "p95_s": round(pct(samples, 95), 3),
            "min_s": round(min(samples), 3),
            "modules": len(loaded),
            "index_modules": sorted({m.split(".")[0] for m in loaded if m.split(".")[0] in INDEX_ONLY}),
        }
    load_after = os.getloadavg()[0]
    print(f"\n{args.vaultmem}\nMachine: {machine()}; load average {load_before:.2f} -> {load_after:.2f}\n")
    print(f"| command | p50 | p95 | min | modules imported | index modules | runs: {args.runs} |")
    print("|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        index = ", ".join(r["index_modules"]) or "none"
        times = f"{r['p50_s']} s | {r['p95_s']} s | {r['min_s']} s"
        print(f"| `vaultmem {name}` | {times} | {r['modules']} | {index} | |")
    if args.json:
        payload = {"machine": machine(), "load": [load_before, load_after], "commands": rows}
        args.json.write_text(json.dumps(payload, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
