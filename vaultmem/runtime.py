"""Putting the layers together: the vault service, the search index and the watcher.

The CLI's one-shot commands open only what they need; the daemon opens everything, reconciles the
index with the vault once (catching what changed while it was down), then watches.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import shutil
import threading
from dataclasses import replace
from typing import Any

from vaultmem.config import Settings
from vaultmem.errors import IndexError_
from vaultmem.graph.lookup import Lookup
from vaultmem.graph.recall import Recall
from vaultmem.graph.review import Review
from vaultmem.graph.service import GraphStore
from vaultmem.graph.tokens import PreviewTokens
from vaultmem.graph.upkeep import Upkeep
from vaultmem.index import location
from vaultmem.index.embedder import Embedder, FakeEmbedder, OnnxEmbedder
from vaultmem.index.fusion import RelevanceCalibration
from vaultmem.index.store import NoteIndex, warm_in_background
from vaultmem.search import SearchRequest, check_kind_filter, memory_search
from vaultmem.service import VaultService
from vaultmem.sync.indexer import EdgeSync, IndexListener, Progress, ReconcileReport, reconcile, sync_path
from vaultmem.sync.watcher import VaultWatcher
from vaultmem.vault.history import CommitWriter, hand_edit_message
from vaultmem.vault.layout import is_side_file

log = logging.getLogger(__name__)
#: Seconds to the first reconcile after an index write failed, and the most between two retries.
RETRY_FIRST = 1.0
RETRY_MAX = 30.0


def calibration_for(settings: Settings) -> RelevanceCalibration:
    base = RelevanceCalibration()
    overrides = {
        k: v
        for k, v in (
            ("unrelated_floor", settings.unrelated_floor),
            ("vector_floor", settings.vector_floor),
            ("min_relevance", settings.min_relevance),
        )
        if v is not None
    }
    return replace(base, **overrides)


#: Test-only: ``VAULTMEM_EMBEDDER=fake`` makes a daemon subprocess embed with the deterministic
#: :class:`FakeEmbedder` (no model, instant start), for crash and soak tests. Never set it in use:
#: an index built with the fake model is rebuilt when the real one next opens it.
EMBEDDER_ENV = "VAULTMEM_EMBEDDER"


def embedder_for(settings: Settings) -> Embedder:
    """The embedder for ``settings``: the packaged ONNX model, or the model in ``model_dir``."""
    if os.environ.get(EMBEDDER_ENV) == "fake":
        return FakeEmbedder()
    return OnnxEmbedder(settings.model_dir, threads=settings.embed_threads)


def open_index(settings: Settings, embedder: Embedder) -> NoteIndex:
    """Open the search index, checked; a damaged one is deleted and rebuilt from the vault.

    The index is derived state (invariant 1), so damage (a lost LanceDB manifest or data file,
    truncated BM25 files, an unreadable ``index.json``) is repaired, not reported as a failure to
    start: the folder is removed and the reconcile that follows every open re-indexes the vault.
    """
    location.sweep(settings.state_dir)  # folders of replaced indexes nobody holds any more
    path = location.current(settings.state_dir)
    follow = settings.state_dir
    try:
        index = NoteIndex.open(path, embedder, calibration=calibration_for(settings), follow=follow)
    except IndexError_ as exc:
        log.warning("the search index is damaged (%s); rebuilding it from the vault", exc)
    else:
        try:
            _probe(index)
            return index
        except IndexError_ as exc:
            log.warning("the search index is damaged (%s); rebuilding it from the vault", exc)
            with contextlib.suppress(Exception):
                index.close()
    shutil.rmtree(path, ignore_errors=True)
    return NoteIndex.open(path, embedder, calibration=calibration_for(settings), follow=follow)


def rebuild_index(settings: Settings, progress: Progress | None = None) -> tuple[ReconcileReport, int]:
    """Build the whole index anew from the vault and make it the current one (``reindex --full``);
    return the reconcile's report and the number of notes indexed.

    The new index is built in a folder of its own beside the current one, which processes that
    have it open (a running daemon) go on using meanwhile; pointing the state directory at the new
    folder is one atomic rename, and each of them switches on its next read
    (:mod:`vaultmem.index.location`). Nothing is deleted under another process's feet.
    """
    with VaultService(settings, background_commits=False) as service:
        folder, held = location.new_folder(settings.state_dir)
        try:
            index = NoteIndex.open(folder, embedder_for(settings), calibration=calibration_for(settings))
            try:
                edges = EdgeSync(service.catalog, index)
                report = reconcile(service.layout, service.catalog, index, progress=progress, edges=edges)
                edges.drain()
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


def _probe(index: NoteIndex) -> None:
    """Read every part of the index once (rows, vectors, the BM25 index); raise IndexError_ if any fails."""
    problem = index.probe()
    if problem is not None:
        raise IndexError_(f"the index failed its check: {problem}")


class Runtime:
    """A vault opened with its index: the service plus search, reconcile and (optionally) watching."""

    def __init__(
        self,
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        background_commits: bool = True,
        **service_options: Any,
    ) -> None:
        self.settings = settings
        # Opening builds ~10 objects per note (catalog entries, index records); with everything the
        # imports left behind in the collector's generations, the cyclic GC's passes over them were
        # half of a cold start's catalog and index load. What exists now (modules, classes) lives as
        # long as the process: freeze it out of the collector's way, and the opened state after it.
        gc.freeze()
        embedder = embedder or embedder_for(settings)
        self._warmup = warm_in_background(embedder)  # the model loads while the catalog is scanned
        self.service = VaultService(settings, background_commits=background_commits, **service_options)
        self.index = open_index(settings, embedder)
        self.edges = EdgeSync(self.service.catalog, self.index)
        self.service.listeners.append(IndexListener(self.index, self.edges))
        # The graph tools (memory_recall, memory_store): reads and writes over the same vault and index.
        lookup = Lookup(self.service, self.index, self.edges)
        self.recall = Recall(lookup, calibration_for(settings), self.service._now)
        self.store = GraphStore(lookup, PreviewTokens())
        # The rest of the graph tools (supersede, manage, reflect, status, primers), same tokens and pipeline.
        self.upkeep = Upkeep(settings, lookup, self.store, self.recall)
        # Placement, edge review, retention review and clusters (graph tools III).
        self.review = Review(
            settings, lookup, self.store, self.upkeep.supersede, self.upkeep.primers, self.recall.calibration
        )
        self.watcher: VaultWatcher | None = None
        # Index writes that failed (a full disk under the state directory) are written again by a
        # reconcile: the first one RETRY_FIRST s after the failure, then backing off to RETRY_MAX.
        self._retry_lock = threading.Lock()
        self._retry_delay = RETRY_FIRST
        self._retry_scheduled = False
        self.index.on_write_failure = self._index_write_failed
        # Another process rebuilt the index (`reindex --full`): this one switched to the new folder;
        # what it wrote meanwhile (in its catalog, not in the new index) is written there now.
        self.index.on_switch = self._index_switched
        # Opening the service has just scanned the catalog: the first reconcile need not again.
        self._catalog_fresh = True
        gc.freeze()

    # -- keeping the index in step ------------------------------------------------------------
    def reconcile(self, progress: Progress | None = None, *, rescan_vault: bool = True) -> ReconcileReport:
        """Make the index equal the vault (the catalog is rescanned first unless told not to).

        Only the catalog rescan holds the service's write lock (decisions must not see it half
        built); the index work runs beside the agents' writes.
        """
        first = self._catalog_fresh  # the reconcile that follows opening
        if rescan_vault and not self._catalog_fresh:
            with self.service.lock:
                self.service.catalog.scan()
        self._catalog_fresh = False
        if self.index.needs_rebuild():
            self.index.rebuild()
        report = reconcile(
            self.service.layout, self.service.catalog, self.index, progress=progress, edges=self.edges
        )
        try:  # rows earlier processes left out of the full-text index (see maintain_if_behind);
            # at start any lag, so the index a start (or a crash recovery) leaves ranks exactly as
            # a fresh build would; later rescans only when it matters
            self.index.maintain_if_behind(any_lag=first)
        except IndexError_ as exc:
            log.warning("%s", exc)
        return report

    def sync_path(self, rel: str) -> str:
        """One watched path: catalog and index brought up to date (the catalog locks itself).

        A side file (a slot or a project.yaml: not a note) has nothing to index; ``changed`` has the
        watcher commit a person's edit to it (a no-op when vaultmem's own commit already holds it).
        """
        if is_side_file(rel):
            return "skipped" if self.service.layout.skip_reason(rel) else "changed"
        return sync_path(self.service.layout, self.service.catalog, self.index, rel, self.edges)

    def _rescan(self) -> list[str]:
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

    def _commit_hand_edits(self, paths: list[str]) -> None:
        root = self.service.layout.root
        deleted = {p for p in paths if not os.path.lexists(root / p)}
        commits: CommitWriter = self.service.commits
        commits.submit(paths, hand_edit_message(paths, deleted), record=False)

    def start_watching(self) -> VaultWatcher:
        watcher = VaultWatcher(
            self.settings.vault,
            self.settings.state_dir,
            sync_path=self.sync_path,
            rescan=self._rescan,
            commit=self._commit_hand_edits,
            quiet_period=self.settings.commit_quiet_period,
            rescan_interval=self.settings.rescan_interval,
        )
        watcher.start()
        self.watcher = watcher
        return watcher

    # -- reads ----------------------------------------------------------------------------------
    def search(self, request: SearchRequest) -> dict[str, Any]:
        check_kind_filter(request.kind, self.service)
        return memory_search(self.index, request)

    # -- lifecycle ------------------------------------------------------------------------------
    def close(self) -> None:
        self.edges.close()
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None
        self.service.close()
        self.index.close()
        self._warmup.join()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
