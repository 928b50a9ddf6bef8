"""Arrow schemas of the index tables and the row <-> record conversions."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from lancedb.index import FTS, Bitmap, BTree

from vaultmem.index.records import NoteRecord

RECORD_COLUMNS = (
    "id",
    "path",
    "slug",
    "title",
    "kind",
    "status",
    "project",
    "tags",
    "text",
    "content_hash",
    "created",
    "updated",
)


def notes_schema(dim: int) -> pa.Schema:
    """The ``notes`` table: the record, the BM25 text and the vector."""
    fields = [pa.field(name, pa.string(), nullable=name == "project") for name in RECORD_COLUMNS]
    fields[RECORD_COLUMNS.index("tags")] = pa.field("tags", pa.list_(pa.string()), nullable=False)
    fields.append(pa.field("search_text", pa.string(), nullable=False))
    fields.append(pa.field("vector", pa.list_(pa.float32(), dim), nullable=False))
    return pa.schema(fields)


def cache_schema() -> pa.Schema:
    """The ``embeddings`` cache: a vector per (model id, sha256 of the embedded text)."""
    return pa.schema(
        [
            pa.field("model_id", pa.string(), nullable=False),
            pa.field("text_hash", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32()), nullable=False),
        ]
    )


def fts_config() -> FTS:
    """Options of the native BM25 index over ``search_text`` (see docs/benchmarks.md)."""
    return FTS(with_position=False, stem=True, remove_stop_words=True, lower_case=True, ascii_folding=True)


#: LanceDB's name for the full-text index on ``search_text`` (``<column>_idx``).
FTS_INDEX = "search_text_idx"


async def create_note_indices(table: Any) -> None:
    """BM25 over ``search_text``; scalar indices that make id lookups and scoped prefilters cheap."""
    await table.create_index("search_text", config=fts_config(), name=FTS_INDEX)
    await table.create_index("id", config=BTree())
    await table.create_index("project", config=Bitmap())
    await table.create_index("status", config=Bitmap())


def note_row(record: NoteRecord, text_for_search: str, vector: npt.NDArray[np.float32]) -> dict[str, Any]:
    """One ``notes`` row."""
    row: dict[str, Any] = {name: getattr(record, name) for name in RECORD_COLUMNS}
    row["tags"] = list(record.tags)
    row["search_text"] = text_for_search
    row["vector"] = vector
    return row


def records_from_table(table: pa.Table | pa.RecordBatch) -> list[NoteRecord]:
    """NoteRecords from the record columns of a ``notes`` Arrow table, column by column.

    Repeated short values (status, kind, project) share one string object, and so do the values
    the catalog holds too (interned, as the catalog's are): every note is held in memory twice.
    """
    if table.num_rows == 0:
        return []

    def share(values: list[Any]) -> list[Any]:
        return [v if v is None else sys.intern(v) for v in values]

    columns = {name: table[name].to_pylist() for name in RECORD_COLUMNS}
    # status, kind, project: a handful of values; id, path, title, content_hash, created: the
    # catalog holds them too (vault/catalog.py interns the same columns of its cache).
    for name in ("status", "kind", "project", "id", "path", "title", "content_hash", "created"):
        columns[name] = share(columns[name])
    columns["updated"] = [
        c if u == c else u for c, u in zip(columns["created"], columns["updated"], strict=True)
    ]
    columns["tags"] = [tuple(t) if t else () for t in columns["tags"]]
    return [NoteRecord(*values) for values in zip(*(columns[name] for name in RECORD_COLUMNS), strict=True)]


async def read_notes(
    table: Any, dim: int, *, with_vectors: bool
) -> tuple[list[NoteRecord], npt.NDArray[np.float32]]:
    """Every row of the ``notes`` table (LanceDB's asynchronous handle): records, and their vectors
    as one ``(rows, dim)`` matrix (zeros when ``with_vectors`` is false: they are stale).

    Read batch by batch into a matrix allocated once: the whole table as one Arrow table, then its
    Python objects, then a copy of its vectors held ~2.5x the memory the rows end up taking (about
    200 MB at 100k notes that the allocators then kept, docs/benchmarks.md).
    """
    columns = [*RECORD_COLUMNS, "vector"] if with_vectors else list(RECORD_COLUMNS)
    vectors = np.zeros((await table.count_rows(), dim), dtype=np.float32)
    records: list[NoteRecord] = []
    async for batch in await table.query().select(columns).to_batches():
        start, got = len(records), records_from_table(batch)
        records.extend(got)
        if len(records) > len(vectors):  # rows added since the count
            vectors = np.concatenate([vectors, np.zeros((len(records) - len(vectors), dim), np.float32)])
        if with_vectors and got:
            column = batch.column("vector")
            if column.type.list_size != dim:
                raise ValueError(f"the stored vectors are {column.type.list_size} wide, not {dim}")
            vectors[start : len(records)] = column.flatten().to_numpy().reshape(-1, dim)
    return records, vectors if len(vectors) == len(records) else vectors[: len(records)].copy()
