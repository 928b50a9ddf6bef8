"""The embedding cache: vectors keyed by (model id, sha256 of the embedded text).

A reindex re-embeds nothing whose text did not change, even after the notes table was rebuilt.
New vectors are queued in memory and written to the ``embeddings`` table in batches (at 256, at
each maintenance and at close); the table is derived state like every other index table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from vaultmem.index.embedder import Embedder
from vaultmem.index.lance_loop import run_async
from vaultmem.index.records import sql_in, sql_literal, text_hash

__all__ = ["TABLE", "EmbeddingCache", "table_in"]

#: The cache's table under ``<state_dir>/lancedb``.
TABLE = "embeddings"
#: Queued vectors written to the table at once.
FLUSH_AT = 256
#: Hashes looked up at once beyond which one scan of the table beats queries by hash.
BULK_LOOKUP = 4096


def table_in(folder: Path) -> Any | None:
    """The embedding cache table of the index folder ``folder`` (opened to read), or None."""
    import lancedb

    db = run_async(lancedb.connect_async(str(folder / "lancedb")))
    return run_async(db.open_table(TABLE)) if TABLE in run_async(db.list_tables()).tables else None


class EmbeddingCache:
    """Vectors for texts: from the cache when known, else embedded and queued for caching.

    Not thread-safe on its own: the index calls it with its apply lock held.
    """

    def __init__(self, table: Any, embedder: Embedder, *, opener: Callable[[], object] | None = None) -> None:
        self._table = table  # LanceDB's asynchronous table (replaced when the index reopens its tables)
        #: Called the first time the table is needed while none is set (it sets :attr:`table`): an
        #: index opened from its snapshot opens its tables only when it first uses one.
        self._opener = opener
        self.embedder = embedder
        self._pending: dict[str, npt.NDArray[np.float32]] = {}
        self._known: set[str] | None = None
        #: Texts embedded (not found in the cache) since the cache was made.
        self.embedded = 0

    @property
    def table(self) -> Any:
        if self._table is None and self._opener is not None:
            self._opener()
        return self._table

    @table.setter
    def table(self, table: Any) -> None:
        self._table = table

    def forget_known(self) -> None:
        """Forget which hashes the table holds (another folder was opened)."""
        self._known = None

    def vectors_for(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One vector per text, in order."""
        hashes = [text_hash(t) for t in texts]
        found = self.lookup(hashes)
        missing = sorted({h: t for h, t in zip(hashes, texts, strict=True) if h not in found}.items())
        if missing:
            embedded = self.embedder.embed([t for _, t in missing])
            self.embedded += len(missing)
            fresh = {h: vec for (h, _), vec in zip(missing, embedded, strict=True)}
            found.update(fresh)
            self.remember(fresh)
        out = np.zeros((len(texts), self.embedder.dim), dtype=np.float32)
        for i, h in enumerate(hashes):
            out[i] = found[h]
        return out

    def lookup(self, hashes: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """The vectors the cache holds for these text hashes (queued or stored); embeds nothing.

        Many hashes at once (a search into the past building its versions) read the model's rows in
        one scan instead of one query per 512 hashes.
        """
        model = self.embedder.model_id
        found: dict[str, npt.NDArray[np.float32]] = {
            h: self._pending[h] for h in hashes if h in self._pending
        }
        known = self._known_hashes()
        lookup = sorted({h for h in hashes if h in known and h not in found})
        if len(lookup) > BULK_LOOKUP:
            where = f"model_id = {sql_literal(model)}"
            rows = run_async(self.table.query().where(where).select(["text_hash", "vector"]).to_arrow())
            self._take(rows, found, set(lookup))
            return found
        for start in range(0, len(lookup), 512):
            where = f"model_id = {sql_literal(model)} AND {sql_in('text_hash', lookup[start : start + 512])}"
            rows = run_async(self.table.query().where(where).select(["text_hash", "vector"]).to_arrow())
            self._take(rows, found, None)
        return found

    def _take(self, rows: Any, found: dict[str, npt.NDArray[np.float32]], wanted: set[str] | None) -> None:
        """The rows' vectors into ``found`` (those of ``wanted`` hashes, or all), read as one array."""
        hashes = rows["text_hash"].to_pylist()
        if not hashes:
            return
        vectors = rows["vector"].combine_chunks()
        offsets = np.asarray(vectors.offsets)
        values = np.asarray(vectors.flatten(), dtype=np.float32)
        dim = self.embedder.dim
        for i, h in enumerate(hashes):
            start, end = offsets[i] - offsets[0], offsets[i + 1] - offsets[0]
            if end - start == dim and (wanted is None or h in wanted):
                found[h] = values[start:end].copy()

    def remember(self, vectors: dict[str, npt.NDArray[np.float32]]) -> None:
        """Queue vectors embedded elsewhere for the table, by text hash."""
        self._pending.update(vectors)
        if len(self._pending) >= FLUSH_AT:
            self.flush()

    def _known_hashes(self) -> set[str]:
        if self._known is None:
            where = f"model_id = {sql_literal(self.embedder.model_id)}"
            rows = run_async(self.table.query().where(where).select(["text_hash"]).to_arrow())
            self._known = set(rows["text_hash"].to_pylist())
        return self._known

    def copy_from(self, other: Any) -> int:
        """Take in the vectors of this model that another cache table holds (a full rebuild's new
        folder starts from the current folder's cache); returns how many rows were new here."""
        where = f"model_id = {sql_literal(self.embedder.model_id)}"
        rows = run_async(other.query().where(where).select(["model_id", "text_hash", "vector"]).to_arrow())
        import pyarrow as pa

        from vaultmem.index import _schema

        known = self._known_hashes()
        fresh = rows.filter(pa.array([h not in known for h in rows["text_hash"].to_pylist()], pa.bool_()))
        if fresh.num_rows:
            run_async(self.table.add(fresh.cast(_schema.cache_schema())))
            known.update(fresh["text_hash"].to_pylist())
        return int(fresh.num_rows)

    def flush(self) -> None:
        """Write the queued vectors to the table."""
        if not self._pending:
            return
        import pyarrow as pa

        from vaultmem.index import _schema

        model = self.embedder.model_id
        rows = [{"model_id": model, "text_hash": h, "vector": v.tolist()} for h, v in self._pending.items()]
        run_async(self.table.add(pa.Table.from_pylist(rows, schema=_schema.cache_schema())))
        self._known_hashes().update(self._pending)
        self._pending.clear()
