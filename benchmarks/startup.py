"""The daemon's start and memory at scale (issue 16, item 4): `vaultmem serve` on 1k, 10k, 100k notes.

    .venv/bin/python benchmarks/startup.py                          # 1k, 10k and 100k
    .venv/bin/python benchmarks/startup.py --sizes 10000 --breakdown

Each size's synthetic vault (``synthetic.py``) and its index are built once under
``benchmarks/out/vaults/<size>/`` (the 100k one embeds 100k notes the first time, 15 minutes on a
quiet machine; embeddings are cached under ``benchmarks/out/embcache``) and only read afterwards.
For each size:

- **cold start**: ``vaultmem serve`` spawned as a new process on a free loopback port, timed from
  just before the spawn until the answer to its first ``memory_search`` over MCP (streamable HTTP,
  bearer token) is back; then the daemon's RSS (``VmRSS``, with its anonymous and file-backed
  parts) and peak RSS (``VmHWM``) are read from ``/proc``. The median of ``--runs`` starts (after one
  that warms the page cache), each stopped with SIGTERM. The daemon runs ``vaultmem.cli:run`` (what
  the console script runs), which keeps pandas out (``vaultmem/program.py``: pyarrow imports it
  when it is installed, and the dev extra installs it); ``--with-pandas`` runs ``main`` instead;
- with ``--tables-rss``, also the RSS once ``memory_status`` health has read the index's tables: a
  daemon whose index opened from its snapshot loads LanceDB only then (or at its first write);
- **restart with nothing changed**: in a process that has imported everything already, the time to
  open the vault as a server does (``Memory(search_first=True)``: from then on ``memory_search``
  is answered, on a vault of ``search_first_notes`` or more), then the time of ``Memory.start``
  (the vault's scan when the open left it, the reconcile, the watcher's start), the median of 3;
- the cold start also says when a second ``memory_search``, one with a ``kind`` filter (which
  reads the vault's catalog, so waits for the start behind the server), was answered: from then
  on every tool answers;
- with ``--breakdown``: where a started daemon's memory goes, step by step in one process
  (``_memory_breakdown.py``).

The targets (issue 16): RSS after the first answer <= 300 MiB at 10k, <= 800 MiB at 100k; cold start
<= 1 s at 10k, <= 2 s at 100k; a restart with nothing changed <= 1 s at 100k. The machine is shared:
the load average is printed with every figure, and a loaded run is an upper bound.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(ROOT), str(HERE), str(ROOT / "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

import synthetic  # noqa: E402
from _common import BLOCK_PANDAS, first_touch_ms_per_mib, machine, parts, prefault  # noqa: E402

OUT = HERE / "out"
VAULTS = OUT / "vaults"
VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))
#: Bumped when the prepared vaults must be built again (a new synthetic generator, say).
BUILD_VERSION = 1
TARGETS: dict[int, dict[str, float]] = {
    10000: {"rss_mib": 300, "cold_s": 1.0},
    100000: {"rss_mib": 800, "cold_s": 2.0, "restart_s": 1.0},
}
QUERY = "which port does the billing service use in staging"
#: ``vaultmem serve`` as the console script runs it (``vaultmem.cli:run``, which keeps pandas out),
#: or with ``--with-pandas`` the same command through ``main`` in a process that may load it.
DAEMON = "import sys\nfrom vaultmem.cli import {entry}\nsys.exit({entry}())\n"


# -- the prepared vaults -------------------------------------------------------------------------


def prepared(size: int) -> Path:
    """The vault of ``size`` synthetic notes with its index built, under benchmarks/out/vaults/."""
    home = VAULTS / str(size)
    marker = home / "built.json"
    if marker.exists() and json.loads(marker.read_text(encoding="utf-8")).get("version") == BUILD_VERSION:
        return home / "vault"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    if subprocess.run([sys.executable, __file__, "--build", str(size)], check=False).returncode != 0:
        raise SystemExit(f"building the {size}-note vault failed")
    return home / "vault"


def build(size: int) -> None:
    """Write the vault and build its index (real model, embeddings cached), in this process."""
    from _bench_data import CachedEmbedder

    from vaultmem.config import Settings
    from vaultmem.index.embedder import OnnxEmbedder
    from vaultmem.memory import Memory

    home = VAULTS / str(size)
    started = time.perf_counter()
    synthetic.write_vault(home / "vault", size)
    print(f"{size}: vault written in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    cached = CachedEmbedder(OnnxEmbedder())
    memory = Memory(Settings.resolve(home / "vault"), embedder=cached)
    last = [0.0]

    def progress(done: int, total: int, _embedded: int = 0) -> None:
        if time.perf_counter() - last[0] > 30 or done == total:
            last[0] = time.perf_counter()
            print(f"{size}: indexed {done}/{total}", file=sys.stderr)

    memory.reconcile(progress)
    index = parts(memory).index
    index.wait_for_writes()
    cached.save()
    index.maintenance()
    memory.close()
    elapsed = time.perf_counter() - started
    marker = {"version": BUILD_VERSION, "notes": size, "build_s": round(elapsed, 1)}
    (home / "built.json").write_text(json.dumps(marker), encoding="utf-8")
    print(f"{size}: built in {elapsed:.0f} s", file=sys.stderr)


# -- cold start of the daemon --------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _status_kib(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            out[key] = int(value.split()[0])
    return out


def _env(size: int) -> dict[str, str]:
    """The daemon's environment: its token file beside the prepared vault, not in the real home.
    Python caches bytecode, as on a user's machine (a shell that sets PYTHONDONTWRITEBYTECODE, as
    some sandboxes do, would have every start compile vaultmem's 27k lines again: ~0.4 s); the
    start that warms the page cache writes it."""
    env = {**os.environ, "VAULTMEM_TOKEN_FILE": str(VAULTS / str(size) / "token")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


async def _ask(url: str, token: str) -> tuple[int, float, float]:
    """The first ``memory_search``'s hits, when its answer came (``perf_counter``), and when a
    second one came that waits for the start behind the server (a ``kind`` filter reads the
    vault's catalog): then every tool answers."""
    from mcp_harness import mcp_client

    async with mcp_client(url, token) as client:
        result = await client.call_tool("memory_search", {"query": QUERY, "limit": 10})
        if result.is_error:
            raise RuntimeError(f"memory_search failed: {result.content}")
        answered = time.perf_counter()
        payload = json.loads(result.content[0].text)  # type: ignore[union-attr]
        settled = await client.call_tool("memory_search", {"query": QUERY, "limit": 10, "kind": "fix"})
        if settled.is_error:
            raise RuntimeError(f"memory_search kind=fix failed: {settled.content}")
        return len(payload["results"]), answered, time.perf_counter()


async def _health(url: str, token: str) -> None:
    """``memory_status`` health: it reads the index's tables, so LanceDB is loaded after it
    (as after the first write) even by a daemon that opened its index from the snapshot."""
    from mcp_harness import mcp_client

    async with mcp_client(url, token) as client:
        result = await client.call_tool("memory_status", {"action": "health"})
        if result.is_error:
            raise RuntimeError(f"memory_status failed: {result.content}")


def first_answer(
    size: int, vault: Path, *, with_pandas: bool = False, tables_rss: bool = False, prefault_mib: int = 0
) -> dict[str, Any]:
    """One start of ``vaultmem serve``: seconds to its first answer, and its memory then."""
    import anyio
    import httpx2

    env = _env(size)
    token = subprocess.run(
        [VAULTMEM, "--vault", str(vault), "token"], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    port = _free_port()
    if prefault_mib:
        prefault(prefault_mib)  # host-backed pages for the daemon, as on a real machine
    url = f"http://127.0.0.1:{port}/mcp"
    code = DAEMON.format(entry="main" if with_pandas else "run")
    spawned = time.perf_counter()
    daemon = subprocess.Popen(
        [sys.executable, "-c", code, "--vault", str(vault), "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while True:
            try:
                hits, answered_at, settled_at = anyio.run(_ask, url, token)
                break
            except (httpx2.ConnectError, ConnectionRefusedError, OSError, ExceptionGroup):
                if daemon.poll() is not None:
                    stderr = daemon.stderr.read() if daemon.stderr else ""
                    raise RuntimeError(f"the daemon exited: {stderr}") from None
                time.sleep(0.01)
        answered, settled = answered_at - spawned, settled_at - spawned
        memory = _status_kib(daemon.pid)
        loaded: dict[str, int] = {}
        if tables_rss:
            anyio.run(_health, url, token)
            loaded = _status_kib(daemon.pid)
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=60)
    return {
        "to_answer_s": round(answered, 3),
        "to_every_tool_s": round(settled, 3),
        "hits": hits,
        "rss_mib": round(memory["VmRSS"] / 1024, 1),
        "peak_rss_mib": round(memory["VmHWM"] / 1024, 1),
        "anon_mib": round(memory["RssAnon"] / 1024, 1),
        "file_mib": round(memory["RssFile"] / 1024, 1),
        **({"rss_tables_mib": round(loaded["VmRSS"] / 1024, 1)} if loaded else {}),
    }


def cold_start(
    size: int, vault: Path, runs: int, *, with_pandas: bool, tables_rss: bool = False, prefault_mib: int = 0
) -> dict[str, Any]:
    first_answer(size, vault, with_pandas=with_pandas)  # the page cache warm, any repair done
    samples = sorted(
        (
            first_answer(
                size, vault, with_pandas=with_pandas, tables_rss=tables_rss, prefault_mib=prefault_mib
            )
            for _ in range(runs)
        ),
        key=lambda r: float(r["to_answer_s"]),
    )
    median = dict(samples[len(samples) // 2])
    median["runs_s"] = [r["to_answer_s"] for r in samples]
    median["every_tool_runs_s"] = [r["to_every_tool_s"] for r in samples]
    median["rss_runs_mib"] = sorted(r["rss_mib"] for r in samples)
    median["load"] = round(os.getloadavg()[0], 2)
    return median


RESTART = """
import json, sys, time
{block}
sys.path.insert(0, {root!r})
from vaultmem.config import Settings
from vaultmem.memory import Memory
import vaultmem.index.note_index, vaultmem.sync.keeper, vaultmem.index.embedder
times = []
for _ in range(3):
    t0 = time.perf_counter()
    memory = Memory(Settings.resolve({vault!r}), search_first=True)  # as a server opens it
    t1 = time.perf_counter()
    first = not memory.scanned  # searches answered from here, while the start below scans
    report = memory.start()  # the scan (when left), the reconcile, the watcher
    t2 = time.perf_counter()
    times.append((t2 - t0, t1 - t0, t2 - t1, len(report.indexed) + len(report.removed), first))
    memory.close()
times.sort()
total, opened, started, changed, first = times[1]
print(json.dumps({{"total_s": round(total, 3), "open_s": round(opened, 3),
    "start_s": round(started, 3), "changed": changed, "searches_first": first}}))
"""


def restart(size: int, vault: Path, *, with_pandas: bool) -> dict[str, Any]:
    block = "" if with_pandas else BLOCK_PANDAS
    code = RESTART.format(root=str(ROOT), vault=str(vault), block=block)
    done = subprocess.run([sys.executable, "-c", code], env=_env(size), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["load"] = round(os.getloadavg()[0], 2)
    return result


def breakdown(size: int, *, with_pandas: bool) -> dict[str, Any]:
    """The memory breakdown of ``_memory_breakdown.py``, run in fresh processes."""
    command = [sys.executable, str(HERE / "_memory_breakdown.py"), str(VAULTS / str(size) / "vault")]
    done = subprocess.run(
        [*command, *(["--with-pandas"] if with_pandas else [])],
        env=_env(size),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# -- the report ----------------------------------------------------------------------------------


def _target(size: int, key: str, unit: str) -> str:
    value = TARGETS.get(size, {}).get(key)
    return "" if value is None else f" (target <= {value:g} {unit})"


def print_table(results: list[dict[str, Any]]) -> None:
    print(f"\nMachine: {machine()}\n")
    print("| measure | " + " | ".join(f"{r['notes']:,} notes" for r in results) + " |")
    print("|---|" + "---|" * len(results))

    def row(label: str, cell: Any) -> None:
        print(f"| {label} | " + " | ".join(cell(r) for r in results) + " |")

    runs = len(results[0]["cold_start"]["runs_s"]) if results else 0
    row(
        "daemon RSS after its first answer (MiB)",
        lambda r: f"**{r['cold_start']['rss_mib']:.0f}**{_target(r['notes'], 'rss_mib', 'MiB')}",
    )
    row(
        "… anonymous / file-backed (MiB)",
        lambda r: f"{r['cold_start']['anon_mib']:.0f} / {r['cold_start']['file_mib']:.0f}",
    )
    row("… peak RSS while starting (MiB)", lambda r: f"{r['cold_start']['peak_rss_mib']:.0f}")
    if all("rss_tables_mib" in r["cold_start"] for r in results):
        row(
            "… RSS once LanceDB is loaded (after `memory_status` health, as after a first write) (MiB)",
            lambda r: f"{r['cold_start']['rss_tables_mib']:.0f}",
        )
    row(
        f"cold start to first answer, `vaultmem serve` (s, median of {runs})",
        lambda r: f"**{r['cold_start']['to_answer_s']}**{_target(r['notes'], 'cold_s', 's')}",
    )
    row("… every run (s)", lambda r: ", ".join(f"{s:g}" for s in r["cold_start"]["runs_s"]))
    row(
        "… until every tool answers (the start behind the server ended) (s)",
        lambda r: ", ".join(f"{s:g}" for s in r["cold_start"]["every_tool_runs_s"]),
    )
    row(
        "restart with nothing changed: open, as a server, until searches are answered (s)",
        lambda r: (
            f"**{r['restart']['open_s']}**{_target(r['notes'], 'restart_s', 's')}"
            + ("" if r["restart"]["searches_first"] else " (the scan before: no search first)")
        ),
    )
    row(
        "… then the start: scan, reconcile, watcher; open + start (s)",
        lambda r: f"{r['restart']['start_s']}; {r['restart']['total_s']}",
    )
    row(
        "a new process's first touch of memory (ms/MiB; a real machine ~0.15)",
        lambda r: f"{r.get('first_touch_ms_per_mib', '–')}",
    )
    row(
        "load average (1 min): before / after the starts / after the restarts",
        lambda r: f"{r['load_before']} / {r['cold_start']['load']} / {r['restart']['load']}",
    )
    for r in results:
        if "breakdown" not in r:
            continue
        print(f"\nWhere the memory goes, {r['notes']:,} notes (one process, step by step):\n")
        print("| step | RSS after (MiB) | RSS added | anonymous after | Python heap added |")
        print("|---|---|---|---|---|")
        for step in r["breakdown"]["steps"]:
            print(
                f"| {step['step']} | {step['rss_mib']:.0f} | {step['rss_added_mib']:+.0f} | "
                f"{step['anon_mib']:.0f} | {step['heap_added_mib']:+.1f} |"
            )
        print("\n| holder | MiB |\n|---|---|")
        for name, mib in r["breakdown"]["holders"].items():
            print(f"| {name} | {mib:.1f} |")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000,100000", help="vault sizes (default all three)")
    parser.add_argument("--runs", type=int, default=5, help="cold starts per size, the median is shown")
    parser.add_argument("--breakdown", action="store_true", help="also break a daemon's memory down")
    parser.add_argument("--with-pandas", action="store_true", help="leave pandas importable (dev)")
    parser.add_argument(
        "--tables-rss",
        action="store_true",
        help="also read RSS after memory_status health has loaded LanceDB (the first health check "
        "reads every note: ~10 s at 10k notes, ~90 s at 100k, per start)",
    )
    parser.add_argument(
        "--prefault",
        type=int,
        default=0,
        metavar="MIB",
        help="before each start, touch MIB MiB in a child that exits: on a VM that backs guest memory "
        "lazily (the first-touch figure printed is 2-3 ms/MiB), the start then allocates as on a real "
        "machine (~0.15 ms/MiB)",
    )
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument("--build", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.build:
        build(args.build)
        return
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        vault = prepared(size)
        result: dict[str, Any] = {
            "notes": size,
            "load_before": round(os.getloadavg()[0], 2),
            "first_touch_ms_per_mib": first_touch_ms_per_mib(),
        }
        result["cold_start"] = cold_start(
            size,
            vault,
            args.runs,
            with_pandas=args.with_pandas,
            tables_rss=args.tables_rss,
            prefault_mib=args.prefault,
        )
        result["restart"] = restart(size, vault, with_pandas=args.with_pandas)
        if args.breakdown:
            result["breakdown"] = breakdown(size, with_pandas=args.with_pandas)
        results.append(result)
        print(f"{size}: {json.dumps(result)}", file=sys.stderr)
    print_table(results)
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "sizes": results}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
