"""Does the daemon's memory level off when the vault stops growing? (docs/reliability.md, "Soak").

The soak (tests/reliability/test_soak.py) adds thousands of notes, so its RSS grows with them and
cannot say whether anything else leaks. This runs one `vaultmem serve` (the real model, as a user
runs it) on a copy of the prepared 10k-note vault (``startup.py`` builds it) for ``--minutes``
under a load that keeps the note count constant:

- an MCP client, one call every ``--interval`` seconds: 45 % ``memory_search`` (queries drawn from
  the vault's own words), 20 % ``memory_store update`` of an existing note's content, 15 %
  ``memory_recall get``, 20 % ``memory_capture`` under one of 20 fixed sources and titles (the
  first capture of each creates a note, the rest update it in place);
- the person, once a second, rewrites the body of one of 50 existing notes by hand.

Every ``--every`` seconds it samples the daemon's ``/proc`` status (RSS, its anonymous and
file-backed parts, descriptors, threads) and prints it; at the end, the anonymous RSS's slope over
the second half of the run (MiB per 10 minutes) by least squares, and the samples as JSON with
``--json``. With ``--trace`` the daemon runs under ``tracemalloc`` from its first minute on (slower)
and writes, every two minutes, the 25 allocation sites that grew most since its third minute to
``benchmarks/out/steady/growth.txt``: where Python's share of any growth comes from.

    .venv/bin/python benchmarks/steady_rss.py --minutes 20
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from _common import machine  # noqa: E402
from startup import VAULTMEM, _free_port, _status_kib, prepared  # noqa: E402

SIZE = 10_000
WORKDIR = HERE / "out" / "steady"
ID_LINE = re.compile(r"^id:\s*(\S+)\s*$", re.MULTILINE)


#: ``vaultmem serve`` under tracemalloc, reporting the sites that grew (``--trace``).
TRACED = """
import sys, threading, time, tracemalloc
def report(path=sys.argv.pop(1)):
    time.sleep(60)  # the start's allocations untraced: they last the process's life
    tracemalloc.start(8)
    time.sleep(120)
    base = tracemalloc.take_snapshot()
    while True:
        time.sleep(120)
        now = tracemalloc.take_snapshot()
        lines = [f"t+{time.monotonic():.0f}s traced {tracemalloc.get_traced_memory()[0] / 2**20:.1f} MiB"]
        for stat in now.compare_to(base, "traceback")[:25]:
            lines.append(f"{stat.size_diff / 1024:+.0f} KiB {stat.count_diff:+d} blocks")
            lines.extend("    " + line for line in stat.traceback.format()[-12:])
        with open(path, "a") as out:
            out.write("\\n".join(lines) + "\\n\\n")
threading.Thread(target=report, daemon=True).start()
from vaultmem.cli import main
sys.exit(main())
"""


def copy_vault(source: Path) -> Path:
    """A private copy of the prepared vault (its index and state too): the run writes into it."""
    shutil.rmtree(WORKDIR, ignore_errors=True)
    WORKDIR.mkdir(parents=True)
    target = WORKDIR / "vault"
    shutil.copytree(source, target, symlinks=True)
    return target


def note_ids(vault: Path, count: int, rng: random.Random) -> tuple[list[str], list[Path], list[str]]:
    """``count`` notes' ids, 50 notes for the person to edit, and words for queries."""
    files = sorted(p for p in (vault / "memory").rglob("*.md"))
    chosen = rng.sample(files, min(count, len(files)))
    ids: list[str] = []
    words: set[str] = set()
    for path in chosen:
        text = path.read_text(encoding="utf-8")
        found = ID_LINE.search(text)
        if found:
            ids.append(found.group(1).strip("'\""))
        words.update(w for w in re.findall(r"[a-z]{5,}", text.split("---", 2)[-1].lower()))
    person = [p for p in files if p not in chosen][:50]
    return ids, person, sorted(words)


def sample(pid: int, t0: float, calls: int, edits: int) -> dict[str, Any]:
    status = _status_kib(pid)
    threads = sum(1 for _ in Path(f"/proc/{pid}/task").iterdir())
    return {
        "t_s": round(time.monotonic() - t0, 1),
        "rss_mib": round(status["VmRSS"] / 1024, 1),
        "anon_mib": round(status["RssAnon"] / 1024, 1),
        "file_mib": round(status["RssFile"] / 1024, 1),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "threads": threads,
        "calls": calls,
        "hand_edits": edits,
        "load": round(os.getloadavg()[0], 2),
    }


def slope_per_10min(points: list[tuple[float, float]]) -> float:
    n = len(points)
    if n < 2:
        return float("nan")
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    var = sum((t - mx) ** 2 for t, _ in points)
    cov = sum((t - mx) * (v - my) for t, v in points)
    return cov / var * 600 if var else float("nan")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between the client's calls")
    parser.add_argument("--every", type=float, default=30.0, help="seconds between samples")
    parser.add_argument("--json", type=Path, help="write the samples here")
    parser.add_argument("--trace", action="store_true", help="run the daemon under tracemalloc")
    args = parser.parse_args(argv)

    import anyio
    import httpx2
    from mcp_harness import mcp_client

    rng = random.Random(16)
    vault = copy_vault(prepared(SIZE))
    ids, person_notes, words = note_ids(vault, 400, rng)
    env = {**os.environ, "VAULTMEM_TOKEN_FILE": str(WORKDIR / "token")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    token = subprocess.run(
        [VAULTMEM, "--vault", str(vault), "token"], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    log = (WORKDIR / "daemon.log").open("w", encoding="utf-8")
    command = [VAULTMEM]
    if args.trace:
        command = [sys.executable, "-c", TRACED, str(WORKDIR / "growth.txt")]
    daemon = subprocess.Popen(
        [*command, "--vault", str(vault), "serve", "--port", str(port)], env=env, stdout=log, stderr=log
    )
    stop = threading.Event()
    counts = {"calls": 0, "errors": 0, "edits": 0}

    async def load() -> None:
        while True:  # the daemon is starting
            try:
                async with mcp_client(url, token) as client:
                    await client.call_tool("memory_search", {"query": "warm up"})
                    break
            except (httpx2.ConnectError, OSError, ExceptionGroup):
                if daemon.poll() is not None:
                    raise SystemExit("the daemon exited; see benchmarks/out/steady/daemon.log") from None
                await anyio.sleep(0.2)
        async with mcp_client(url, token) as client:
            while not stop.is_set():
                roll = rng.random()
                if roll < 0.45:
                    name, params = "memory_search", {"query": " ".join(rng.sample(words, 3)), "limit": 10}
                elif roll < 0.65:
                    name = "memory_store"
                    params = {
                        "action": "update",
                        "thought_id": rng.choice(ids),
                        "content": f"Revised {counts['calls']}: {' '.join(rng.sample(words, 12))}.",
                    }
                elif roll < 0.80:
                    name, params = "memory_recall", {"action": "get", "thought_id": rng.choice(ids)}
                else:
                    k = rng.randrange(20)
                    name = "memory_capture"
                    params = {
                        "content": f"Status {counts['calls']}: {' '.join(rng.sample(words, 8))}.",
                        "title": f"Steady capture {k}",
                        "source_id": f"steady-{k}",
                    }
                result = await client.call_tool(name, params)
                counts["calls"] += 1
                counts["errors"] += bool(result.is_error)
                await anyio.sleep(args.interval)

    def person() -> None:
        n = 0
        while not stop.wait(1.0):
            n += 1
            path = person_notes[n % len(person_notes)]
            head, sep, _body = path.read_text(encoding="utf-8").rpartition("---\n")
            path.write_text(f"{head}{sep}Edited by hand, round {n}: {' '.join(rng.sample(words, 10))}.\n")
            counts["edits"] += 1

    client_error: list[BaseException] = []

    def run_load() -> None:
        try:
            anyio.run(load)
        except BaseException as exc:  # reported below
            client_error.append(exc)
            stop.set()

    threads = [threading.Thread(target=run_load, daemon=True), threading.Thread(target=person, daemon=True)]
    print(f"# {machine()}; {SIZE} notes; {args.minutes} min; a call every {args.interval} s", flush=True)
    t0 = time.monotonic()
    for thread in threads:
        thread.start()
    samples: list[dict[str, Any]] = []
    try:
        while time.monotonic() - t0 < args.minutes * 60 and not stop.is_set():
            stop.wait(args.every)
            if daemon.poll() is not None:
                raise SystemExit("the daemon exited; see benchmarks/out/steady/daemon.log")
            samples.append(sample(daemon.pid, t0, counts["calls"], counts["edits"]))
            print(json.dumps(samples[-1]), flush=True)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        daemon.send_signal(signal.SIGTERM)
        code = daemon.wait(timeout=120)
        log.close()
    if client_error:
        raise SystemExit(f"the client failed: {client_error[0]!r}")
    second_half = [s for s in samples if s["t_s"] >= args.minutes * 30]
    first, last = samples[0], samples[-1]
    slope = slope_per_10min([(s["t_s"], s["anon_mib"]) for s in second_half])
    print(
        f"calls {counts['calls']} (errors {counts['errors']}), hand edits {counts['edits']}, "
        f"daemon exit {code}; anon RSS {first['anon_mib']} -> {last['anon_mib']} MiB, "
        f"slope over the second half {slope:+.1f} MiB/10 min; "
        f"RSS {first['rss_mib']} -> {last['rss_mib']} MiB; fds {first['fds']} -> {last['fds']}"
    )
    if args.json:
        args.json.write_text(json.dumps(samples, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
