"""The parts behind the facade, for tests of one layer: the catalog, the writer, the index, the edge
graph, the watcher. Adapters never reach them; only these helpers do, so a test that needs a layer
says so by importing one."""

from __future__ import annotations

from collections.abc import Callable

from vaultmem.memory import Memory
from vaultmem.operations.context import Context
from vaultmem.sync.watcher import VaultWatcher


def parts(memory: Memory) -> Context:
    """What ``memory`` opened: settings, catalog, store, writer, index, edge graph, lookups."""
    return memory._ctx


def watcher(memory: Memory) -> VaultWatcher | None:
    """The watcher ``memory.start_watching()`` started, if it did."""
    keeper = memory._keeper
    return keeper.watcher if keeper is not None else None


def sync_path(memory: Memory, rel: str) -> str:
    """What the watcher does with one changed path (``indexed``, ``unchanged``, ``removed``...)."""
    keeper = memory._keeper
    assert keeper is not None, "opened without its index"
    return keeper.sync_path(rel)


def on_sync_step(memory: Memory, checkpoint: Callable[[str], None]) -> None:
    """Have ``memory``'s sync rounds call ``checkpoint`` with the name of each step (``fetched``,
    ``committed pending``, ``marked``, ``merged``, ``filed``, ``concluded``, ``pushing``, ``pushed``)."""
    memory._sync.checkpoint = checkpoint


def sync_paths(memory: Memory, rels: list[str]) -> dict[str, str]:
    """What the watcher does with many paths due at once (one index batch): ``sync_path``'s outcomes."""
    keeper = memory._keeper
    assert keeper is not None, "opened without its index"
    return keeper.sync_paths(rels)
