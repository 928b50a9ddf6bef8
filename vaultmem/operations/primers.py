"""``memory_primers``: the always-at-hand set, earned by being recalled again and again.

Every thought ``memory_recall`` hands back as *the* answer (the top hit of a search or clusters, the
thought of a ``get``, the head of a ``context``) counts one hit. When a thought's hits reach
``primer_threshold`` (settings) it is promoted: a primer, a pointer to the thought, joins the set.
Hit counters and primers are derived, ephemeral state (``<state>/primers.json``): deleting the state
directory empties the set and the primers are earned again; no thought is ever touched. Deleting a
primer (preview first) removes only the pointer and restarts that thought's count.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

from vaultmem.errors import InvalidInput
from vaultmem.notes.ids import canonical_id, is_full_id, uuid7
from vaultmem.notes.model import iso
from vaultmem.operations.context import Context
from vaultmem.operations.results import Answer, Json, Payload, Row, Thought, WithColumns
from vaultmem.vault.statefile import read_state, write_state

log = logging.getLogger(__name__)
TOOL = "memory_primers"
#: The counters' and primers' file in the state directory (derived state).
FILE = "primers.json"
#: Rows ``list`` answers at most.
LIST_CAP = 500
_VERSION = 1


@dataclass
class Primer:
    id: str
    thought_id: str
    hit_count: int
    promoted_at: str
    created_at: str


@dataclass
class _Counter:
    hits: int
    first_hit: str


class Primers:
    """Hit counters and the primer set, kept in one JSON file in the state directory. Thread-safe."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.path = ctx.settings.state_dir / FILE
        self.threshold = max(1, ctx.settings.primer_threshold)
        self._lock = threading.Lock()
        self._counters: dict[str, _Counter] = {}
        self._primers: dict[str, Primer] = {}
        self._load()

    # -- state ----------------------------------------------------------------------------------------
    def _load(self) -> None:
        data = read_state(self.path, _VERSION, "primers are earned again")
        if data is None:
            return
        try:
            self._counters = {k: _Counter(**v) for k, v in data.get("counters", {}).items()}
            self._primers = {k: Primer(**v) for k, v in data.get("primers", {}).items()}
        except (TypeError, AttributeError) as exc:  # derived state: start afresh
            log.warning("ignoring unreadable %s (%s); primers are earned again", self.path, exc)
            self._counters, self._primers = {}, {}

    def _save(self) -> None:
        # Ephemeral: a lost update costs a hit or two, never a memory.
        write_state(
            self.path,
            {
                "version": _VERSION,
                "counters": {k: asdict(v) for k, v in self._counters.items()},
                "primers": {k: asdict(v) for k, v in self._primers.items()},
            },
        )

    # -- counting -------------------------------------------------------------------------------------
    def record(self, thought_ids: Iterable[str]) -> list[Primer]:
        """Count one hit for each thought (once per call); return the primers promoted by it."""
        ids = list(dict.fromkeys(canonical_id(t) for t in thought_ids if is_full_id(t)))
        if not ids:
            return []
        now = iso(self.ctx.now())
        promoted: list[Primer] = []
        with self._lock:
            by_thought = {p.thought_id: p for p in self._primers.values()}
            for thought_id in ids:
                counter = self._counters.setdefault(thought_id, _Counter(0, now))
                counter.hits += 1
                primer = by_thought.get(thought_id)
                if primer is not None:
                    primer.hit_count = counter.hits
                elif counter.hits >= self.threshold:
                    primer = Primer(uuid7(), thought_id, counter.hits, now, counter.first_hit)
                    self._primers[primer.id] = primer
                    promoted.append(primer)
            self._save()
        return promoted

    def hits_of(self, thought_id: str) -> int:
        """How many hits this thought has recorded (0 when none; retention_review's "no hits")."""
        with self._lock:
            counter = self._counters.get(thought_id)
            return counter.hits if counter is not None else 0

    def all(self, alive: Callable[[str], bool] | None = None) -> list[Primer]:
        """The primers, most-hit first (then the earliest promoted); those whose thought is gone skipped."""
        with self._lock:
            rows = [Primer(**asdict(p)) for p in self._primers.values()]
        if alive is not None:
            rows = [p for p in rows if alive(p.thought_id)]
        rows.sort(key=lambda p: (-p.hit_count, p.promoted_at, p.id))
        return rows

    def get(self, primer_id: str) -> Primer | None:
        key = canonical_id(primer_id) if is_full_id(primer_id) else primer_id.strip()
        with self._lock:
            found = self._primers.get(key)
            return Primer(**asdict(found)) if found is not None else None

    def remove(self, primer_id: str) -> bool:
        """Drop a primer (and restart its thought's count); False when it was already gone."""
        with self._lock:
            primer = self._primers.pop(primer_id, None)
            if primer is None:
                return False
            self._counters.pop(primer.thought_id, None)
            self._save()
            return True

    def count_recall(self, answer: Answer) -> None:
        """Count what a memory_recall answer recalled: the top hit of a search or clusters (several for
        an ambiguous id), the thought of a get, the head of a context. Not the rest of a result page:
        being listed is not being recalled, and counting it would promote whatever matches loosely."""
        if answer.action not in ("search", "clusters", "get", "context"):
            return
        thoughts = list(_thoughts(answer))
        if answer.collection and answer.reason != "ambiguous_id":
            thoughts = thoughts[:1]
        self.record(t.id for t in thoughts)

    def alive(self, thought_id: str) -> bool:
        """A primer's thought still exists for the graph tools (not soft-deleted)."""
        entry = self.ctx.lookup.entry(thought_id)
        return entry is not None and entry.status != "deleted"

    # -- the tool's actions ---------------------------------------------------------------------------
    def list_answer(self) -> Answer:
        rows = self.all(self.alive)
        page = rows[:LIST_CAP]
        return Answer.many(
            "list", [asdict(p) for p in page], total=len(rows), filtered_out=len(rows) - len(page)
        )

    def delete(self, primer_id: Json, confirm: bool, token: str | None) -> Answer:
        if not isinstance(primer_id, str) or not primer_id.strip():
            raise InvalidInput("primer_id is required: pass the id of a primer (memory_primers action=list)")
        primer = self.get(primer_id)
        if primer is None:
            return Answer.one("delete", {"status": "not_found", "primer_id": primer_id})
        args = {"primer_id": primer.id}
        if not confirm:
            item: Row = {
                "status": "preview",
                "primer_id": primer.id,
                "primer": asdict(primer),
                "consequence": f"Removes primer {primer.id} from the always-at-hand set; thought "
                f"{primer.thought_id} itself is not changed, and its recall count starts again.",
                "instruction": f"Call memory_primers again with action=delete, primer_id={primer.id}, "
                "confirm=true and this preview_token to proceed.",
            }
            return self.ctx.tokens.preview_one(TOOL, "delete", args, item)
        self.ctx.tokens.redeem(
            token, TOOL, "delete", args, f"memory_primers action=delete primer_id={primer.id}"
        )
        status = "deleted" if self.remove(primer.id) else "not_found"
        return Answer.one("delete", {"status": status, "primer_id": primer.id})


def _thoughts(answer: Answer) -> Iterable[Thought]:
    def head(value: Payload) -> Thought | None:
        if isinstance(value, Thought):
            return value
        if isinstance(value, WithColumns):  # get include_edges
            return value.thought
        inner = value.get("thought") if isinstance(value, Mapping) else None
        return inner if isinstance(inner, Thought) else None

    values = answer.items if answer.collection else [answer.item]
    for value in values:
        found = head(value)
        if found is not None:
            yield found
        members = value.get("members", []) if isinstance(value, Mapping) else []
        for member in members if isinstance(members, Sequence) else []:
            inner = head(member)
            if inner is not None:
                yield inner
