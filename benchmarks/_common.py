"""Helpers shared by the benchmark scripts: machine description and percentiles."""

from __future__ import annotations

import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any


def machine() -> str:
    model = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model}, Python {platform.python_version()}, {dt.date.today()}"


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary_ms(values: list[float]) -> str:
    mean = statistics.mean(values)
    return f"p50 {pct(values, 50):.2f} ms, p95 {pct(values, 95):.2f} ms, mean {mean:.2f} ms"


def parts(memory: Any) -> Any:
    """The parts behind the facade (the index, the catalog, the writer), for a benchmark that times
    one layer; vaultmem's adapters never reach them."""
    return memory._ctx


def uncapped_vault(parent: Path) -> Path:
    """A fresh vault under ``parent`` whose filing contract lifts the daily write cap (benchmarks write
    thousands of notes in one go)."""
    from vaultmem.vault.init import init_vault

    root, _ = init_vault(parent / "vault")
    contract = root / "filing.yaml"
    contract.write_text(
        contract.read_text(encoding="utf-8").replace("daily_write_cap: 200", "daily_write_cap: 1000000"),
        encoding="utf-8",
    )
    return root


#: vaultmem does not depend on pandas, but pyarrow imports it when it is installed (0.2 s on this
#: machine); the dev extra installs it (for obsidiantools). This makes the child see an install
#: without it, as ``pip install vaultmem`` leaves a machine.
BLOCK_PANDAS = """
import importlib.abc
class _NoPandas(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _NoPandas())
"""


#: A child that touches ``mb`` MiB of fresh memory and prints the seconds it took.
_TOUCH = (
    "import sys, time, numpy\nt = time.perf_counter()\n"
    "numpy.ones(int(sys.argv[1]) << 20, numpy.uint8)\nprint(time.perf_counter() - t)"
)


def first_touch_ms_per_mib(mb: int = 256) -> float:
    """What a new process pays to touch memory for the first time, in ms per MiB. A real machine:
    ~0.1-0.2. A VM whose host backs guest memory on first touch and takes freed pages back seconds
    later (a Firecracker microVM with free page reporting, as here at times): 2-3, paid again by
    every start, so a daemon's start includes ~2.5 s per GB it allocates."""
    done = subprocess.run([sys.executable, "-c", _TOUCH, str(mb)], capture_output=True, text=True, check=True)
    return round(float(done.stdout) * 1000 / mb, 2)


def prefault(mb: int) -> None:
    """Touch ``mb`` MiB in a child that exits at once: the pages it frees are host-backed for the
    next few seconds, so a process started right after allocates as on a real machine."""
    subprocess.run([sys.executable, "-c", _TOUCH, str(mb)], capture_output=True, check=True)
