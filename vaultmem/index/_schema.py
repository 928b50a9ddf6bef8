"""Arrow schemas of the index tables and the row <-> record conversions."""

from __future__ import annotations

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
    "session",
)


def notes_schema(dim: int) -> pa.Schema:
    """The ``notes`` table: the record, the BM25 text and the vector."""
    fields = [pa.field(name, pa.string(), nullable=name in ("project", "session")) for name in RECORD_COLUMNS]
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


def records_from_table(table: pa.Table) -> list[NoteRecord]:
    """NoteRecords from the record columns of a ``notes`` Arrow table, column by column.

    Repeated short values (status, kind, project) share one string object, which matters for
    memory when every note is held in memory.
    """
    if table.num_rows == 0:
        return []
    shared: dict[str, str] = {}

    def share(values: list[Any]) -> list[Any]:
        return [v if v is None else shared.setdefault(v, v) for v in values]

    columns = {name: table[name].to_pylist() for name in RECORD_COLUMNS}
    for name in ("status", "kind", "project"):
        columns[name] = share(columns[name])
    columns["tags"] = [tuple(t or ()) for t in columns["tags"]]
    return [NoteRecord(*values) for values in zip(*(columns[name] for name in RECORD_COLUMNS), strict=True)]
