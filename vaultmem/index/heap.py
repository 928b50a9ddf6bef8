"""Handing freed memory back to the system: glibc's malloc tuned for a long-running daemon.

glibc's malloc keeps what a process frees for its next allocations and gives back only the top of
its heap. :func:`return_big_blocks` (once, when a process opens the index) has blocks of 256 KiB and
more served by their own mappings and the heap's top trimmed above 1 MiB, unless the environment
sets ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_``; :func:`release_free_memory`
(``malloc_trim(0)``) returns every free page after the one-off steps that free a lot (building the
model, reading the notes table, a reconcile). The figures: docs/architecture.md, "Memory". Other C
libraries (musl, macOS) have neither call; there both do nothing.

:func:`collector_paused` keeps Python's own collector out of a start that builds what lives as long
as the process.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec

P = ParamSpec("P")

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_BIG_BLOCK = 256 * 1024
_TRIM_ABOVE = 1024 * 1024


def _libc() -> Any:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def return_big_blocks() -> None:
    """Big blocks mapped on their own, the heap's top trimmed above 1 MiB (glibc; else a no-op)."""
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is None:
        return
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        mallopt(_M_MMAP_THRESHOLD, _BIG_BLOCK)
    if "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        mallopt(_M_TRIM_THRESHOLD, _TRIM_ABOVE)


def release_free_memory() -> None:
    """Return the C heap's free pages to the system (glibc); a no-op where that is not possible."""
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is None:
        return
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    trim(0)


@contextmanager
def collector_paused(paused: bool = True) -> Iterator[None]:
    """Python's collector frozen out of the block and off inside it, and what the block built frozen
    when it returns. Opening the index builds ~10 objects per note that live as long as the process
    and next to no cyclic garbage, so the collector's passes bought nothing (docs/architecture.md,
    "Starting fast"). A block that raises is not frozen, and the collector runs again."""
    if not paused:
        yield
        return
    gc.freeze()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        gc.freeze()
    finally:
        if enabled:
            gc.enable()


def opening_pauses_the_collector(opening: Callable[P, None]) -> Callable[P, None]:
    """``opening`` (the facade's ``__init__``) run with the collector paused
    (:func:`collector_paused`) when it opens the index: unless it is called with ``index=False``."""

    @functools.wraps(opening)
    def paused(*args: P.args, **kwargs: P.kwargs) -> None:
        with collector_paused(bool(kwargs.get("index", True))):
            opening(*args, **kwargs)

    return paused
