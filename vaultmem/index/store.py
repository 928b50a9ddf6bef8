"""NoteIndex: the derived LanceDB index of the vault (notes, embedding cache, edges).

Everything here can be rebuilt from the vault: deleting the state directory loses nothing a
person cares about. Writes are serialised by one lock; searches read lock-free. Every LanceDB
error is translated once, here, into :class:`~vaultmem.errors.IndexError_`.

Layout under ``<state_dir>/lancedb``: ``notes`` (one row per note, vector + combined
``search_text`` with LanceDB's native BM25 index), ``embeddings`` (vectors keyed by model id and
the sha256 of the embedded text, so a reindex re-embeds nothing unchanged) and ``edges``.
``<state_dir>/index.json`` records the model id, vector width and index layout version the
tables were built with.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import numpy.typing as npt
import pyarrow as pa

from vaultmem.errors import IndexError_, InvalidInput
from vaultmem.index import _schema
from vaultmem.index.embedder import Embedder
from vaultmem.index.fusion import FusionConfig, RelevanceCalibration
from vaultmem.index.records import (
    EdgeRecord,
    NoteRecord,
    SearchFilters,
    SearchResult,
    embedding_text,
    search_text,
    sql_in,
    sql_literal,
    text_hash,
)
from vaultmem.index.search import HybridSearcher
from vaultmem.index.timeline import Timeline

__all__ = ["NoteIndex"]

#: Bump when the derived columns (search_text, embedding text) or FTS options change.
LAYOUT_VERSION = 3
#: Old table versions are kept this long so a concurrent reader never loses its files.
_CLEANUP_AFTER = timedelta(minutes=10)


@contextmanager
def _lance_errors(action: str) -> Iterator[None]:
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


class NoteIndex:
    """The searchable index of a vault's notes. Create it with :meth:`NoteIndex.open`."""

    def __init__(
        self,
        state_dir: Path,
        db: Any,
        embedder: Embedder,
        *,
        fusion: FusionConfig,
        calibration: RelevanceCalibration,
        maintenance_threshold: int,
    ) -> None:
        self._state_dir = state_dir
        self._db = db
        self._embedder = embedder
        self._write_lock = threading.RLock()
        self._maintenance_thread: threading.Thread | None = None
        self._maintenance_threshold = maintenance_threshold
        self._pending_writes = 0
        self._pending_cache: dict[str, npt.NDArray[np.float32]] = {}
        self._cached_hashes: set[str] | None = None
        self._meta = self._read_meta()
        self._notes: Any = None  # LanceDB tables (untyped library objects)
        self._cache: Any = None
        self._edges: Any = None
        self._open_tables()
        self.timeline = Timeline()
        self._load_timeline()
        self.searcher = HybridSearcher(self, fusion=fusion, calibration=calibration)

    # ----------------------------------------------------------------- opening and metadata

    @classmethod
    def open(
        cls,
        state_dir: Path,
        embedder: Embedder,
        *,
        fusion: FusionConfig | None = None,
        calibration: RelevanceCalibration | None = None,
        maintenance_threshold: int = 32,
    ) -> NoteIndex:
        """Open (creating if needed) the index under ``state_dir``.

        The index remembers the embedding model it was built with; if ``embedder`` differs,
        :meth:`needs_rebuild` is true and the vector leg stays off until :meth:`rebuild` runs.
        """
        state_dir = Path(state_dir)
        with _lance_errors(f"open {state_dir}"):
            state_dir.mkdir(parents=True, exist_ok=True)
            db = lancedb.connect(str(state_dir / "lancedb"))
        return cls(
            state_dir,
            db,
            embedder,
            fusion=fusion or FusionConfig(),
            calibration=calibration or RelevanceCalibration(),
            maintenance_threshold=maintenance_threshold,
        )

    @property
    def embedder(self) -> Embedder:
        """The embedder this index embeds notes and queries with."""
        return self._embedder

    @property
    def _meta_path(self) -> Path:
        return self._state_dir / "index.json"

    def _read_meta(self) -> dict[str, Any]:
        try:
            loaded: dict[str, Any] = json.loads(self._meta_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise IndexError_(
                f"{self._meta_path} is unreadable ({exc}); delete the state directory and run "
                "`vaultmem reindex`"
            ) from exc
        return loaded

    def _write_meta(self) -> None:
        self._meta = {
            "model_id": self._embedder.model_id,
            "dim": self._embedder.dim,
            "layout": LAYOUT_VERSION,
        }
        tmp = self._meta_path.with_suffix(".json.tmp")
        with tmp.open("w", encoding="utf-8") as handle:
            json.dump(self._meta, handle)
            handle.flush()
            os.fsync(handle.fileno())
        tmp.replace(self._meta_path)

    def _open_tables(self) -> None:
        with _lance_errors("open its tables"):
            existing = set(self._db.list_tables().tables)
            dim = self._embedder.dim
            if "notes" not in existing or not self._meta:
                if "notes" in existing:
                    self._db.drop_table("notes")
                self._notes = self._db.create_table("notes", schema=_schema.notes_schema(dim))
                _schema.create_note_indices(self._notes)
                self._write_meta()
            else:
                self._notes = self._db.open_table("notes")
            if "embeddings" in existing:
                self._cache = self._db.open_table("embeddings")
            else:
                self._cache = self._db.create_table("embeddings", schema=_schema.cache_schema())
            if "edges" in existing:
                self._edges = self._db.open_table("edges")
            else:
                self._edges = self._db.create_table("edges", schema=_schema.edges_schema())

    def _load_timeline(self) -> None:
        with _lance_errors("load the note timeline"):
            rows = self._notes.search().select(["id", "project", "created"]).to_arrow()
        self.timeline.add_many(
            zip(rows["id"].to_pylist(), rows["project"].to_pylist(), rows["created"].to_pylist(), strict=True)
        )

    def needs_rebuild(self) -> bool:
        """True when the stored vectors or derived columns were built by another model/layout."""
        return (
            self._meta.get("model_id") != self._embedder.model_id
            or self._meta.get("dim") != self._embedder.dim
            or self._meta.get("layout") != LAYOUT_VERSION
        )

    def rebuild(self) -> int:
        """Recompute every derived column and vector from the stored notes; returns the row count.

        Vectors come from the embedding cache where the (model, text) pair was seen before.
        """
        with self._write_lock, _lance_errors("rebuild the notes table"):
            records = list(self.iter_records())
            self._db.drop_table("notes")
            self._notes = self._db.create_table("notes", schema=_schema.notes_schema(self._embedder.dim))
            _schema.create_note_indices(self._notes)
            self._write_meta()
            for start in range(0, len(records), 1024):
                self._insert(records[start : start + 1024], merge=False)
            self._maintain_locked()
            return len(records)

    # ----------------------------------------------------------------- writes

    def upsert(self, records: Sequence[NoteRecord]) -> None:
        """Insert or replace notes by id. Unchanged texts are never re-embedded."""
        if not records:
            return
        ids = [r.id for r in records]
        if len(set(ids)) != len(ids):
            raise InvalidInput("upsert got the same note id twice in one batch")
        with self._write_lock, _lance_errors("store notes"):
            self._insert(records, merge=True)
            self._pending_writes += 1
            due = self._pending_writes >= self._maintenance_threshold
        if due:
            self.maintenance(background=True)

    def _insert(self, records: Sequence[NoteRecord], *, merge: bool) -> None:
        vectors = self._vectors_for([embedding_text(r) for r in records])
        rows = [_schema.note_row(r, search_text(r), vectors[i]) for i, r in enumerate(records)]
        table = pa.Table.from_pylist(rows, schema=self._notes.schema)
        if merge:
            (
                self._notes.merge_insert("id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(table)
            )
        else:
            self._notes.add(table)
        for r in records:
            self.timeline.add(r.id, r.project, r.created)

    def _vectors_for(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Vectors for ``texts``: from the cache when known, else embedded and queued for caching."""
        model = self._embedder.model_id
        hashes = [text_hash(t) for t in texts]
        found: dict[str, npt.NDArray[np.float32]] = {}
        for h in hashes:
            if h in self._pending_cache:
                found[h] = self._pending_cache[h]
        known = self._known_hashes()
        lookup = sorted({h for h in hashes if h in known and h not in found})
        for start in range(0, len(lookup), 512):
            chunk = lookup[start : start + 512]
            where = f"model_id = {sql_literal(model)} AND {sql_in('text_hash', chunk)}"
            rows = self._cache.search().where(where).select(["text_hash", "vector"]).to_arrow()
            for h, vec in zip(rows["text_hash"].to_pylist(), rows["vector"].to_pylist(), strict=True):
                if len(vec) == self._embedder.dim:
                    found[h] = np.asarray(vec, dtype=np.float32)
        missing = sorted({h: t for h, t in zip(hashes, texts, strict=True) if h not in found}.items())
        if missing:
            embedded = self._embedder.embed([t for _, t in missing])
            for (h, _), vec in zip(missing, embedded, strict=True):
                found[h] = vec
                self._pending_cache[h] = vec
            if len(self._pending_cache) >= 256:
                self._flush_cache()
        out = np.zeros((len(texts), self._embedder.dim), dtype=np.float32)
        for i, h in enumerate(hashes):
            out[i] = found[h]
        return out

    def _known_hashes(self) -> set[str]:
        if self._cached_hashes is None:
            where = f"model_id = {sql_literal(self._embedder.model_id)}"
            rows = self._cache.search().where(where).select(["text_hash"]).to_arrow()
            self._cached_hashes = set(rows["text_hash"].to_pylist())
        return self._cached_hashes

    def _flush_cache(self) -> None:
        if not self._pending_cache:
            return
        model = self._embedder.model_id
        rows = [
            {"model_id": model, "text_hash": h, "vector": v.tolist()} for h, v in self._pending_cache.items()
        ]
        self._cache.add(pa.Table.from_pylist(rows, schema=_schema.cache_schema()))
        self._known_hashes().update(self._pending_cache)
        self._pending_cache.clear()

    def delete_ids(self, ids: Iterable[str]) -> None:
        """Remove notes (and the edges they are the source of) from the index."""
        ids = sorted(set(ids))
        if not ids:
            return
        with self._write_lock, _lance_errors("delete notes"):
            for start in range(0, len(ids), 512):
                chunk = ids[start : start + 512]
                self._notes.delete(sql_in("id", chunk))
                self._edges.delete(sql_in("source_id", chunk))
            for note_id in ids:
                self.timeline.remove(note_id)
            self._pending_writes += 1

    # ----------------------------------------------------------------- reads

    def _query(self, where: str | None, limit: int | None = None) -> list[NoteRecord]:
        query = self._notes.search()
        if where:
            query = query.where(where)
        if limit is not None:
            query = query.limit(limit)
        with _lance_errors("read notes"):
            rows = query.select(list(_schema.RECORD_COLUMNS)).to_arrow().to_pylist()
        return [_schema.record_from_row(row) for row in rows]

    def get(self, note_id: str) -> NoteRecord | None:
        """The note with this id, or None."""
        found = self._query(f"id = {sql_literal(note_id)}", limit=1)
        return found[0] if found else None

    def get_many(self, ids: Sequence[str]) -> dict[str, NoteRecord]:
        """The notes among ``ids`` that exist, by id."""
        if not ids:
            return {}
        return {r.id: r for r in self._query(sql_in("id", sorted(set(ids))))}

    def ids_with_prefix(self, hexprefix: str, limit: int = 100) -> list[str]:
        """Ids whose hex digits (hyphens removed, lower-case) start with ``hexprefix``, in id order."""
        prefix = hexprefix.replace("-", "").lower()
        if not prefix or any(c not in "0123456789abcdef" for c in prefix):
            raise InvalidInput(f"{hexprefix!r} is not a hexadecimal id prefix")
        where = f"starts_with(lower(replace(id, '-', '')), {sql_literal(prefix)})"
        with _lance_errors("look up an id prefix"):
            rows = self._notes.search().where(where).select(["id"]).to_arrow()
        return sorted(rows["id"].to_pylist())[:limit]

    def path_hashes(self) -> dict[str, str]:
        """``{vault-relative path: content_hash}`` of every indexed note (for reconcile)."""
        with _lance_errors("list indexed paths"):
            rows = self._notes.search().select(["path", "content_hash"]).to_arrow()
        return dict(zip(rows["path"].to_pylist(), rows["content_hash"].to_pylist(), strict=True))

    def path_hashes_for(self, paths: Sequence[str]) -> dict[str, str]:
        """``{path: content_hash}`` of the indexed notes among ``paths``."""
        if not paths:
            return {}
        with _lance_errors("look up indexed paths"):
            rows = (
                self._notes.search()
                .where(sql_in("path", sorted(set(paths))))
                .select(["path", "content_hash"])
                .to_arrow()
            )
        return dict(zip(rows["path"].to_pylist(), rows["content_hash"].to_pylist(), strict=True))

    def records_for_paths(self, paths: Sequence[str]) -> list[NoteRecord]:
        """The indexed notes stored under any of ``paths``."""
        if not paths:
            return []
        return self._query(sql_in("path", sorted(set(paths))))

    def iter_records(self) -> Iterator[NoteRecord]:
        """Every indexed note (order unspecified)."""
        yield from self._query(None)

    def count(self) -> int:
        """Number of indexed notes."""
        with _lance_errors("count notes"):
            return int(self._notes.count_rows())

    # ----------------------------------------------------------------- search

    def search(self, query: str, filters: SearchFilters | None = None, k: int = 10) -> SearchResult:
        """Hybrid search (BM25 + vector, fused as configured); see :mod:`vaultmem.index.search`."""
        return self.searcher.search(query, filters or SearchFilters(), k)

    def search_bm25(self, query: str, filters: SearchFilters | None = None, k: int = 10) -> SearchResult:
        """The full-text (BM25) leg alone."""
        return self.searcher.search_bm25(query, filters or SearchFilters(), k)

    def search_vector(
        self, query: str | npt.NDArray[np.float32], filters: SearchFilters | None = None, k: int = 10
    ) -> SearchResult:
        """The vector leg alone; ``query`` is a text or an already-embedded vector."""
        return self.searcher.search_vector(query, filters or SearchFilters(), k)

    @property
    def notes_table(self) -> Any:
        """The LanceDB notes table (for the searcher; not a public API)."""
        return self._notes

    # ----------------------------------------------------------------- edges

    def replace_edges_for(self, source_id: str, edges: Sequence[EdgeRecord]) -> None:
        """Make ``edges`` the complete set of edges whose source is ``source_id``."""
        if any(e.source_id != source_id for e in edges):
            raise InvalidInput("every edge passed to replace_edges_for must have that source_id")
        with self._write_lock, _lance_errors("store edges"):
            self._edges.delete(f"source_id = {sql_literal(source_id)}")
            if edges:
                rows = [asdict(e) for e in edges]
                self._edges.add(pa.Table.from_pylist(rows, schema=_schema.edges_schema()))
            self._pending_writes += 1

    def edges_for(self, note_id: str) -> list[EdgeRecord]:
        """Edges that start or end at ``note_id``, ordered by edge id."""
        lit = sql_literal(note_id)
        with _lance_errors("read edges"):
            rows = self._edges.search().where(f"source_id = {lit} OR target_id = {lit}").to_arrow()
        edges = [EdgeRecord(**{k: row[k] for k in _schema.EDGE_COLUMNS}) for row in rows.to_pylist()]
        return sorted(edges, key=lambda e: e.edge_id)

    # ----------------------------------------------------------------- maintenance

    def maintenance(self, *, background: bool = False) -> None:
        """Compact small fragments, fold new rows into the FTS index and prune old versions.

        Thousands of single-row upserts otherwise leave thousands of fragments and an FTS index
        that no longer covers them (still correct — unindexed rows are scanned — but slower).
        With ``background=True`` the work runs on a daemon thread unless one is running already.
        """
        if not background:
            with self._write_lock:
                self._maintain_locked()
            return
        with self._write_lock:
            if self._maintenance_thread is not None and self._maintenance_thread.is_alive():
                return
            self._maintenance_thread = threading.Thread(
                target=self._background_maintenance, name="vaultmem-index-maintenance", daemon=True
            )
            self._maintenance_thread.start()

    def _background_maintenance(self) -> None:
        try:
            with self._write_lock:
                self._maintain_locked()
        except IndexError_:
            pass  # retried at the next threshold or timer tick; searches stay correct meanwhile

    def _maintain_locked(self) -> None:
        with _lance_errors("optimise its tables"):
            self._flush_cache()
            for table in (self._notes, self._cache, self._edges):
                table.optimize(cleanup_older_than=_CLEANUP_AFTER)
            self._pending_writes = 0

    def wait_for_maintenance(self, timeout: float = 30.0) -> None:
        """Block until a background maintenance run (if any) finishes."""
        thread = self._maintenance_thread
        if thread is not None:
            thread.join(timeout)

    def close(self) -> None:
        """Flush queued cache rows and wait for background work."""
        self.wait_for_maintenance()
        with self._write_lock, _lance_errors("flush the embedding cache"):
            self._flush_cache()
