"""What an index folder was built with: ``<state_dir>/index.json`` holds the embedding model's id,
the vector width and the layout version of the derived columns. An index whose record differs from
the running model or layout is searched by BM25 alone until it is rebuilt: the reconcile after a
daemon or a command opens the vault rebuilds it (``IndexKeeper.reconcile``), as ``vaultmem reindex``
does."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vaultmem.errors import IndexError_
from vaultmem.index.embedder import Embedder, OnnxEmbedder
from vaultmem.vault.atomic import atomic_write
from vaultmem.vault.reading import read_regular

__all__ = ["LAYOUT_VERSION", "IndexMeta"]

#: Bump when the derived columns (embedding text, chunks) or the table's indices change.
#: 4: the writing session, the title counted twice in search_text, chunk vectors of long notes.
#: 5: no ``search_text`` column and no full-text index (the lexical leg lives in memory).
LAYOUT_VERSION = 5


@dataclass
class IndexMeta:
    """The record of one index folder (empty when the folder has none yet)."""

    path: Path
    values: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, state_dir: Path) -> IndexMeta:
        path = state_dir / "index.json"
        try:
            loaded: dict[str, Any] = json.loads(read_regular(path).decode("utf-8"))
        except FileNotFoundError:
            return cls(path)
        except (OSError, ValueError) as exc:
            raise IndexError_(
                f"{path} is unreadable ({exc}); delete the state directory and run `vaultmem reindex`"
            ) from exc
        return cls(path, loaded)

    @classmethod
    def read_for(cls, state_dir: Path, embedder: Embedder, *, record: bool) -> IndexMeta:
        """:meth:`read`, then :meth:`vouch` for ``embedder``."""
        meta = cls.read(state_dir)
        meta.vouch(embedder, record=record)
        return meta

    def write(self, embedder: Embedder) -> None:
        """Record ``embedder`` and today's layout, durably (write, fsync, rename)."""
        self.values = {"model_id": embedder.model_id, "dim": embedder.dim, "layout": LAYOUT_VERSION}
        stamp = embedder.id_stamp() if isinstance(embedder, OnnxEmbedder) else None
        if stamp is not None:
            self.values["model_file"] = stamp
        atomic_write(self.path, json.dumps(self.values).encode("utf-8"))

    def vouch(self, embedder: Embedder, *, record: bool) -> None:
        """Give ``embedder`` the model id this record holds when its model file is the one hashed
        for it (``model_file``), so that opening the index does not hash the model again. With
        ``record``, a record without that stamp (an index built before it was kept) gets it once
        the file's hash has matched."""
        if not isinstance(embedder, OnnxEmbedder) or not self.values:
            return
        stamp = embedder.file_stamp()
        if stamp is None:
            return
        if self.values.get("model_file") == stamp:
            embedder.vouch(stamp, self.values.get("model_id"))
        elif record and not self.stale_for(embedder) and (hashed := embedder.id_stamp()) is not None:
            read = dict(self.values)
            self.values["model_file"] = hashed  # (stale_for hashed the file, once)
            with contextlib.suppress(OSError, ValueError):  # a read-only state folder: hashed each open
                # not over a record another process (a reindex with another model) wrote meanwhile
                if json.loads(read_regular(self.path).decode("utf-8")) == read:
                    atomic_write(self.path, json.dumps(self.values).encode("utf-8"))

    def stale_for(self, embedder: Embedder) -> bool:
        """True when the stored vectors or derived columns were built by another model or layout.

        The model id is a hash of the model file, so the same id means the same vector width: the
        stored width is trusted without loading the model (which loads on a thread meanwhile).
        """
        dim = self.values.get("dim")
        return (
            self.values.get("model_id") != embedder.model_id
            or self.values.get("layout") != LAYOUT_VERSION
            or not isinstance(dim, int)
            or isinstance(dim, bool)
            or dim < 1
        )

    def dim_for(self, embedder: Embedder) -> int:
        """The vector width: the stored one while the index matches the model, else the model's."""
        return embedder.dim if self.stale_for(embedder) else int(self.values["dim"])
