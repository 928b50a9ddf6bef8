"""Handing freed memory back to the system once a big, one-off allocation is over.

glibc's malloc keeps what a process frees for its next allocations, and gives back only the top of
its heap: after onnxruntime optimised the model (its fp32 copies of the int8 weights, ~50 MB) and
after the notes table was read into the mirror, tens of MB of free memory stayed counted in the
daemon's RSS (docs/benchmarks.md, "Memory and start at scale"). ``malloc_trim(0)`` returns every
free page of every arena; it takes a few milliseconds, so it runs only after those one-off steps.
Other C libraries (musl, macOS) have no such call; there it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)


def release_free_memory() -> None:
    """Return the C heap's free pages to the system (glibc); a no-op where that is not possible."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    trim(0)
