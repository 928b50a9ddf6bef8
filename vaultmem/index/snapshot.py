"""The notes table as the mirror held it, saved so that the next open reads no LanceDB at all.

Opening an index used to read every row of the LanceDB notes table (records, vectors, chunks) into
the mirror, and to import ``lancedb`` and ``pyarrow`` to do it: at 100k notes ~1.3 s of reading and
~0.5 s of imports, at 10k ~0.7 s together, before the first search could be answered. A clean close
(and a pause in the writes: ``maintenance.QUIET_SNAPSHOT_S``) now writes what the mirror holds to
``mirror.snapshot`` in the index folder, and an open whose
snapshot still describes the table adopts it instead: the index answers searches from memory, and
LanceDB is imported and its tables opened only when the index first writes (or is probed).

**When a snapshot is adopted.** Its key is the listing of the notes table's folder (every file's
path, size and modification time: each LanceDB commit adds a manifest, compaction and cleanup
replace files) and the bytes of ``index.json`` (the model and layout). Any commit to the table after
the snapshot was written (by this process before a crash, by another process, by a rebuild) changes
the listing, and the table is read as before. A snapshot of another model or vector width, of
another format, truncated or damaged (its header and records are checked by sha256, its arrays by
their size and a CRC-32 each) is ignored the same way.

**What it holds.** The records' columns (``marshal``, strings interned as the table's reader
interns them, so they are shared with the catalog's), then the vector matrix and the long notes'
chunk spans and vectors as raw arrays the mirror adopts as they are, a private (copy-on-write)
mapping of the file (:class:`_Mapped`).
It is derived state like the rest of the folder (invariant 1) and about the size of the table's
own data: written with a temp file and a rename, never fsynced.

**Its limit.** The mirror is what this process wrote and read. Another process that committed to
the table while this one ran is seen in the table's row count (checked before saving: a mismatch
saves nothing); a commit of another process that kept the count and that this process's watcher
did not see before it closed is not in the snapshot. The reconcile that follows every open
compares the mirror with the vault and rewrites any note that differs, so what is left is at most
a table row of a note the vault no longer has, which no search reads (searches read the mirror)
and the next open that reads the table removes.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import sys
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from vaultmem.index.records import NoteRecord
from vaultmem.vault.atomic import TEMP_PREFIX
from vaultmem.vault.reading import open_regular
from vaultmem.vault.statefile import marshal_state, unmarshal_state

__all__ = ["FILE", "Snapshot", "discard", "load", "save", "table_key"]

log = logging.getLogger(__name__)

#: The snapshot's name in the index folder.
FILE = "mirror.snapshot"
_MAGIC = b"VMMIRROR"
#: Bumped when the layout below changes; a snapshot of another format is ignored.
FORMAT = 2
#: NoteRecord's fields in order: the snapshot holds one column per field.
_FIELDS = tuple(NoteRecord.__annotations__)
#: Columns interned when saved (so read back interned): the repeated short values, and those the
#: catalog holds too (``_schema.records_from_table`` shares the same ones).
_INTERNED = ("id", "path", "title", "kind", "status", "project", "content_hash", "created")
#: Temp files of saves that never finished (a crash) are removed by a later save after this long.
_STALE_TEMP_S = 600.0

Key = tuple[Any, ...]
Vector = npt.NDArray[np.float32]
Spans = npt.NDArray[np.int32]


@dataclass
class Snapshot:
    """What :func:`load` read: the mirror's rows, ready for :meth:`NoteMirror.replace`."""

    records: list[NoteRecord]
    vectors: Vector
    #: One ``(spans, vectors)`` per record (empty arrays for a short note).
    chunks: list[tuple[Spans, Vector]]
    #: Rows of the notes table its id index did not cover when the snapshot was saved.
    unindexed: int


def table_key(folder: Path) -> Key | None:
    """What the notes table of the index folder ``folder`` is now: ``index.json``'s bytes and every
    file under ``lancedb/notes.lance`` with its size and modification time (None: no table)."""
    root = folder / "lancedb" / "notes.lance"
    files: list[tuple[str, int, int]] = []
    stack = [root]
    while stack:
        here = stack.pop()
        try:
            with os.scandir(here) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
                    else:
                        st = entry.stat(follow_symlinks=False)
                        files.append((os.path.relpath(entry.path, root), st.st_size, st.st_mtime_ns))
        except FileNotFoundError:
            if here == root:
                return None
        except OSError:
            return None
    try:
        meta = (folder / "index.json").read_bytes()
    except OSError:
        return None
    return (meta, tuple(sorted(files)))


def save(
    folder: Path,
    key: Key,
    model_id: str,
    records: Sequence[NoteRecord],
    vectors: Vector,
    chunks: tuple[list[tuple[int, int]], Spans, Vector],
    *,
    unindexed: int,
) -> bool:
    """Write the snapshot of ``records`` (row order), ``vectors`` (one row each) and ``chunks``
    (:meth:`ChunkMatrix.export`) for an index whose notes table is ``key``; True if written.

    Atomic (a temp file renamed over the old snapshot) and not fsynced: a snapshot lost to a
    power cut only makes the next open read the table."""
    owners, spans, chunk_vectors = chunks
    dim = int(vectors.shape[1]) if vectors.ndim == 2 else 0
    if len(vectors) != len(records) or len(spans) != len(chunk_vectors) or not dim:
        raise ValueError("a snapshot needs one vector per record and one span per chunk vector")
    arrays = [np.ascontiguousarray(a) for a in (vectors, spans, chunk_vectors)]
    crcs = tuple(_crc(a) for a in arrays)
    ident = (FORMAT, key, model_id, dim, len(records), len(spans), tuple(owners), unindexed, crcs)
    columns = [list(column) for column in zip(*records, strict=True)] if records else [[] for _ in _FIELDS]
    for name in _INTERNED:
        i = _FIELDS.index(name)
        columns[i] = [None if v is None else sys.intern(v) for v in columns[i]]
    created, updated = _FIELDS.index("created"), _FIELDS.index("updated")
    columns[updated] = [c if u == c else u for c, u in zip(columns[created], columns[updated], strict=True)]
    body = marshal_state(tuple(tuple(c) for c in columns))
    head = marshal_state(ident)
    _sweep_temps(folder)
    tmp = folder / f"{TEMP_PREFIX}{FILE}.{os.getpid()}.{os.urandom(4).hex()}"
    try:
        with open(tmp, "xb") as out:
            for part in (head, body):
                out.write(len(part).to_bytes(8, "little"))
                out.write(part)
            for array in arrays:
                if array.size:  # (a view of an empty array cannot be cast to bytes)
                    out.write(memoryview(array).cast("B"))  # type: ignore[arg-type]
        tmp.replace(folder / FILE)
    except OSError as exc:  # derived: losing it only makes the next open read the table
        with contextlib.suppress(OSError):
            tmp.unlink()
        log.warning("the index snapshot was not saved (%s); the next start reads the table", exc)
        return False
    return True


def load(folder: Path, key: Key | None, model_id: str, dim: int) -> Snapshot | None:
    """The snapshot saved in ``folder`` if it was saved for the notes table ``key`` with this
    model and vector width; None when there is none or it does not fit (the table is read)."""
    path = folder / FILE
    if key is None:
        return None
    try:
        with open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            ident = _section(f, size)
            if not (isinstance(ident, tuple) and len(ident) == 9 and ident[0] == FORMAT):
                return _refused(path, "another format")
            _, saved_key, saved_model, saved_dim, n, m, owners, unindexed, crcs = ident
            if saved_key != key:
                return _refused(path, "the table changed since it was saved")
            if saved_model != model_id or saved_dim != dim:
                return _refused(path, "another model")
            columns = _section(f, size)
            if not (
                isinstance(columns, tuple)
                and len(columns) == len(_FIELDS)
                and all(isinstance(c, tuple) and len(c) == n for c in columns)
                and f.tell() + 4 * (n * dim + m * 2 + m * dim) == size
            ):
                return _refused(path, "damaged")
            mapped = _Mapped(f, f.tell())
            vectors = mapped.array((n, dim), np.float32)
            spans = mapped.array((m, 2), np.int32)
            chunk_vectors = mapped.array((m, dim), np.float32)
            if tuple(_crc(a) for a in (vectors, spans, chunk_vectors)) != crcs:
                return _refused(path, "damaged vectors")
    except FileNotFoundError:
        return None
    except (OSError, ValueError, EOFError, TypeError) as exc:
        return _refused(path, str(exc))
    records = NoteRecord.all_from_columns(columns)
    none = (np.zeros((0, 2), dtype=np.int32), np.zeros((0, dim), dtype=np.float32))
    chunks: list[tuple[Spans, Vector]] = [none] * n
    at = 0
    try:
        for row, count in owners:
            chunks[row] = (spans[at : at + count], chunk_vectors[at : at + count])
            at += count
    except (TypeError, ValueError, IndexError):
        return _refused(path, "damaged chunk owners")
    if at != m:
        return _refused(path, "damaged chunk owners")
    return Snapshot(records, vectors, chunks, int(unindexed))


def discard(folder: Path) -> None:
    """Remove the snapshot of ``folder`` (it no longer describes the table)."""
    with contextlib.suppress(OSError):
        (folder / FILE).unlink()


def _section(f: Any, size: int) -> object:
    """One length-prefixed :func:`marshal_state` section of the file."""
    length = int.from_bytes(f.read(8), "little")
    if length <= 0 or f.tell() + length > size:
        raise ValueError("a section runs past the end of the file")
    return unmarshal_state(f.read(length))


class _Mapped:
    """The snapshot's arrays as a private (copy-on-write) mapping of the file, from ``start`` on.

    The mirror adopts them as they are: writeable, each row it rewrites copied into the process's
    memory by the kernel, the others left as the page cache's pages. Read into fresh memory
    instead, the matrix was 147 MB of anonymous memory at 100k notes that a new process touched
    page by page while starting (on a VM that backs its memory lazily, ~2.4 ms a MiB: ~0.35 s), and
    that the kernel could never reclaim under pressure. The mapping outlives the file's replacement
    (saves write a new file and rename it over this one) and its deletion."""

    def __init__(self, f: Any, start: int) -> None:
        self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
        self._at = start

    def array(self, shape: tuple[int, int], dtype: type[np.generic]) -> npt.NDArray[Any]:
        size = int(np.prod(shape)) * np.dtype(dtype).itemsize
        if not size:
            return np.zeros(shape, dtype=dtype)
        if self._at + size > len(self._map):
            raise EOFError("the snapshot ends early")
        out: npt.NDArray[Any] = np.ndarray(shape, dtype=dtype, buffer=self._map, offset=self._at)
        self._at += size
        return out


def _crc(array: npt.NDArray[Any]) -> int:
    """CRC-32 of an array's bytes (~70 ms for 100k notes' vectors)."""
    return zlib.crc32(memoryview(array).cast("B")) if array.size else 0  # type: ignore[arg-type]


def _refused(path: Path, why: str) -> Snapshot | None:
    log.info("not using the index snapshot %s (%s); reading the table", path, why)
    return None


def _sweep_temps(folder: Path) -> None:
    """Remove the temp files of saves that never finished (a process killed while saving)."""
    now = time.time()
    with contextlib.suppress(OSError):
        for tmp in folder.glob(f"{TEMP_PREFIX}{FILE}.*"):
            with contextlib.suppress(OSError):
                if now - tmp.stat().st_mtime > _STALE_TEMP_S:
                    tmp.unlink()
