"""The index's LanceDB tables: the notes table and the embedding cache's, and every call made on them.

This is the one module of the index that imports ``lancedb`` and ``pyarrow`` at its top;
:class:`~vaultmem.index.note_index.NoteIndex` imports it when it first needs a table (reading the
table at an open without a usable snapshot, a write, a probe, maintenance), so an index opened
from its snapshot (:mod:`~vaultmem.index.snapshot`) loads neither until then. Every call here runs
with the index's apply lock held or on its writer thread; errors are translated by the caller
(:func:`~vaultmem.index.lance_loop.lance_errors`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import numpy.typing as npt
import pyarrow as pa

from vaultmem.index import _schema, cache, snapshot
from vaultmem.index.cache import EmbeddingCache
from vaultmem.index.embedder import Embedder
from vaultmem.index.lance_loop import lance_errors, run_async
from vaultmem.index.meta import IndexMeta
from vaultmem.index.mirror import NoteMirror
from vaultmem.index.note_vectors import NoteVectors
from vaultmem.index.records import NoteRecord, sql_in, sql_literal

__all__ = ["TABLES", "NoteTables"]

#: The tables under ``<state_dir>/lancedb``, in the order maintenance visits them.
TABLES = ("notes", cache.TABLE)


class NoteTables:
    """The open LanceDB tables of one index folder (the notes table created when missing)."""

    def __init__(self, folder: Path, meta: IndexMeta, embedder: Embedder, embeddings: EmbeddingCache) -> None:
        self.folder = folder
        self._meta = meta
        self._embedder = embedder
        self._cache = embeddings
        self.notes: Any = None  # LanceDB's (asynchronous) notes table, an untyped library object
        #: The notes table's version after this process's last write (None before the first).
        self.own_version: int | None = None
        with lance_errors(f"open {folder}"):
            self.db: Any = run_async(lancedb.connect_async(str(folder / "lancedb")))
        with lance_errors("open its tables"):
            self._open()

    def _open(self) -> None:
        db = self.db
        existing = set(run_async(db.list_tables()).tables)
        if "notes" not in existing or not self._meta.values:
            if "notes" in existing:
                run_async(db.drop_table("notes"))
            self.create_notes()
        else:
            self.notes = run_async(db.open_table("notes"))
        if cache.TABLE in existing:
            self._cache.table = run_async(db.open_table(cache.TABLE))
        else:
            self._cache.table = run_async(db.create_table(cache.TABLE, schema=_schema.cache_schema()))
        if "edges" in existing:  # written before issue 14; the edge graph lives in memory only
            run_async(db.drop_table("edges"))

    def create_notes(self) -> None:
        """An empty notes table of this model's width, with its scalar indices; ``index.json``
        records the model."""
        schema = _schema.notes_schema(self._embedder.dim)
        self.notes = run_async(self.db.create_table("notes", schema=schema))
        run_async(_schema.create_note_indices(self.notes))
        self._meta.write(self._embedder)

    def recreate_notes(self) -> None:
        """Drop the notes table and create it empty (a rebuild)."""
        run_async(self.db.drop_table("notes"))
        self.create_notes()

    def read(
        self, dim: int, with_vectors: bool
    ) -> tuple[list[NoteRecord], npt.NDArray[np.float32], list[_schema.Chunks] | None]:
        """Every row: records, vectors, chunks (:func:`_schema.read_notes`)."""
        return run_async(_schema.read_notes(self.notes, dim, with_vectors, self._meta.path))

    # -- writes -------------------------------------------------------------------------------
    def add(self, records: Sequence[NoteRecord], made: NoteVectors) -> None:
        run_async(self.notes.add(self._rows(records, made)))

    def merge(self, records: Sequence[NoteRecord], made: NoteVectors) -> None:
        """Insert or replace the rows of ``records`` by id."""
        merge = self.notes.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
        run_async(merge.execute(self._rows(records, made)))

    def mark_written(self) -> None:
        """Remember the version this process's write just made."""
        self.own_version = run_async(self.notes.version())

    def delete(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), 512):
            run_async(self.notes.delete(sql_in("id", ids[start : start + 512])))

    def _rows(self, records: Sequence[NoteRecord], made: NoteVectors) -> pa.Table:
        rows = [_schema.note_row(r, made.vectors[i], *made.chunks[i]) for i, r in enumerate(records)]
        return pa.Table.from_pylist(rows, schema=run_async(self.notes.schema()))

    # -- reads --------------------------------------------------------------------------------
    def checkout_latest(self) -> None:
        """See what other processes committed since this handle last looked."""
        run_async(self.notes.checkout_latest())

    def ids_in(self, ids: Sequence[str]) -> set[str]:
        """The ids among ``ids`` the notes table holds (written by another process, say)."""
        self.checkout_latest()
        if run_async(self.notes.version()) == self.own_version:
            return set()  # nothing was committed since this process's own last write
        found: set[str] = set()
        for start in range(0, len(ids), 512):
            where = sql_in("id", ids[start : start + 512])
            rows = run_async(self.notes.query().where(where).select(["id"]).to_arrow())
            found.update(rows["id"].to_pylist())
        return found

    def count(self) -> int:
        """Rows of the latest version of the notes table."""
        self.checkout_latest()
        return int(run_async(self.notes.count_rows()))

    def check(self, first: NoteRecord | None) -> None:
        """Read a row, and one through the id, status and project indices (a lookup reads their
        files); raises what LanceDB raises."""
        run_async(self.notes.query().limit(1).to_arrow())
        if first is not None:
            where = f"id = {sql_literal(first.id)} AND status = {sql_literal(first.status)}"
            if first.project is not None:
                where += f" AND project = {sql_literal(first.project)}"
            run_async(self.notes.query().where(where).limit(1).to_arrow())

    def unindexed_rows(self) -> int:
        """Rows of the notes table its index of ids does not cover yet."""
        stats = run_async(self.notes.index_stats(_schema.ID_INDEX))
        return 0 if stats is None else int(stats.num_unindexed_rows)

    def reopen(self) -> None:
        """A fresh connection and table handles, after maintenance.

        A LanceDB handle keeps every index version it has seen open, with its caches: one file
        descriptor per index rebuild and a steadily growing RSS in a long-running daemon (found by
        the soak test). Reopening lets them go; a search still running on the old handle keeps it
        until it finishes.
        """
        db = run_async(lancedb.connect_async(str(self.folder / "lancedb")))
        notes, embeddings = (run_async(db.open_table(name)) for name in TABLES)
        self.db, self.notes, self._cache.table = db, notes, embeddings

    def save_snapshot(self, mirror: NoteMirror, model_id: str) -> snapshot.Key | None:
        """Save what ``mirror`` holds as the snapshot of this folder's notes table, unless the
        table's row count says another process wrote to it meanwhile (then remove the old one);
        the table's key it was saved for, or None."""
        rows, unindexed = self.count(), self.unindexed_rows()
        key = snapshot.table_key(self.folder)
        if key is None or rows != len(mirror):
            snapshot.discard(self.folder)
            return None
        records, vectors, chunks = mirror.export()
        saved = snapshot.save(self.folder, key, model_id, records, vectors, chunks, unindexed=unindexed)
        return key if saved else None
