"""Opening a vault for the facade, bottom up: its files and catalog, the writer, the index.

:func:`open_vault` is what :class:`vaultmem.memory.Memory` opens with. Its order is the start's
critical path (docs/architecture.md, "Starting fast"): the model loads on a thread from the first
moment, the watches are set before the scan (a save while it starts is an event), then the
catalog is scanned and the index opened, one after the other.

``search_first`` (a server's start) opens the index before the scan and, when the index came from
the snapshot its last clean stop saved and holds at least ``search_first_notes`` notes, leaves
the scan to the writer's :meth:`~vaultmem.vault.writer.VaultWriter.open`, which the server's
start then runs on a thread of its own: ``memory_search`` answers from the index meanwhile
(docs/architecture.md, "Searching while the vault is scanned").
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vaultmem.config import Settings
from vaultmem.errors import VaultError
from vaultmem.vault.catalog import Catalog
from vaultmem.vault.history import GitRepo
from vaultmem.vault.layout import VaultLayout
from vaultmem.vault.store import NoteStore
from vaultmem.vault.writer import VaultWriter

if TYPE_CHECKING:
    from vaultmem.index.fusion import RelevanceCalibration
    from vaultmem.index.note_index import NoteIndex
    from vaultmem.index.protocol import Embedder
    from vaultmem.sync.watcher import VaultWatcher

#: How long a call waits for a server's start (within the 60 s a host gives a call).
START_WAIT = 30.0
STILL_STARTING = (
    "vaultmem is still bringing its search index up to date with the vault (on a vault's first start "
    "it embeds every note: about a minute per thousand notes on a small machine; on a restart it "
    "scans the vault, or waits for another vaultmem process that holds the vault's write lock); "
    "nothing ran, retry in a minute"
)


@dataclass
class OpenedVault:
    """What :func:`open_vault` opened. ``writer.opened`` is False while the scan is left to the
    server's start (``search_first``), which runs it with :meth:`scan`."""

    settings: Settings
    layout: VaultLayout
    repo: GitRepo
    catalog: Catalog
    store: NoteStore
    writer: VaultWriter
    index: NoteIndex | None
    calibration: RelevanceCalibration | None
    warmup: threading.Thread | None
    #: Watch the vault (a daemon): the watches are set before the scan, so a save while it runs is
    #: an event (a save before it, the scan itself finds).
    watch: bool = False
    watcher: VaultWatcher | None = None

    def scan(self, stop: threading.Event | None = None) -> VaultWatcher | None:
        """The start's scan, unless it ran: the watches, then the writer's start (the catalog's
        scan, what a crash left); the watcher (None unless watching), stopped if the scan fails.
        ``stop`` set (the server is stopping): it fails at once rather than wait for another
        process's write lock up to ``write_lock_timeout``."""
        if self.writer.opened:
            return self.watcher
        if self.watch and self.watcher is None:
            from vaultmem.sync.watcher import watch_vault

            self.watcher = watch_vault(self.settings, self.layout.home)
        try:
            self.writer.open(stop)
        except BaseException:
            if self.watcher is not None:
                self.watcher.stop()
                self.watcher = None
            raise
        return self.watcher


def open_vault(
    settings: Settings,
    *,
    embedder: Embedder | None,
    index: bool,
    background_commits: bool,
    watch: bool,
    search_first: bool,
) -> OpenedVault:
    """Open ``settings.vault`` (and its index unless ``index`` is False); see the module docstring."""
    layout = VaultLayout(settings.vault, settings.state_dir, settings.home)
    if not layout.root.is_dir():
        raise VaultError(f"no vault at {layout.root}; create one with `vaultmem init {layout.root}`")
    repo = GitRepo(layout.root, lock_timeout=settings.git_lock_timeout, size_limit=settings.size_limit)
    repo.require_repo()
    catalog = Catalog.of_repo(layout, repo)
    store = NoteStore(layout, durable=settings.durable)
    warmup: threading.Thread | None = None
    calibration: RelevanceCalibration | None = None
    if index:
        from vaultmem.index.embedder import warm_in_background
        from vaultmem.index.heap import return_big_blocks
        from vaultmem.index.opening import calibration_for, embedder_for

        return_big_blocks()  # a process that opens the index lives long: freed memory goes back
        embedder = embedder or embedder_for(settings)
        warmup = warm_in_background(embedder)  # the model loads while the catalog is scanned
        calibration = calibration_for(settings)
    writer = VaultWriter(
        layout,
        repo,
        catalog,
        store,
        lock_timeout=settings.write_lock_timeout,
        background_commits=background_commits,
        hidden_commit_interval=settings.hidden_commit_interval,
    )
    opened = OpenedVault(
        settings, layout, repo, catalog, store, writer, None, calibration, warmup, watch=watch and index
    )
    try:
        if not (search_first and index):
            opened.scan()  # the index after the scan, not beside it: docs/benchmarks.md, "Start at 100k"
        if index and embedder is not None:
            from vaultmem.index.opening import open_index

            opened.index = open_index(settings, embedder)
        if not _answers_first(settings, opened.index):
            opened.scan()  # nothing to answer from before the scan: a start as any other
    except BaseException:  # what the index raised is reported; the writer is closed
        with contextlib.suppress(Exception):
            if opened.watcher is not None:
                opened.watcher.stop()
                opened.watcher = None
            writer.close()
        raise
    return opened


def _answers_first(settings: Settings, index: NoteIndex | None) -> bool:
    """Whether the index can answer searches before the vault is scanned: it holds what the table
    held at the last clean stop (a start after a crash read the table, and maybe more than the
    vault), on a vault big enough for its scan to be worth not waiting for."""
    return index is not None and index.adopted_snapshot and index.count() >= settings.search_first_notes
