"""Keeping the index and the edge graph in step with the vault: reconcile, watch, write again.

:class:`IndexKeeper` reconciles at start and at every rescan, brings single paths up to date for
the watcher, commits a person's edits through the vault's writer, writes again what an index write
failed to write (1 s after the failure, backing off to 30 s), and reconciles after another process
rebuilt the index. :func:`rebuild_index` is ``vaultmem reindex --full``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from vaultmem.config import Settings
from vaultmem.errors import IndexError_
from vaultmem.index import location
from vaultmem.index.embedder import Embedder
from vaultmem.index.heap import release_free_memory
from vaultmem.index.note_index import NoteIndex
from vaultmem.index.opening import calibration_for
from vaultmem.sync.graph import EdgeGraph
from vaultmem.sync.reconcile import (
    IndexListener,
    Progress,
    ReconcileReport,
    reconcile,
    reconcile_paths,
    sync_path,
)
from vaultmem.sync.watcher import VaultWatcher, watch_vault
from vaultmem.vault.catalog import Catalog
from vaultmem.vault.layout import VaultLayout, is_vault_file
from vaultmem.vault.writer import VaultWriter

log = logging.getLogger(__name__)
#: Seconds after the last change at which a daemon saves the catalog's cache (``save_when_quiet``).
CATALOG_QUIET_S = 5.0
#: Seconds to the first reconcile after an index write failed, and the most between two retries.
RETRY_FIRST = 1.0
RETRY_MAX = 30.0


class IndexKeeper:
    """Brings one vault's index and edge graph up to date, and keeps them so while it watches."""

    def __init__(
        self,
        settings: Settings,
        layout: VaultLayout,
        catalog: Catalog,
        writer: VaultWriter,
        index: NoteIndex,
        graph: EdgeGraph,
    ) -> None:
        self.settings = settings
        self.layout = layout
        self.catalog = catalog
        self.writer = writer
        self.index = index
        self.graph = graph
        self.watcher: VaultWatcher | None = None
        #: (start, stop) of what runs while the vault is watched: the daemon's sync rounds, started
        #: after the watcher and stopped before it (``operations/sync.py``).
        self.companions: list[tuple[Callable[[], None], Callable[[], None]]] = []
        writer.add_listener(IndexListener(index, graph, catalog))
        # Index writes that failed (a full disk under the state directory) are written again by a
        # reconcile: the first one RETRY_FIRST s after the failure, then backing off to RETRY_MAX.
        self._retry_lock = threading.Lock()
        self._retry_delay = RETRY_FIRST
        self._retry_scheduled = False
        index.on_write_failure = self._index_write_failed
        # Another process rebuilt the index (`reindex --full`): this one switched to the new folder;
        # what it wrote meanwhile (in its catalog, not in the new index) is written there now.
        index.on_switch = self._index_switched
        # Opening the writer has just scanned the catalog: the first reconcile need not again.
        self._catalog_fresh = True

    def reconcile(
        self, progress: Progress | None = None, *, rescan_vault: bool = True, wait: bool = False
    ) -> ReconcileReport:
        """Make the index equal the vault (the catalog is rescanned first unless told not to).

        Only the catalog rescan holds the write lock (decisions must not see it half built); the
        index work runs beside the agents' writes.
        """
        first = self._catalog_fresh  # the reconcile that follows opening
        if rescan_vault and not self._catalog_fresh:
            with self.writer.paused():
                self.catalog.scan()
        self._catalog_fresh = False
        embedded = self.index.texts_embedded
        if self.index.needs_rebuild():
            self.index.rebuild()
        report = reconcile(
            self.layout, self.catalog, self.index, progress=progress, edges=self.graph, wait=wait
        )
        report.embedded = self.index.texts_embedded - embedded
        try:  # rows earlier processes left out of the full-text index (see maintain_if_behind);
            # at start any lag, so the index a start (or a crash recovery) leaves ranks exactly as
            # a fresh build would; later rescans only when it matters
            self.index.maintain_if_behind(any_lag=first)
        except IndexError_ as exc:
            log.warning("%s", exc)
        release_free_memory()  # what the scan, the reads and a start's index load freed (~40 MB at 100k)
        return report

    def reconcile_paths(self, paths: list[str]) -> ReconcileReport:
        """Make the index equal the vault for ``paths`` (a sync round's incoming notes; the catalog
        already read them)."""
        return reconcile_paths(self.layout, self.catalog, self.index, paths, edges=self.graph)

    def sync_paths(self, rels: list[str]) -> dict[str, str]:
        """:meth:`sync_path` for many paths due at once (a merge another process made, a sync
        client's batch): the catalog reads each, then the index takes them in one batch."""
        notes = [r for r in rels if not self._not_a_note(r) and self.layout.skip_reason(r) is None]
        plain = set(notes)
        outcomes = {r: self.sync_path(r) for r in rels if r not in plain}
        for rel in notes:
            self.catalog.refresh(rel)
        report = self.reconcile_paths(notes)
        indexed = set(report.indexed)
        for rel in notes:  # a missing note is "removed", as sync_path says (its commit drops it)
            outcomes[rel] = (
                "malformed" if rel in report.malformed
                else "indexed" if rel in indexed
                else "removed" if not (self.layout.root / rel).is_file()
                else "unchanged"
            )  # fmt: skip
        return outcomes

    def sync_path(self, rel: str) -> str:
        """One watched path: catalog and index brought up to date (the catalog locks itself).

        A side file (a slot or a project.yaml) or another file that is not a note (an image, a
        canvas) has nothing to index; ``changed`` has the watcher commit a person's edit to it (a
        no-op when vaultmem's own commit already holds it).
        """
        if self._not_a_note(rel):
            return "skipped" if self.layout.skip_reason(rel) else "changed"
        return sync_path(self.layout, self.catalog, self.index, rel, self.graph)

    def _not_a_note(self, rel: str) -> bool:
        return self.layout.is_side_file(rel) or is_vault_file(rel)

    def _rescan(self) -> list[str]:
        self.writer.commit_hidden_folders()  # the daemon's clock for Obsidian's settings
        report = self.reconcile()
        self.index.wait_for_writes()  # the reconcile's own writes: did they land?
        with self._retry_lock:
            if self.index.failed_writes:
                self._retry_delay = min(self._retry_delay * 2, RETRY_MAX)
                self._retry_scheduled = self.watcher is not None
                if self.watcher is not None:
                    self.watcher.rescan_soon(self._retry_delay)
            else:
                self._retry_delay, self._retry_scheduled = RETRY_FIRST, False
        return [*report.indexed, *report.removed]

    def _index_switched(self) -> None:
        self.reconcile(rescan_vault=False)

    def _index_write_failed(self) -> None:
        """The index writer gave up on a write: reconcile soon (the vault has the notes)."""
        with self._retry_lock:
            if self._retry_scheduled or self.watcher is None:
                return  # a retry is due already; a one-shot command reconciles at its next start
            self._retry_scheduled = True
            delay = self._retry_delay
        self.watcher.rescan_soon(delay)

    def start_watching(self, watcher: VaultWatcher | None = None) -> VaultWatcher:
        """Handle the vault's events: those of ``watcher``, whose watches went up before the vault
        was scanned (:func:`watch_vault`), or of a watcher made now."""
        watcher = watcher or watch_vault(self.settings, self.layout.home)
        watcher.attach(
            sync_path=self.sync_path,
            rescan=self._rescan,
            commit=self.writer.commit_hand_edits,
            sync_paths=self.sync_paths,
        )
        watcher.run()
        self.watcher = watcher
        self.catalog.save_when_quiet(CATALOG_QUIET_S)  # a start after a kill -9 knows the holders
        self.graph.warm_in_background()  # a daemon: the links of the notes' text, off the start's path
        for start, _stop in self.companions:
            start()
        return watcher

    def stop_watching(self) -> None:
        """Stop the watcher (it commits the hand edits still waiting for their quiet period)."""
        for _start, stop in self.companions:
            stop()
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None
            self.writer.commit_hidden_folders(now=True)  # a daemon's stop: the settings changed since


def rebuild_index(
    settings: Settings,
    layout: VaultLayout,
    catalog: Catalog,
    embedder: Embedder,
    progress: Progress | None = None,
) -> tuple[ReconcileReport, int]:
    """Build the whole index anew from the vault and make it the current one (``reindex --full``);
    return the reconcile's report and the number of notes indexed.

    The new index is built in a folder of its own beside the current one, which processes that
    have it open (a running daemon) go on using meanwhile; pointing the state directory at the new
    folder is one atomic rename, and each of them switches on its next read
    (:mod:`vaultmem.index.location`). Nothing is deleted under another process's feet.
    """
    folder, held = location.new_folder(settings.state_dir)
    try:
        index = NoteIndex(folder, embedder, calibration=calibration_for(settings))
        try:
            previous = location.current(settings.state_dir)
            if previous != folder and (previous / "lancedb").is_dir():
                index.seed_cache(previous)  # embeds nothing the current index had embedded
            report = reconcile(layout, catalog, index, progress=progress, edges=EdgeGraph(catalog), wait=True)
            index.maintenance()  # every row in the full-text index before anyone searches it
            rows = index.count()
        finally:
            index.close()
        location.point_at(settings.state_dir, folder)
    except BaseException:
        location.release(held)
        location.remove_if_unused(folder)
        raise
    location.release(held)
    location.sweep(settings.state_dir)  # the old folder, unless a running process still holds it
    return report, rows
