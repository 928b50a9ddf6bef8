"""NoteIndex: the derived LanceDB index of the vault, its writes and its reads.

Everything here can be rebuilt from the vault: deleting the state directory loses nothing a
person cares about. Every LanceDB error is translated once, here, into
:class:`~vaultmem.errors.IndexError_`.

Layout under ``<state_dir>/lancedb``: ``notes`` (one row per note: its record, vector and the
vectors of a long note's windows) and ``embeddings`` (:mod:`~vaultmem.index.cache`).
``<state_dir>/index.json`` records the model id, vector width and index layout version the tables
were built with. The edge graph is held in memory only (``sync/graph.py``).

In memory: a :class:`~vaultmem.index.mirror.NoteMirror` of the notes table (records, vectors,
filter columns, the lexical leg's postings) and the per-project
:class:`~vaultmem.index.timeline.Timeline`, both loaded from the notes table at open. Writes go
through a :class:`~vaultmem.index.writer.WriteQueue`: the call returns at once, one thread embeds
and commits in order, and every read first waits for the writes queued before it (read your
writes without making the vault's write path wait). When the tables are maintained is
:mod:`~vaultmem.index.maintenance`'s business; how they are searched, :mod:`~vaultmem.index.search`'s.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from vaultmem.errors import IndexError_, InvalidInput
from vaultmem.index import cache, lexical, location, snapshot
from vaultmem.index.cache import EmbeddingCache
from vaultmem.index.embedder import Embedder, warm_in_background
from vaultmem.index.episodes import Episodes
from vaultmem.index.fusion import FusionConfig, RelevanceCalibration
from vaultmem.index.heap import release_free_memory
from vaultmem.index.lance_loop import lance_errors
from vaultmem.index.maintenance import QUIET_SNAPSHOT_S, Maintenance
from vaultmem.index.meta import IndexMeta
from vaultmem.index.mirror import NoteMirror
from vaultmem.index.note_vectors import NoteVectors, VectorMaker
from vaultmem.index.records import NoteRecord, SearchFilters, SearchResult
from vaultmem.index.search import HybridSearcher
from vaultmem.index.timeline import Timeline
from vaultmem.index.writer import DeleteNotes, UpsertNotes, WriteOp, WriteQueue

if TYPE_CHECKING:
    from vaultmem.index._schema import Chunks
    from vaultmem.index.tables import NoteTables

__all__ = ["NoteIndex"]

log = logging.getLogger(__name__)

#: Tries of one LanceDB write before it is recorded as failed and left to the next reconcile.
_WRITE_ATTEMPTS = 4
#: The tables under ``<state_dir>/lancedb``, in the order maintenance visits them.
_TABLES = ("notes", cache.TABLE)


class NoteIndex:
    """The searchable index of a vault's notes."""

    def __init__(
        self,
        state_dir: Path,
        embedder: Embedder,
        *,
        fusion: FusionConfig | None = None,
        calibration: RelevanceCalibration | None = None,
        maintenance_threshold: int = 32,
        quiet_snapshot_s: float = QUIET_SNAPSHOT_S,
        saves_snapshot: bool = True,
        follow: Path | None = None,
    ) -> None:
        """Open (creating if needed) the index under ``state_dir``.

        The index remembers the embedding model it was built with; if ``embedder`` differs,
        :meth:`needs_rebuild` is true and the vector leg stays off until :meth:`rebuild` runs.
        With ``follow`` (the state directory whose current index ``state_dir`` is), the index
        switches to the folder a full rebuild by another process puts in its place
        (:mod:`vaultmem.index.location`).
        """
        self._state_dir = Path(state_dir)
        self._embedder = embedder
        self._warmup = warm_in_background(embedder)  # the model loads while the notes are read
        with lance_errors(f"open {state_dir}"):
            self._state_dir.mkdir(parents=True, exist_ok=True)
        # Holds the folder while it is open; with ``follow``, notices a rebuild that replaced it.
        self._follower = location.Follower(follow, self._state_dir)
        #: Called (on a reader's thread) after this index switched to a folder another process
        #: rebuilt: the owner reconciles it with the vault (writes made meanwhile, say).
        self.on_switch: Callable[[], None] | None = None
        self._after_switch = location.Catchup()
        #: Held by the writer thread while it applies a batch, and by rebuild and maintenance.
        self.apply_lock = threading.RLock()
        self._closed = False
        #: Notes whose last write to the index failed (a full disk under the state directory, say):
        #: ``{vault path: error}``. The vault has them; a reconcile writes them again, and a write
        #: that succeeds (or a reconcile that finds the note in step) clears the entry.
        self.failed_writes: dict[str, str] = {}
        #: Called on the writer thread when a write fails for good (the owner schedules a retry).
        self.on_write_failure: Callable[[], None] | None = None
        self._meta = IndexMeta.read_for(self._state_dir, embedder, record=saves_snapshot)
        #: The LanceDB tables, opened when first needed (:meth:`_lance`): not at all by an open
        #: that adopts its snapshot and then only searches.
        self._tables: NoteTables | None = None
        self._tables_lock = threading.Lock()
        self._cache = EmbeddingCache(None, embedder, opener=self._lance)
        #: The id index's lag the adopted snapshot recorded (None: the table was read).
        self._snapshot_unindexed: int | None = None
        self.adopted_snapshot = False  #: the last load adopted ``mirror.snapshot`` (a clean close's)
        #: The notes table's key (:func:`snapshot.table_key`) the snapshot on disk was saved for:
        #: while the table still has it, there is nothing to save (nor with ``saves_snapshot`` off).
        self._snapshot_key: snapshot.Key | None = None
        self._saves_snapshot = saves_snapshot
        self.mirror = NoteMirror(self._dim)
        self.timeline = Timeline()
        config = fusion or FusionConfig()
        self.episodes = Episodes(self.timeline, self.mirror)
        self._maker = VectorMaker(self._cache, self.mirror, self.timeline, config.context_window_s)
        self.notes_stored = 0  # since the index opened (reindex progress; the cache counts texts)
        repairs = self._load_notes()
        self._maintenance = Maintenance(
            self, threshold=maintenance_threshold, quiet_snapshot_s=quiet_snapshot_s
        )
        self._writes = WriteQueue(self._apply)
        for op in repairs:
            self._writes.submit(op)
        self.searcher = HybridSearcher(
            mirror=self.mirror,
            timeline=self.timeline,
            episodes=self.episodes,
            embedder=embedder,
            ready=self.wait_for_writes,
            stale=self.needs_rebuild,
            fusion=config,
            calibration=calibration or RelevanceCalibration(),
        )

    # ----------------------------------------------------------------- opening and metadata

    @property
    def embedder(self) -> Embedder:
        """The embedder this index embeds notes and queries with."""
        return self._embedder

    def _lance(self) -> NoteTables:
        """The LanceDB tables, opened (and ``lancedb`` imported) the first time one is needed."""
        tables = self._tables
        if tables is None:
            with self._tables_lock:
                tables = self._tables
                if tables is None:
                    from vaultmem.index.tables import NoteTables

                    tables = NoteTables(self._state_dir, self._meta, self._embedder, self._cache)
                    self._tables = tables
        return tables

    @property
    def async_notes_table(self) -> Any:
        """LanceDB's asynchronous handle of the notes table (one event-loop hop per query)."""
        return self._lance().notes

    @property
    def tables_open(self) -> bool:
        """Whether the LanceDB tables were opened (an open from the snapshot leaves them shut)."""
        return self._tables is not None

    def _load_notes(self) -> list[WriteOp]:
        """Read the notes table into the mirror and the timeline; returns repairs to queue.

        Two rows with one id (two processes that both added the note) are collapsed here and
        rewritten as one row by the returned repair.
        """
        self._snapshot_unindexed = self._snapshot_key = None
        saved = None
        if not self.needs_rebuild() and self._meta.values:
            key = snapshot.table_key(self._state_dir)
            saved = snapshot.load(self._state_dir, key, self._embedder.model_id, self._dim)
            self._snapshot_key = None if saved is None else key
        chunks: list[Chunks] | None
        self.adopted_snapshot = saved is not None
        if saved is not None:
            self._snapshot_unindexed = saved.unindexed
            records, vectors, chunks = saved.records, saved.vectors, saved.chunks
        else:
            with lance_errors("load the notes into memory"):  # before the model is needed
                records, vectors, chunks = self._lance().read(self._dim, not self.needs_rebuild())
        seen: dict[str, int] = {}
        for row, record in enumerate(records):
            seen[record.id] = row  # the last row of an id wins
        repairs: list[WriteOp] = []
        if len(seen) != len(records):
            keep = sorted(seen.values())
            dupes = sorted(i for i, n in Counter(r.id for r in records).items() if n > 1)
            log.warning("the index held %d note id(s) twice; rewriting them once", len(dupes))
            records = [records[i] for i in keep]
            vectors = vectors[keep]
            chunks = None if chunks is None else [chunks[i] for i in keep]
            twice = set(dupes)
            repairs = [DeleteNotes(dupes), UpsertNotes([r for r in records if r.id in twice])]
        # the timeline first: a short note's context field is the note its session wrote before it
        self.timeline.replace((r.id, r.project, r.created, r.session) for r in records)
        postings, around = lexical.read_state(self._state_dir), self._maker.contexts(records)
        self.mirror.replace(records, vectors, chunks, lexical_state=postings, contexts=around)
        release_free_memory()  # what reading the table through Arrow allocated and freed
        return repairs

    def _follow(self) -> None:
        """Switch to the index folder another process's full rebuild made current, if it did.

        Two ``stat`` calls when nothing changed. The switch happens with the writer held back;
        queued writes then land in the new folder, and ``on_switch`` (the owner's reconcile) runs
        on the first reader's thread, never on the writer's.
        """
        if self._closed:
            return
        if self._follower.changed():
            with self.apply_lock:
                if self._follower.changed(now=True):  # another thread may have switched meanwhile
                    folder = self._follower.switch()
                    log.info("the search index was replaced (a full rebuild?); now using %s", folder)
                    with lance_errors(f"open {folder}"):
                        self._state_dir = folder
                        self._meta = IndexMeta.read_for(folder, self._embedder, record=self._saves_snapshot)
                        self._tables = None  # the new folder's, opened when needed
                        self._cache.table = None
                    self._cache.forget_known()
                    self._load_notes()  # twice-held ids are collapsed by the reconcile that follows
                    self._after_switch.due()
        if self.on_switch is not None and not self._writes.on_writer_thread():
            self._after_switch.run(self.on_switch)

    def needs_rebuild(self) -> bool:
        """True when the stored vectors or derived columns were built by another model/layout."""
        return self._meta.stale_for(self._embedder)

    @property
    def _dim(self) -> int:
        return self._meta.dim_for(self._embedder)

    def rebuild(self) -> int:
        """Recompute every derived column and vector from the stored notes; returns the row count.
        Vectors come from the embedding cache where the (model, text) pair was seen before."""
        self.wait_for_writes()
        self._maintenance.wait()
        with self.apply_lock, lance_errors("rebuild the notes table"):
            records = self.mirror.records()
            tables = self._lance()
            tables.recreate_notes()
            made = NoteVectors(np.zeros((0, self._embedder.dim), dtype=np.float32))
            for start in range(0, len(records), 1024):
                batch = records[start : start + 1024]
                part = self._maker.for_records(batch, reuse=False)
                tables.add(batch, part)
                made.vectors = np.concatenate([made.vectors, part.vectors])
                made.chunks += part.chunks
            self.mirror.replace(records, made.vectors, made.chunks, contexts=self._maker.contexts(records))
        self.maintenance()
        return len(records)

    # ----------------------------------------------------------------- writes

    def upsert(self, records: Sequence[NoteRecord]) -> None:
        """Insert or replace notes by id; applied in the background, visible to the next read.

        Unchanged texts are never re-embedded.
        """
        if not records:
            return
        ids = [r.id for r in records]
        if len(set(ids)) != len(ids):
            raise InvalidInput("upsert got the same note id twice in one batch")
        self._submit(UpsertNotes(list(records)))

    def delete_ids(self, ids: Iterable[str]) -> None:
        """Remove notes from the index."""
        ids = sorted(set(ids))
        if ids:
            self._submit(DeleteNotes(ids))

    def _submit(self, op: WriteOp) -> None:
        if self._closed:
            raise IndexError_("the search index is closed")
        self._writes.submit(op)

    def wait_for_writes(self, timeout: float | None = None) -> None:
        """Block until every write queued before this call is applied (reads call this first).

        It first switches to a folder another process's full rebuild put in place, if any.
        """
        self._follow()
        if not self._writes.wait(timeout):
            raise IndexError_(f"the search index did not catch up with its writes within {timeout} s")

    def writes_idle(self) -> bool:
        """Nothing queued or being applied."""
        return self._writes.idle

    def writes_done(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the writes queued so far; whether they are all applied."""
        return self._writes.wait(timeout)

    @property
    def texts_embedded(self) -> int:
        """Texts (notes, windows of long notes) embedded since the index opened, not from the cache."""
        return self._cache.embedded

    def _apply(self, batch: list[WriteOp]) -> None:
        """The writer thread: apply ``batch`` in order, gathering each run of upserts into one
        commit (a delete ends the run)."""
        with self.apply_lock:
            with suppress(IndexError_):  # a failed switch leaves the writes to fail and be retried
                self._follow()
            notes: dict[str, NoteRecord] = {}
            for op in batch:
                if isinstance(op, UpsertNotes):
                    for record in op.records:
                        notes.pop(record.id, None)
                        notes[record.id] = record
                else:
                    self._store_notes(list(notes.values()))
                    notes = {}
                    gone = self.mirror.get_many(op.ids)
                    after = self._maker.followers(list(gone.values()), gone)
                    self._guarded("delete notes", self._apply_delete, op.ids, [r.path for r in gone.values()])
                    notes = {r.id: r for r in after}  # their header came from a note now gone
            self._store_notes(list(notes.values()))
        self._maintenance.after_batch()

    def _store_notes(self, records: list[NoteRecord]) -> None:
        if records:
            self._guarded("store notes", self._apply_upserts, records, [r.path for r in records])

    def _guarded(self, action: str, apply: Any, arg: Any, paths: Sequence[str]) -> None:
        """Run one write, retried a few times: a commit can lose a race to a background
        compaction or another process. Each write is idempotent (a retry re-checks which notes
        the table already holds), and memory changes only once LanceDB has the write.

        A write that still fails is recorded for ``paths`` in :attr:`failed_writes` and the
        ``on_write_failure`` hook is told: the vault has the notes, a reconcile writes them again.
        """
        for attempt in range(_WRITE_ATTEMPTS):
            try:
                with lance_errors(action):
                    apply(arg)
                for path in paths:
                    self.failed_writes.pop(path, None)
                return
            except IndexError_ as exc:
                if attempt + 1 == _WRITE_ATTEMPTS:  # the vault has the note; a reconcile repairs it
                    for path in paths:
                        self.failed_writes[path] = str(exc)
                    log.warning("%s (%d note(s) to write again)", exc, len(paths))
                    if self.on_write_failure is not None and paths:
                        try:
                            self.on_write_failure()
                        except Exception:  # a hook must never stop the writer
                            log.exception("the index write-failure hook failed")
                    return
                log.debug("retrying after: %s", exc)
                time.sleep(0.05 * 2**attempt)
                with suppress(Exception):
                    self._lance().checkout_latest()

    def _apply_upserts(self, records: list[NoteRecord]) -> None:
        batch = {r.id: r for r in records}
        moved = [r for r in records if (old := self.mirror.get(r.id)) is None or old.text != r.text]
        for r in records:  # before the vectors: a short note's header comes from its predecessor
            self.timeline.add(r.id, r.project, r.created, r.session)
        records = [*records, *self._maker.followers(moved, batch)]
        made = self._maker.for_records(records, reuse=not self.needs_rebuild())
        new = [r.id for r in records if r.id not in self.mirror]
        tables = self._lance()
        # Another vaultmem process may have added a note this one has not seen yet.
        present = tables.ids_in(new) if new else set()
        added = {i for i in new if i not in present}
        fresh = [i for i, r in enumerate(records) if r.id in added]
        known = [i for i, r in enumerate(records) if r.id not in added]
        if fresh:
            tables.add([records[i] for i in fresh], made.subset(fresh))
        if known:
            tables.merge([records[i] for i in known], made.subset(known))
        tables.mark_written()
        self.mirror.put(records, made.vectors, made.chunks, self._maker.contexts(records))
        self.notes_stored += len(batch)
        self._maintenance.pending_writes += 1

    def _apply_delete(self, ids: Sequence[str]) -> None:
        self._lance().delete(ids)
        self.mirror.remove(ids)
        for note_id in ids:
            self.timeline.remove(note_id)
        self._maintenance.pending_writes += 1

    # ----------------------------------------------------------------- reads (from memory)

    def get(self, note_id: str) -> NoteRecord | None:
        """The note with this id, or None."""
        self.wait_for_writes()
        return self.mirror.get(note_id)

    def get_many(self, ids: Sequence[str]) -> dict[str, NoteRecord]:
        """The notes among ``ids`` that exist, by id."""
        self.wait_for_writes()
        return self.mirror.get_many(ids)

    def ids_with_prefix(self, hexprefix: str, limit: int = 100) -> list[str]:
        """Ids whose hex digits (hyphens removed, lower-case) start with ``hexprefix``, in id order."""
        prefix = hexprefix.replace("-", "").lower()
        if not prefix or any(c not in "0123456789abcdef" for c in prefix):
            raise InvalidInput(f"{hexprefix!r} is not a hexadecimal id prefix")
        self.wait_for_writes()
        found = [r.id for r in self.mirror.records() if r.id.replace("-", "").lower().startswith(prefix)]
        return sorted(found)[:limit]

    def path_hashes(self) -> dict[str, str]:
        """``{vault-relative path: content_hash}`` of every indexed note (for reconcile)."""
        self.wait_for_writes()
        return self.mirror.path_hashes()

    def settle_failed_writes(self, wanted: dict[str, str]) -> None:
        """Forget recorded write failures of notes the index now holds as the vault does
        (``wanted``: ``{path: content hash}``, absent paths meaning no note): written again by a
        reconcile, or gone from both."""
        self.wait_for_writes()
        held = self.mirror.path_hashes(list(self.failed_writes))
        for path in list(self.failed_writes):
            if held.get(path) == wanted.get(path):
                self.failed_writes.pop(path, None)

    def path_hashes_for(self, paths: Sequence[str]) -> dict[str, str]:
        """``{path: content_hash}`` of the indexed notes among ``paths``."""
        self.wait_for_writes()
        return self.mirror.path_hashes(paths)

    def records_for_paths(self, paths: Sequence[str]) -> list[NoteRecord]:
        """The indexed notes stored under any of ``paths``."""
        self.wait_for_writes()
        found = self.mirror.get_many(self.mirror.ids_for_paths(paths))
        return [found[i] for i in sorted(found)]

    def iter_records(self) -> Iterator[NoteRecord]:
        """Every indexed note (order unspecified)."""
        self.wait_for_writes()
        yield from self.mirror.records()

    def count(self) -> int:
        """Number of indexed notes."""
        self.wait_for_writes()
        return len(self.mirror)

    # ----------------------------------------------------------------- search

    def search(
        self,
        query: str,
        filters: SearchFilters | None = None,
        k: int = 10,
        *,
        min_relevance: float | None = None,
    ) -> SearchResult:
        """Hybrid search (BM25 + vector, fused as configured); see :mod:`vaultmem.index.search`."""
        return self.searcher.search(query, filters or SearchFilters(), k, min_relevance=min_relevance)

    def search_bm25(self, query: str, filters: SearchFilters | None = None, k: int = 10) -> SearchResult:
        """The full-text (BM25) leg alone."""
        return self.searcher.search_bm25(query, filters or SearchFilters(), k)

    def search_vector(
        self, query: str | npt.NDArray[np.float32], filters: SearchFilters | None = None, k: int = 10
    ) -> SearchResult:
        """The vector leg alone; ``query`` is a text or an already-embedded vector."""
        return self.searcher.search_vector(query, filters or SearchFilters(), k)

    def probe(self, *, tables: bool = True) -> str | None:
        """Read every part of the index once (rows, vectors, the scalar indices the writer's
        deletes and merges use) as a search or a write does; the error when one fails, None when
        the index can be used. Without ``tables``, only the memory a search reads, with no query
        embedded (the model goes on loading): an open from the snapshot leaves the tables to their
        first use."""
        records = self.mirror.records()
        try:
            self.count()
            self.search_bm25("vaultmem index check", k=1)
            if tables:
                with lance_errors("read a row"):
                    self._lance().check(records[0] if records else None)
                self.search("vaultmem index check", k=1)
        except Exception as exc:  # LanceDB lets some errors through untranslated
            return str(exc)
        return None

    # ----------------------------------------------------------------- maintenance

    def maintenance(self, *, background: bool = False, fold: bool | None = True) -> None:
        """Compact small fragments, fold new rows into the indices and prune old versions
        (``fold=None`` folds only once enough rows lag, as runs started by writes do); in the
        background unless told otherwise (:mod:`vaultmem.index.maintenance`)."""
        if background:
            self._maintenance.start(fold=fold)
        else:
            self._maintenance.run(fold=fold)

    def maintain_if_behind(self, *, any_lag: bool = False) -> bool:
        """Start background maintenance if the full-text index lags the table by enough rows
        (:meth:`Maintenance.if_behind <vaultmem.index.maintenance.Maintenance.if_behind>`)."""
        return self._maintenance.if_behind(any_lag=any_lag)

    def wait_for_maintenance(self, timeout: float = 30.0) -> None:
        """Block until a background maintenance run (if any) finishes."""
        self._maintenance.wait(timeout)

    def table_paths(self) -> list[Path]:
        """The folders of the index's tables (what maintenance compacts and prunes)."""
        return [self._state_dir / "lancedb" / f"{name}.lance" for name in _TABLES]

    def vectors_of(self, texts: dict[str, str], *, embed: bool) -> dict[str, npt.NDArray[np.float32]]:
        """Vectors of ``{text hash: text}`` the embedding cache holds; with ``embed`` the others too,
        embedded outside the apply lock (the index's writes go on) and queued for the cache."""
        with self.apply_lock, lance_errors("read the embedding cache"):
            found = self._cache.lookup(list(texts))
        todo = {h: t for h, t in texts.items() if h not in found}
        if embed and todo:
            fresh = dict(zip(todo, self._embedder.embed(list(todo.values())), strict=True))
            with self.apply_lock, lance_errors("write the embedding cache"):
                self._cache.remember(fresh)
            found.update(fresh)
        return found

    def seed_cache(self, folder: Path) -> int:
        """Copy (read only) ``folder``'s embedding cache into this one's; returns the rows copied."""
        with lance_errors(f"read the embedding cache of {folder}"):
            table = cache.table_in(folder)
            with self.apply_lock:
                return 0 if table is None else self._cache.copy_from(table)

    def flush_cache(self) -> None:
        """Write the embedding cache's queued vectors (call with :attr:`apply_lock` held)."""
        with lance_errors("flush the embedding cache"):
            self._cache.flush()

    def reopen_tables(self) -> None:
        """Swap in fresh table handles, if any are open (call with :attr:`apply_lock` held):
        :meth:`NoteTables.reopen <vaultmem.index.tables.NoteTables.reopen>` says why."""
        if self._tables is None:
            return  # none open: nothing held
        with lance_errors("reopen its tables"):
            self._tables.reopen()

    def unindexed_rows(self) -> int:
        """Rows of the notes table its index of ids does not cover yet (scanned, not looked up)."""
        if self._tables is None and self._snapshot_unindexed is not None:
            return self._snapshot_unindexed  # the table is as the snapshot saw it
        with lance_errors("read its index statistics"):
            return self._lance().unindexed_rows()

    def close(self) -> None:
        """Apply queued writes, flush queued cache rows and wait for background work."""
        if self._closed:
            return
        self._closed = True
        self._writes.close()
        self._maintenance.close()
        self._warmup.join()
        try:
            with self.apply_lock:
                self.flush_cache()
        except IndexError_ as exc:  # a full disk, say: the cache is derived, the next run re-embeds
            log.warning("%s", exc)
        finally:
            lexical.save_state(self._state_dir, self.mirror.lexical_state())
            self.save_snapshot()
            self._follower.close()

    def save_snapshot(self) -> None:
        """Save the mirror and the lexical postings for the next open (:mod:`~.snapshot`) unless the
        snapshot on disk still describes the table (or the tables were never opened): at close,
        and once writes have paused a while (maintenance), so a start after a crash reads none."""
        tables = self._tables
        if tables is None or self.needs_rebuild() or not self._saves_snapshot:
            return
        try:
            with self.apply_lock, lance_errors("save its snapshot"):
                if snapshot.table_key(self._state_dir) == self._snapshot_key:
                    return
                if tables.unindexed_rows():  # folded now, so the next start has nothing to fold
                    self._maintenance.run(fold=True)
                self._snapshot_key = tables.save_snapshot(self.mirror, self._embedder.model_id)
                lexical.save_state(self._state_dir, self.mirror.lexical_state())
        except IndexError_ as exc:  # derived: the next open reads the table
            log.warning("%s", exc)
            snapshot.discard(self._state_dir)
