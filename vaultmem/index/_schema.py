"""Arrow schemas of the index tables and the row <-> record conversions."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from lancedb.index import Bitmap, BTree

from vaultmem.errors import IndexError_
from vaultmem.index.records import NoteRecord

#: A note's chunks beyond its first window: body spans ``(m, 2)`` and vectors ``(m, dim)``.
Chunks = tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]

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
    "session",
)


def notes_schema(dim: int) -> pa.Schema:
    """The ``notes`` table: the record and its vectors (the lexical leg is built from the records)."""
    fields = [pa.field(name, pa.string(), nullable=name in ("project", "session")) for name in RECORD_COLUMNS]
    fields[RECORD_COLUMNS.index("tags")] = pa.field("tags", pa.list_(pa.string()), nullable=False)
    fields.append(pa.field("vector", pa.list_(pa.float32(), dim), nullable=False))
    # A long note's windows beyond the first: body spans (start, end, start, end, ...) and vectors.
    fields.append(pa.field("chunk_spans", pa.list_(pa.int32()), nullable=False))
    fields.append(pa.field("chunk_vectors", pa.list_(pa.list_(pa.float32(), dim)), nullable=False))
    return pa.schema(fields)


#: The notes table's columns of a long note's chunks (absent from tables of an older layout).
CHUNK_COLUMNS = ("chunk_spans", "chunk_vectors")


def cache_schema() -> pa.Schema:
    """The ``embeddings`` cache: a vector per (model id, sha256 of the embedded text)."""
    return pa.schema(
        [
            pa.field("model_id", pa.string(), nullable=False),
            pa.field("text_hash", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32()), nullable=False),
        ]
    )


#: The notes table's index of ids, whose lag (rows not yet in it) decides when maintenance folds.
ID_INDEX = "id_idx"


async def create_note_indices(table: Any) -> None:
    """Scalar indices that make id lookups (the writer's deletes and merges) and filters cheap."""
    await table.create_index("id", config=BTree(), name=ID_INDEX)
    await table.create_index("project", config=Bitmap())
    await table.create_index("status", config=Bitmap())


def note_row(
    record: NoteRecord,
    vector: npt.NDArray[np.float32],
    chunk_spans: npt.NDArray[np.int32],
    chunk_vectors: npt.NDArray[np.float32],
) -> dict[str, Any]:
    """One ``notes`` row."""
    row: dict[str, Any] = {name: getattr(record, name) for name in RECORD_COLUMNS}
    row["tags"] = list(record.tags)
    row["vector"] = vector
    row["chunk_spans"] = chunk_spans.reshape(-1).tolist()
    row["chunk_vectors"] = list(chunk_vectors)
    return row


def chunks_from_batch(batch: pa.RecordBatch, dim: int) -> list[Chunks]:
    """Each row's chunk spans (``(m, 2)``) and vectors (``(m, dim)``), from the chunk columns."""
    spans = batch.column("chunk_spans")
    vectors = batch.column("chunk_vectors")
    span_at = spans.offsets.to_numpy()
    vec_at = vectors.offsets.to_numpy()
    span_values = spans.flatten().to_numpy(zero_copy_only=False).astype(np.int32).reshape(-1, 2)
    vec_values = vectors.flatten().flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
    none = (np.zeros((0, 2), dtype=np.int32), np.zeros((0, dim), dtype=np.float32))
    out = []
    for i in range(batch.num_rows):
        a, b = int(vec_at[i] - vec_at[0]), int(vec_at[i + 1] - vec_at[0])
        if a == b:
            out.append(none)
            continue
        s, e = int(span_at[i] - span_at[0]) // 2, int(span_at[i + 1] - span_at[0]) // 2
        out.append((span_values[s:e], vec_values[a:b]))
    return out


def records_from_table(table: pa.Table | pa.RecordBatch) -> list[NoteRecord]:
    """NoteRecords from the record columns of a ``notes`` Arrow table, column by column.

    Repeated short values (status, kind, project) share one string object, and so do the values
    the catalog holds too (interned, as the catalog's are): every note is held in memory twice.
    """
    if table.num_rows == 0:
        return []

    def share(values: list[Any]) -> list[Any]:
        return [v if v is None else sys.intern(v) for v in values]

    present = set(table.schema.names)  # an older layout lacks some columns
    columns = {
        name: table[name].to_pylist() if name in present else [None] * table.num_rows
        for name in RECORD_COLUMNS
    }
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
    table: Any, dim: int, with_vectors: bool, meta: Path
) -> tuple[list[NoteRecord], npt.NDArray[np.float32], list[Chunks] | None]:
    """Every row of the ``notes`` table (LanceDB's asynchronous handle): records, their vectors as
    one ``(rows, dim)`` matrix and their chunks (zero vectors and no chunks when ``with_vectors``
    is false: they are stale, the table was built by another model or layout).

    Read batch by batch into a matrix allocated once, not as one Arrow table and a copy of its
    vectors, whose peak the allocators kept (docs/architecture.md, "Memory").
    """
    present = set((await table.schema()).names)  # an older layout lacks some columns
    with_chunks = with_vectors and set(CHUNK_COLUMNS) <= present
    wanted = [*RECORD_COLUMNS, *(("vector", *CHUNK_COLUMNS) if with_vectors else ())]
    vectors = np.zeros((await table.count_rows(), dim), dtype=np.float32)
    records: list[NoteRecord] = []
    chunks: list[Chunks] = []
    async for batch in await table.query().select([c for c in wanted if c in present]).to_batches():
        start, got = len(records), records_from_table(batch)
        records.extend(got)
        if len(records) > len(vectors):  # rows added since the count
            vectors = np.concatenate([vectors, np.zeros((len(records) - len(vectors), dim), np.float32)])
        if with_vectors and got:
            column = batch.column("vector")
            if column.type.list_size != dim:
                raise IndexError_(
                    f"the stored vectors are {column.type.list_size} wide but {meta} says {dim}"
                )
            vectors[start : len(records)] = column.flatten().to_numpy().reshape(-1, dim)
            if with_chunks:
                chunks.extend(chunks_from_batch(batch, dim))
    if len(vectors) != len(records):
        vectors = vectors[: len(records)].copy()
    return records, vectors, (chunks if with_chunks and records else None)
