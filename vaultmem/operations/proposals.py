"""The placement review queue: edge proposals waiting for ``edge_review`` to apply or reject them.

Where it lives: ``<state>/edge_review.json``, derived state, not the vault. A proposal is a
suggestion the placement engine can make again (``enqueue``); what a person cares about is the
decision, and that lands in the vault: an applied proposal is an edge in a note's frontmatter,
committed with a message naming the proposal, and a rollback is another commit. Deleting the state
directory therefore loses pending suggestions and the memory of rejections (the engine may suggest
a rejected edge again), never an edge. Kept out of the vault so the queue's churn (every enqueue,
every status change) does not become notes, sync traffic and commits a person has to read past.

Rows are plain dicts; ``basis`` records a hash of each endpoint's content at enqueue time so a
proposal whose thoughts changed since is detected as stale when it is applied.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from vaultmem.notes.ids import canonical_id, is_full_id
from vaultmem.operations.results import Json, Row
from vaultmem.vault.statefile import read_state, write_state

log = logging.getLogger(__name__)
_VERSION = 1
#: The kind this version queues and applies.
EDGE_KIND = "edge"
PENDING, APPLIED, REJECTED, ROLLED_BACK, STALE = "pending", "applied", "rejected", "rolled_back", "stale"
STATUSES = (PENDING, APPLIED, REJECTED, ROLLED_BACK, STALE)


def content_hash(content: str) -> str:
    """What a proposal remembers of an endpoint: a hash of its content (not of its file, so the
    frontmatter edits other proposals make do not make it stale)."""
    return hashlib.sha256(content.strip().encode("utf-8")).hexdigest()[:16]


def is_retired(kind: str) -> bool:
    """A kind this version no longer applies (an older or newer queue file's): hidden from ``list``
    unless asked for, refused by ``apply``. vaultmem itself only ever queues ``edge``."""
    return kind != EDGE_KIND


@dataclass
class Proposal:
    """One queued edge proposal."""

    id: str
    kind: str
    status: str
    thought_id: str
    source_id: str
    target_id: str
    type: str
    score: float
    project: str | None
    created_at: str
    updated_at: str
    basis: dict[str, str] = field(default_factory=dict)
    #: Why it is stale or rejected, when it is.
    reason: str | None = None
    #: What apply wrote: ``{edge_id, replaced: {source_id, target_id, type, created_at} | None}``.
    applied: Row | None = None

    def row(self) -> Row:
        """The proposal as the tool answers it (the basis hashes are internal)."""
        out = asdict(self)
        del out["basis"]
        return out


class ProposalQueue:
    """Proposals in one JSON file under the state directory. Thread-safe; saved after each change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._rows: dict[str, Proposal] = {}
        self._load()

    def _load(self) -> None:
        data = read_state(self.path, _VERSION, "enqueue again to rebuild the queue")
        if data is None:
            return
        fields = set(Proposal.__dataclass_fields__)
        try:
            for raw in data.get("proposals", []):
                row = Proposal(**{k: v for k, v in raw.items() if k in fields})
                self._rows[row.id] = row
        except (TypeError, AttributeError) as exc:  # derived state: start afresh
            log.warning("ignoring unreadable %s (%s); enqueue again to rebuild the queue", self.path, exc)
            self._rows = {}

    def _save(self) -> None:
        write_state(self.path, {"version": _VERSION, "proposals": [asdict(p) for p in self._rows.values()]})

    def get(self, proposal_id: Json) -> Proposal | None:
        if not isinstance(proposal_id, str):
            return None
        key = canonical_id(proposal_id) if is_full_id(proposal_id) else proposal_id.strip()
        with self._lock:
            found = self._rows.get(key)
            return Proposal(**asdict(found)) if found is not None else None

    def rows(self, keep: Callable[[Proposal], bool] | None = None) -> list[Proposal]:
        """Copies of the proposals ``keep`` accepts, oldest first (then by id)."""
        with self._lock:
            out = [Proposal(**asdict(p)) for p in self._rows.values() if keep is None or keep(p)]
        out.sort(key=lambda p: (p.created_at, p.id))
        return out

    def add(self, proposals: Iterable[Proposal]) -> None:
        with self._lock:
            for p in proposals:
                self._rows[p.id] = p
            self._save()

    def update(self, proposals: Iterable[Proposal]) -> None:
        """Store new versions of existing proposals (unknown ids are ignored)."""
        with self._lock:
            for p in proposals:
                if p.id in self._rows:
                    self._rows[p.id] = p
            self._save()

    def __len__(self) -> int:
        with self._lock:
            return len(self._rows)
