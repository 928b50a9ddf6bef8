"""Where a started daemon's memory goes: RSS step by step, and the size of each big holder.

Run by ``startup.py --breakdown`` in a fresh process per vault. The steps are the daemon's own
(``Daemon.open``: imports, the model, the catalog scan, the index and its in-memory mirror, the
reconcile, the watcher, the MCP app, a first search), taken one at a time so each one's RSS can be
read; the model is loaded first, on its own, because the daemon loads it on a thread beside the
catalog scan. ``tracemalloc`` is off for the RSS pass (it costs memory itself) and on for a second
pass in another process that reports the Python heap each step allocated.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MiB = 1024 * 1024


def status_mib(key: str = "VmRSS") -> float:
    """A line of /proc/self/status in MiB (``VmRSS``, ``RssAnon``, ``RssFile``, ``VmHWM``)."""
    for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def rss_mib() -> float:
    return status_mib("VmRSS")


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
            "keepcost",
        )
    ]  # fmt: skip


def glibc_heap() -> dict[str, float]:
    """glibc malloc's view: bytes in use, bytes free but kept (every arena), mmapped blocks."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _Mallinfo2
        info = libc.mallinfo2()
    except (OSError, AttributeError):
        return {}
    return {
        "malloc in use": info.uordblks / MiB,
        "malloc free, kept in arenas": info.fordblks / MiB,
        "malloc mmapped blocks": info.hblkhd / MiB,
    }


def malloc_trim() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def deep_size(root: object, seen: set[int] | None = None) -> int:
    """Bytes of ``root`` and everything it holds (containers, dataclass fields, NumPy buffers);
    an object already in ``seen`` is not counted again."""
    import numpy as np

    seen = set() if seen is None else seen
    total = 0
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or obj is None or isinstance(obj, bool | int | float | type):
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            total += obj.nbytes + sys.getsizeof(obj) - (obj.nbytes if obj.base is None else 0)
            continue
        total += sys.getsizeof(obj)
        if isinstance(obj, str | bytes):
            continue
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            stack.extend(obj)
        else:
            if hasattr(obj, "__dict__"):
                stack.append(vars(obj))
            for name in getattr(type(obj), "__slots__", ()):
                if hasattr(obj, name):
                    stack.append(getattr(obj, name))
    return total


def measure(vault: Path, *, with_pandas: bool) -> dict[str, Any]:
    """Both passes: RSS here, and the Python heap per step in a child with ``tracemalloc`` on."""
    steps = _steps(vault, heap=False)
    if "--rss-only" in sys.argv:  # no tracemalloc pass (minutes at 100k notes)
        return steps
    command = [sys.executable, __file__, str(vault), "--heap", *(["--with-pandas"] if with_pandas else [])]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    heaps = json.loads(done.stdout.strip().splitlines()[-1])
    for step, heap_step in zip(steps["steps"], heaps["steps"], strict=True):
        step["heap_added_mib"] = heap_step["heap_added_mib"]
    return steps


def _steps(vault: Path, *, heap: bool) -> dict[str, Any]:
    import tracemalloc

    if heap:
        tracemalloc.start()
    steps: list[dict[str, Any]] = []
    last = {"rss": rss_mib(), "heap": 0.0}

    def mark(name: str) -> None:
        rss = rss_mib()
        now = tracemalloc.get_traced_memory()[0] / MiB if heap else 0.0
        steps.append(
            {
                "step": name,
                "rss_mib": round(rss, 1),
                "rss_added_mib": round(rss - last["rss"], 1),
                "anon_mib": round(status_mib("RssAnon"), 1),
                "heap_added_mib": round(now - last["heap"], 1),
            }
        )
        last.update(rss=rss, heap=now)

    steps.append({"step": "the interpreter", "rss_mib": round(last["rss"], 1), "rss_added_mib": 0.0,
                  "anon_mib": round(status_mib("RssAnon"), 1), "heap_added_mib": 0.0})  # fmt: skip

    importlib.import_module("vaultmem.server.daemon")  # what `vaultmem serve` imports first
    mark("imports: the daemon (MCP SDK, uvicorn, the facade)")
    importlib.import_module("vaultmem.index.note_index")
    importlib.import_module("vaultmem.sync.keeper")
    mark("imports: the index (NumPy; LanceDB waits for the tables' first use)")
    from vaultmem.index.embedder import OnnxEmbedder

    embedder = OnnxEmbedder()
    embedder.embed(["warm up"])
    mark("the model: onnxruntime session and tokenizer, one text embedded")

    from vaultmem.config import Settings
    from vaultmem.index.note_index import NoteIndex
    from vaultmem.memory import Memory, SearchRequest
    from vaultmem.vault.catalog import Catalog

    def after(cls: Any, name: str, label: str) -> Callable[[], None]:
        original = getattr(cls, name)

        def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(self, *args, **kwargs)
            mark(label)
            return result

        setattr(cls, name, wrapped)
        return lambda: setattr(cls, name, original)

    undo = [
        after(Catalog, "scan", "the catalog: every note's frontmatter (scan, from its cache)"),
        after(NoteIndex, "_load_notes", "the mirror: every record and vector (the snapshot, or LanceDB)"),
        after(NoteIndex, "probe", "the index's check at open"),
    ]
    started = time.perf_counter()
    memory = Memory(Settings.resolve(vault), embedder=embedder)
    mark("the rest of opening (writer, operations)")
    memory.reconcile()
    mark("reconcile (edge graph primed)")
    memory.start_watching()
    mark("the watcher")
    from vaultmem.server.app import build_app
    from vaultmem.server.token import TokenFile, token_path

    build_app(memory, host="127.0.0.1", port=7821, tokens=TokenFile(token_path(vault)))
    mark("the MCP app")
    memory.search(SearchRequest("which port does the billing service use in staging", limit=10))
    mark("a first search")
    opened_s = time.perf_counter() - started
    for restore in undo:
        restore()
    undo = []
    memory.health()  # reads the tables, as a first write opens them
    mark("LanceDB loaded: memory_status health (as after a first write)")
    for restore in undo:
        restore()
    holders: dict[str, float] = {}
    if not heap:
        from _common import parts

        ctx = parts(memory)
        index = ctx.index
        mirror = index.mirror
        gc.collect()
        holders["mirror: vector matrix (allocated rows)"] = mirror._vectors.nbytes / MiB
        seen: set[int] = {id(mirror._vectors)}
        holders["mirror: records"] = deep_size(mirror._records, seen) / MiB
        holders["mirror: ids, rows, paths, filter columns"] = (
            deep_size(
                [mirror._ids, mirror._row, mirror._by_path, mirror._status, mirror._project, mirror._kind],
                seen,
            )
            / MiB
        )
        holders["timeline"] = deep_size(index.timeline, set()) / MiB
        holders["catalog: entries and lookups"] = deep_size(vars(ctx.catalog), set()) / MiB
        holders["edge graph"] = deep_size(vars(ctx.graph), {id(ctx.catalog)}) / MiB
        try:
            import pyarrow as pa

            holders["Arrow memory pool"] = pa.total_allocated_bytes() / MiB
        except ImportError:
            pass
        holders.update(glibc_heap())
        holders["peak RSS so far (VmHWM)"] = status_mib("VmHWM")
        before_trim = rss_mib()
        malloc_trim()
        holders["RSS given back by malloc_trim(0)"] = before_trim - rss_mib()
        holders = {k: round(v, 1) for k, v in holders.items()}
    memory.close()
    return {
        "steps": steps,
        "holders": holders,
        "open_s": round(opened_s, 2),
        "notes": len(memory_notes(vault)),
    }


def memory_notes(vault: Path) -> list[Path]:
    return [p for p in vault.rglob("*.md") if ".vaultmem" not in p.parts]


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import BLOCK_PANDAS

    if "--with-pandas" not in sys.argv:
        exec(BLOCK_PANDAS)  # before anything imports pyarrow (see _common.py)
    target = Path(sys.argv[1])
    if "--heap" in sys.argv:
        print(json.dumps(_steps(target, heap=True)))
    else:
        print(json.dumps(measure(target, with_pandas="--with-pandas" in sys.argv)))
