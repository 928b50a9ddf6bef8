"""Opening a vault's index from its settings: the embedder, the calibration, repair of a damaged index.

``lancedb`` and ``onnxruntime`` are imported by the index modules; this one imports them only when
an index is opened, so a process that never opens one never loads them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from dataclasses import replace
from typing import TYPE_CHECKING

from vaultmem.config import Settings
from vaultmem.errors import IndexError_
from vaultmem.index import location
from vaultmem.index.fusion import RelevanceCalibration

if TYPE_CHECKING:
    from vaultmem.index.embedder import Embedder
    from vaultmem.index.note_index import NoteIndex

log = logging.getLogger(__name__)

#: Test-only: ``VAULTMEM_EMBEDDER=fake`` makes a daemon subprocess embed with the deterministic
#: :class:`FakeEmbedder` (no model, instant start), for crash and soak tests. Never set it in use:
#: an index built with the fake model is rebuilt when the real one next opens it.
EMBEDDER_ENV = "VAULTMEM_EMBEDDER"


def calibration_for(settings: Settings) -> RelevanceCalibration:
    """The relevance calibration, with the settings' overrides."""
    overrides = {
        k: v
        for k, v in (
            ("unrelated_floor", settings.unrelated_floor),
            ("vector_floor", settings.vector_floor),
            ("min_relevance", settings.min_relevance),
        )
        if v is not None
    }
    return replace(RelevanceCalibration(), **overrides)


def embedder_for(settings: Settings) -> Embedder:
    """The embedder for ``settings``: the packaged ONNX model, or the model in ``model_dir``."""
    from vaultmem.index.embedder import FakeEmbedder, OnnxEmbedder

    if os.environ.get(EMBEDDER_ENV) == "fake":
        return FakeEmbedder()
    return OnnxEmbedder(settings.model_dir, threads=settings.embed_threads)


def open_index(settings: Settings, embedder: Embedder) -> NoteIndex:
    """Open the search index, checked; a damaged one is deleted and rebuilt from the vault.

    The index is derived state (invariant 1), so damage (a lost LanceDB manifest or data file,
    truncated BM25 files, an unreadable ``index.json``) is repaired, not reported as a failure to
    start: the folder is removed and the reconcile that follows every open re-indexes the vault.
    """
    from vaultmem.index.note_index import NoteIndex

    location.sweep(settings.state_dir)  # folders of replaced indexes nobody holds any more
    path = location.current(settings.state_dir)
    follow = settings.state_dir
    try:
        index = NoteIndex(path, embedder, calibration=calibration_for(settings), follow=follow)
    except IndexError_ as exc:
        log.warning("the search index is damaged (%s); rebuilding it from the vault", exc)
    else:
        # every part read once (rows, vectors, the BM25 index); an open from the snapshot leaves the
        # tables to their first use
        problem = index.probe(tables=index.tables_open)
        if problem is None:
            return index
        log.warning(
            "the search index is damaged (the index failed its check: %s); rebuilding it from the vault",
            problem,
        )
        with contextlib.suppress(Exception):
            index.close()
    shutil.rmtree(path, ignore_errors=True)
    return NoteIndex(path, embedder, calibration=calibration_for(settings), follow=follow)


def open_existing_index(settings: Settings) -> NoteIndex | None:
    """The current index to read (``vaultmem doctor``), or None when none was built yet."""
    from vaultmem.index.note_index import NoteIndex

    folder = location.current(settings.state_dir)
    if not folder.exists():
        return None
    # doctor reads only: the tables its probe opens are neither folded nor saved as a snapshot
    return NoteIndex(
        folder, embedder_for(settings), calibration=calibration_for(settings), saves_snapshot=False
    )
