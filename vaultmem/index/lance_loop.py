"""LanceDB's event loop and its errors, reached without importing LanceDB before a table is used.

An index opened from its snapshot (:mod:`~vaultmem.index.snapshot`) answers searches from memory and
never needs LanceDB until it writes; so nothing here imports ``lancedb`` at module level.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, TypeVar

from vaultmem.errors import IndexError_, InvalidInput

__all__ = ["lance_errors", "run_async", "submit_async"]

T = TypeVar("T")


def submit_async(coro: Coroutine[Any, Any, T]) -> Future[T]:
    """Run ``coro`` on LanceDB's background event loop; returns a concurrent future."""
    from lancedb.background_loop import LOOP

    return asyncio.run_coroutine_threadsafe(coro, LOOP.loop)


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on LanceDB's background event loop and wait for its result."""
    return submit_async(coro).result()


@contextmanager
def lance_errors(action: str) -> Iterator[None]:
    """Translate any LanceDB/Arrow/OS error into IndexError_ naming the action and the fix."""
    try:
        yield
    except (IndexError_, InvalidInput):
        raise
    except Exception as exc:  # LanceDB raises untyped RuntimeError/ValueError/OSError
        raise IndexError_(
            f"the search index failed to {action}: {exc}; if this persists, rebuild it with "
            "`vaultmem reindex`"
        ) from exc
