"""Reading the memory as it was (``as_of``): the thoughts of then, for ``memory_recall``.

``memory_search`` and ``memory_recall`` answer ``as_of`` with the very code that answers the
present, given the past instead: :class:`~vaultmem.operations.search.Search` over a
:class:`~vaultmem.index.versions.PastView` (the store read at one moment, which answers the reads a
search makes of the index), and :class:`~vaultmem.operations.recall.Recall` with a
:class:`PastLookup`, which finds thoughts among the versions of then rather than in the catalog.

The past is the notes' texts and frontmatter; their edges are not reconstructed. A past thought's
standing therefore reads its status then (``superseded`` when it was), never a ``replaces`` or
``contradicts`` edge, and the reads that walk edges (``include_edges``, ``group_by_cluster``) are
refused with ``as_of`` rather than answered as if the past had none.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from vaultmem.errors import InvalidInput, NotFound
from vaultmem.notes.ids import canonical_id, is_full_id
from vaultmem.operations.context import Context
from vaultmem.operations.lookup import Lookup
from vaultmem.operations.results import Json, Thought
from vaultmem.sync.graph import EdgeGraph
from vaultmem.vault.entry import Entry

if TYPE_CHECKING:
    from vaultmem.index.versions import PastView  # NumPy: not loaded by commands that need no index

__all__ = ["PastLookup", "refuse_edges"]


class PastLookup(Lookup):
    """Thoughts by id among the versions of one moment (the edge graph of then is empty)."""

    def __init__(self, ctx: Context, view: PastView) -> None:
        super().__init__(ctx.catalog, ctx.store, EdgeGraph(ctx.catalog), None)
        self.view = view

    def entry(self, note_id: str) -> Entry | None:
        if not is_full_id(note_id):
            return None
        version = self.view.version(canonical_id(note_id))
        return None if version is None else version.entry

    def require(self, note_id: Json, argument: str = "thought_id", *, forgotten_ok: bool = False) -> Entry:
        try:
            return super().require(note_id, argument, forgotten_ok=forgotten_ok)
        except NotFound:
            pass
        assert isinstance(note_id, str)  # the parent refused anything else as InvalidInput
        found = self.view.version(canonical_id(note_id))
        why = (
            "it had been forgotten by then (memory_search with include_deleted: true and the same "
            "as_of lists it)"
            if found is not None
            else "it did not exist then (or not under this id)"
        )
        raise NotFound(
            f"no thought had id {note_id} ({argument}) {self.view.moment}: {why}; without "
            "as_of, memory_recall reads the memory as it is now"
        )

    def thought(self, entry: Entry, body: str | None = None) -> Thought:
        note_id = self.id_of(entry)
        if body is None:
            version = self.view.version(note_id)
            body = version.record.text if version is not None else ""
        return Thought.of(entry, note_id, body)

    def thoughts(self, entries: Iterable[Entry]) -> dict[str, Thought]:
        return {self.id_of(e): self.thought(e) for e in entries}


def refuse_edges(argument: str) -> InvalidInput:
    """The refusal of a read that walks edges, given with ``as_of``."""
    return InvalidInput(
        f"{argument} cannot be combined with as_of: the edges of the past are not kept (a past "
        f"answer has the notes' texts and statuses then); ask without as_of for {argument}"
    )
