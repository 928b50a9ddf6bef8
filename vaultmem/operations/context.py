"""What every operation works with: one vault, opened, and (unless opened without it) its index.

The facade (:class:`vaultmem.memory.Memory`) builds one :class:`Context` and hands it to each
family of operations. Operations read through it and plan writes for its
:class:`~vaultmem.vault.writer.VaultWriter`; they never take a lock themselves.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from vaultmem.config import Settings
from vaultmem.errors import IndexError_
from vaultmem.filing.contract import CHECKED_FILE, Contract, VaultContract
from vaultmem.filing.guard import PlanGuard
from vaultmem.filing.projects import ProjectRegistry
from vaultmem.operations.lookup import Lookup
from vaultmem.operations.tokens import PreviewTokens
from vaultmem.sync.graph import EdgeGraph
from vaultmem.vault.catalog import Catalog
from vaultmem.vault.history import GitRepo
from vaultmem.vault.layout import VaultLayout
from vaultmem.vault.plan import Draft
from vaultmem.vault.store import NoteStore
from vaultmem.vault.writer import VaultWriter

if TYPE_CHECKING:
    from vaultmem.index.fusion import RelevanceCalibration
    from vaultmem.index.note_index import NoteIndex
    from vaultmem.sync.versions import PastIndex

#: The clock: the daily cap and timestamps read it (a fake in tests).
Clock = Callable[[], dt.datetime]


class Context:
    """One opened vault: the settings, its files and catalog, its writer, its index and edge graph."""

    def __init__(
        self,
        settings: Settings,
        *,
        layout: VaultLayout,
        repo: GitRepo,
        catalog: Catalog,
        store: NoteStore,
        writer: VaultWriter,
        clock: Clock,
        index: NoteIndex | None,
        calibration: RelevanceCalibration | None,
        warm_guard: bool = True,
    ) -> None:
        self.settings = settings
        self.layout = layout
        self.repo = repo
        self.catalog = catalog
        self.store = store
        self.writer = writer
        self.clock = clock
        self.contracts = VaultContract(
            layout.root,
            [layout.state_dir, repo.git_dir],
            layout.home,
            checked=layout.state_dir / CHECKED_FILE,
        )
        # Every agent write, whatever the tool, passes the secret guard in the writer.
        writer.guard = self._guard = PlanGuard(layout.root, lambda: self.contract().secrets_mode)
        self._guard_warm = False
        if index is not None and warm_guard:  # a daemon or a stdio server: see warm_guard
            self.warm_guard()
        self.projects = ProjectRegistry(layout.root)
        self.tokens = PreviewTokens()
        self.graph = EdgeGraph(catalog)
        self._index = index
        self._calibration = calibration
        self.lookup = Lookup(catalog, store, self.graph, index)
        self._past: PastIndex | None = None
        self._past_lock = threading.Lock()

    def warm_guard(self) -> None:
        """Load the secret detector on a thread (once), so that a long-running process's first
        write need not: when it opens, or (a ``search_first`` open) when its start has ended, not
        beside the first searches it answers meanwhile."""
        if not self._guard_warm:
            self._guard_warm = True
            self._guard.warm_in_background()

    def now(self) -> dt.datetime:
        """The clock's time in UTC: the daily cap and timestamp slugs count UTC days."""
        now = self.clock()
        return now.astimezone(dt.UTC) if now.tzinfo else now.replace(tzinfo=dt.UTC)

    def contract(self) -> Contract:
        """The vault's filing contract, re-read when its file changes."""
        return self.contracts.current()

    def draft(self) -> Draft:
        """An empty plan to put file edits in."""
        return Draft(self.store)

    @property
    def index(self) -> NoteIndex:
        """The search index (an operation that needs it on a vault opened without it is refused)."""
        if self._index is None:
            raise IndexError_("this vault was opened without its search index; open it with the index")
        return self._index

    @property
    def calibration(self) -> RelevanceCalibration:
        """How the vector leg's cosines map onto the 0-1 relevance scale (and the noise gate)."""
        if self._calibration is None:
            raise IndexError_("this vault was opened without its search index; open it with the index")
        return self._calibration

    @property
    def past(self) -> PastIndex:
        """The vault's history as versions of notes, for ``as_of`` reads: built from git on first
        use (a daemon nobody asks about the past never reads its history)."""
        with self._past_lock:
            if self._past is None:
                from vaultmem.sync.versions import PastIndex

                self._past = PastIndex(self.repo, self.index, self.layout.state_dir, self.layout.writable)
            return self._past

    def close(self) -> None:
        """Stop what reading the past started (its background embedding), before the index closes."""
        with self._past_lock:
            if self._past is not None:
                self._past.close()
