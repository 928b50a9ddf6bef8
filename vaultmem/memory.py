"""The one door: :class:`Memory` opens a vault and is what the MCP tools, the HTTP server and the CLI call.

    with Memory(Settings.resolve("~/vaultmem-vault")) as memory:
        memory.reconcile()
        memory.append("The deploy needs --force when the cache is cold.", "fix")
        memory.search(SearchRequest("deploy cache"))

Opening builds, bottom up: the note files and the catalog, the vault's writer (the one owner of
the write path), the search index and the edge graph, the keeper that holds them in step with the
files, then the operations. ``Memory(settings, index=False)`` opens the vault without its index
(the memory tools' writes, a note's history); no index module is imported then. The clock is a
public seam: ``Memory(settings, clock=...)``. Everything an adapter needs is exported here.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vaultmem.config import Settings
from vaultmem.errors import IndexError_, InvalidInput
from vaultmem.filing.projects import Project
from vaultmem.index.heap import collector_paused, opening_pauses_the_collector
from vaultmem.index.protocol import Embedder
from vaultmem.notes.model import Note, utc_now
from vaultmem.opening import START_WAIT, STILL_STARTING, open_vault
from vaultmem.operations import doctor, projects
from vaultmem.operations.context import Clock, Context
from vaultmem.operations.crystallize import Crystallize
from vaultmem.operations.doctor import DoctorReport, GitLockInfo, big_file_lines
from vaultmem.operations.edge_review import EdgeReview
from vaultmem.operations.edges import Edges
from vaultmem.operations.history import Blame, History
from vaultmem.operations.memories import AppendResult, CaptureResult, ForgetResult, Memories
from vaultmem.operations.placement import Placement
from vaultmem.operations.primers import Primers
from vaultmem.operations.recall import NeighbourPage, Recall, SearchSpec
from vaultmem.operations.reflect import Reflect, ReflectSpec
from vaultmem.operations.results import Answer, Json, Payload, Scope, Thought, WithColumns
from vaultmem.operations.results import status_filter as _status
from vaultmem.operations.retention import Retention
from vaultmem.operations.search import Search, SearchRequest, SearchResult
from vaultmem.operations.status import DEFAULT_FRONTIER_LIMIT, DEFAULT_SLOTS_LIMIT, Status
from vaultmem.operations.supersede import MergeSpec, Supersede
from vaultmem.operations.sync import Syncing, SyncReport, clone_vault
from vaultmem.operations.thoughts import NewThought, Thoughts
from vaultmem.sync.reconcile import Progress, ReconcileReport
from vaultmem.vault.init import init_vault

if TYPE_CHECKING:
    from vaultmem.sync.keeper import IndexKeeper

__all__ = [
    "START_WAIT", "STILL_STARTING", "Answer", "AppendResult", "Blame", "CaptureResult", "Clock",
    "DoctorReport", "Embedder", "ForgetResult", "GitLockInfo", "Json", "Memory", "MergeSpec", "NeighbourPage",
    "NewThought", "Note", "Payload", "Progress", "ReconcileReport", "ReflectSpec", "Scope", "SearchRequest",
    "SearchResult", "SearchSpec", "SyncReport", "Thought", "WithColumns", "big_file_lines", "clone_vault",
    "init_vault",
]  # fmt: skip


class Memory:
    """One vault, opened: every operation of the memory tools, the graph tools and the CLI."""

    @opening_pauses_the_collector  # what opening an index builds lives as long as the process
    def __init__(
        self,
        settings: Settings,
        *,
        clock: Clock = utc_now,
        embedder: Embedder | None = None,
        index: bool = True,
        background_commits: bool = True,
        watch: bool = False,
        search_first: bool = False,
    ) -> None:
        self.settings = settings
        opened = open_vault(
            settings,
            embedder=embedder,
            index=index,
            background_commits=background_commits,
            watch=watch,
            search_first=search_first,
        )
        self._keeper: IndexKeeper | None = None
        self._opened, self._watcher, self._warmup = opened, opened.watcher, opened.warmup
        #: Set once every answer is exact: at once, or by :meth:`start` after a ``search_first`` open.
        self._settled = threading.Event()
        if not search_first:
            self._settled.set()
        self._ctx = ctx = Context(
            settings,
            layout=opened.layout,
            repo=opened.repo,
            catalog=opened.catalog,
            store=opened.store,
            writer=opened.writer,
            clock=clock,
            index=opened.index,
            calibration=opened.calibration,
            # the secret detector ahead of the first write in a long-running process only
            warm_guard=background_commits and not search_first,
        )
        if opened.index is not None:
            from vaultmem.sync.keeper import IndexKeeper

            self._keeper = IndexKeeper(settings, ctx.layout, ctx.catalog, ctx.writer, opened.index, ctx.graph)
        self._memories = Memories(ctx)
        self._search = Search(ctx)
        self._recall = Recall(ctx, self._search)
        self._thoughts = Thoughts(ctx)
        self._edges = Edges(ctx)
        self._supersede = Supersede(ctx)
        self._projects = projects.Projects(ctx)
        self._reflect = Reflect(ctx, self._recall)
        self._primers = Primers(ctx)
        self._status = Status(ctx, self._primers)
        self._placement = Placement(ctx)
        self._review = EdgeReview(ctx, self._placement)
        self._retention = Retention(ctx, self._supersede, self._primers)
        self._crystallize = Crystallize(ctx)
        self._history = History(ctx)
        self._sync = Syncing(ctx, self._keeper)

    # -- lifecycle --------------------------------------------------------------------------------
    @property
    def scanned(self) -> bool:
        """Whether the vault was scanned: False while a ``search_first`` open left it to :meth:`start`."""
        return self._ctx.writer.opened

    def start(self, progress: Progress | None = None, stop: threading.Event | None = None) -> ReconcileReport:
        """A server's start: the scan a ``search_first`` open left (``stop``: OpenedVault.scan), the
        reconcile, the watcher."""
        try:
            if not self._ctx.writer.opened:
                with collector_paused():  # the catalog it builds lives as long as the process
                    self._watcher = self._opened.scan(stop)
            report = self.reconcile(progress)
            self.start_watching()
            self._ctx.warm_guard()
            return report
        finally:
            self._settled.set()

    def reconcile(self, progress: Progress | None = None) -> ReconcileReport:
        """Make the index and the edge graph equal the vault (what changed while nothing ran)."""
        return self._kept().reconcile(progress)

    def start_watching(self) -> None:
        """Watch the vault: hand edits indexed, then committed; the sync rounds run meanwhile too."""
        watcher, self._watcher = self._watcher, None
        self._kept().start_watching(watcher)

    def sync(self) -> SyncReport:
        """One round with the git remote (commit, fetch, merge, push); the index re-reads what came in."""
        return self._sync.round()

    def flush(self, timeout: float = 60.0) -> None:
        """Wait until every acknowledged write is committed."""
        self._ctx.writer.commits.flush(timeout)

    def report_sessions(self, counts: Callable[[], dict[str, int]]) -> None:
        """Have ``memory_status health`` report the HTTP daemon's MCP sessions (``counts()``)."""
        self._status.sessions = counts

    def close(self) -> None:
        """Stop syncing and watching (committing pending hand edits), flush the commits, close the index."""
        try:
            if self._watcher is not None:  # watched, never started watching: an open that failed
                self._watcher.stop()
            if self._keeper is not None:
                self._keeper.stop_watching()
            self._ctx.writer.close()
        finally:
            if self._keeper is not None:
                self._ctx.close()  # what reading the past started, before the index it reads closes
                self._keeper.index.close()
                if self._warmup is not None:
                    self._warmup.join()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _kept(self) -> IndexKeeper:
        if self._keeper is None:
            raise IndexError_("this vault was opened without its search index; open it with the index")
        return self._keeper

    # -- the memory tools -------------------------------------------------------------------------
    def search(self, request: SearchRequest) -> SearchResult:
        """``memory_search``: an id, or the hybrid search, shaped as the tool returns it; while a server's
        start scans the vault, only if every hit shown is its file as it is (``Search.before_start``)."""
        if not self._settled.is_set():
            if not self.scanned and (early := self._search.before_start(request)) is not None:
                return early
            if not self._settled.wait(START_WAIT) or not self.scanned:  # a start that failed
                raise IndexError_(STILL_STARTING)
        return self._search.memory_search(request)

    def append(
        self,
        content: str,
        kind: str,
        project: str | None = None,
        title: str | None = None,
        tags: Sequence[str] | None = None,
        idempotency_key: str | None = None,
        *,
        wait_commit: bool = False,
    ) -> AppendResult:
        """``memory_append``: a reviewed memory, filed by kind or project; idempotent on the key."""
        return self._memories.append(
            content, kind, project, title, tags, idempotency_key, wait_commit=wait_commit
        )

    def capture(
        self,
        content: str,
        kind: str | None = None,
        title: str | None = None,
        tags: Sequence[str] | None = None,
        instructions: str | None = None,
        source_url: str | None = None,
        source_id: str | None = None,
        project: str | None = None,
        cwd: str | None = None,
        *,
        wait_commit: bool = False,
    ) -> CaptureResult:
        """``memory_capture``: an unreviewed candidate; never raises (``{success: false, error}``)."""
        return self._memories.capture(
            content, kind, title, tags, instructions, source_url, source_id, project, cwd,
            wait_commit=wait_commit,
        )  # fmt: skip

    def forget(self, note_id: str, reason: str | None = None, *, wait_commit: bool = False) -> ForgetResult:
        """``memory_forget``: soft-delete (status deleted, the file kept)."""
        return self._memories.forget(note_id, reason, wait_commit=wait_commit)

    def note(self, note_id: str) -> Note:
        """The note with this id (any status), as its file is now."""
        return self._memories.note(note_id)

    def id_of(self, note_id: str) -> str:
        """The id the note answers to: its ``id:`` key, or the one derived from a person's note's path."""
        return self._ctx.lookup.id_of(self._ctx.lookup.require(note_id, "id", forgotten_ok=True))

    def history(self, note_id: str | None, version: str | None = None, limit: int | None = None,
                offset: int = 0, *, diff: bool = False) -> Answer:  # fmt: skip
        """``memory_recall history``, ``vaultmem log``: a note's versions (``version``: one, with text)."""
        return self._history.answer(note_id, version, limit, offset, diff=diff)

    def blame(self, note_id: str) -> Blame:
        """``vaultmem blame``: who last wrote each line and each frontmatter key of a note."""
        return self._history.blame(note_id)

    def kinds(self) -> list[str]:
        """The kinds of the filing contract (ContractError when it does not load)."""
        return sorted(self._ctx.contract().kinds)

    # -- memory_recall ------------------------------------------------------------------------------
    def recall_search(self, spec: SearchSpec, cwd: str | None = None) -> Answer:
        """``search``: hybrid search inside the scope ``cwd`` names (or an id lookup)."""
        scope = projects.scope_for(self._ctx, cwd, reader=True)
        return self._recalled(self._recall.search(spec.scoped(scope)), scope)

    def recall_clusters(self, spec: SearchSpec, cwd: str | None = None) -> Answer:
        """``clusters``: the search over cluster thoughts only."""
        if spec.is_cluster is False:
            raise InvalidInput("clusters searches cluster thoughts only; is_cluster: false contradicts it")
        scope = projects.scope_for(self._ctx, cwd, reader=True)
        found = self._recall.search(dataclasses.replace(spec.scoped(scope), is_cluster=True), "clusters")
        return self._recalled(found, scope)

    def recall_context(
        self, spec: SearchSpec | None, thought_id: str | None, max_degree: int, cwd: str | None = None,
        page: NeighbourPage | None = None,
    ) -> Answer:  # fmt: skip
        """``context``: a thought (by id, or a query's best match) and a page of its neighbourhood."""
        scope = projects.scope_for(self._ctx, None if thought_id else cwd, reader=not thought_id)
        given = spec.scoped(scope) if spec is not None else None
        return self._recalled(self._recall.context(given, thought_id, max_degree, page), scope)

    def recall_get(
        self, thought_id: str | None, include_edges: bool = False, as_of: str | None = None,
        page: NeighbourPage | None = None,
    ) -> Answer:  # fmt: skip
        """``get``: one thought, with a page of its incident edges if asked (or as it was ``as_of``)."""
        return self._recalled(self._recall.get(thought_id, include_edges, as_of, page), Scope())

    def recall_chain(self, thought_id: str | None, max_degree: int, page: NeighbourPage | None = None
                     ) -> Answer:  # fmt: skip
        """``chain``: a thought and a page of its parent/develops chain."""
        return self._recalled(self._recall.chain(thought_id, max_degree, page), Scope())

    def recall_list(self, status: str | None, cwd: str | None, tag: str | None, is_cluster: bool | None,
                    limit: int, offset: int) -> Answer:  # fmt: skip
        """``list``: a page of thoughts, newest first."""
        scope = projects.scope_for(self._ctx, cwd, reader=True)
        found = self._recall.list(_status(status, "all"), scope.project, tag, is_cluster, limit, offset)
        return self._recalled(found, scope)

    def _recalled(self, answer: Answer, scope: Scope) -> Answer:
        self._primers.count_recall(answer)  # thoughts recalled again and again are promoted
        return answer.with_scope(scope)

    # -- memory_store -------------------------------------------------------------------------------
    def create_thought(self, spec: NewThought, cwd: str | None = None) -> Answer:
        """``create``: one thought, in ``cwd``'s project."""
        scope = projects.scope_for(self._ctx, cwd, reader=False)
        return Answer.one("create", self._thoughts.create(spec, scope.project)).with_scope(scope)

    def bulk_create(
        self, rows: Sequence[Json] | None, cwd: str | None = None, idempotency_key: str | None = None
    ) -> Answer:
        """``bulk_create``: many thoughts in one commit, a result per row."""
        scope = projects.scope_for(self._ctx, cwd, reader=False)
        return self._thoughts.bulk_create(rows, scope.project, idempotency_key).with_scope(scope)

    def update_thought(
        self,
        thought_id: str | None,
        *,
        content: str | None = None,
        tags: Sequence[str] | None = None,
        tags_mode: str | None = None,
        status: str | None = None,
        cwd: str | None = None,
        is_protected: bool | None = None,
        is_global: bool | None = None,
        surface_after: str | None = None,
    ) -> Answer:
        """``update``: a thought's content, tags, status, flags; ``cwd`` moves it to that project."""
        scope = projects.scope_for(self._ctx, cwd, reader=False)
        thought = self._thoughts.update(
            thought_id, content=content, tags=tags, tags_mode=tags_mode, status=status,
            project=scope.project, set_project=scope.project is not None, is_protected=is_protected,
            is_global=is_global, surface_after=surface_after,
        )  # fmt: skip
        return Answer.one("update", thought).with_scope(scope)

    def link(self, source_id: str | None, target_id: str | None, edge_type: str | None = None) -> Answer:
        """``link``: a typed edge ``source -type-> target`` (one per pair)."""
        return Answer.one("link", self._edges.link(source_id, target_id, edge_type).to_dict())

    def link_batch(self, links: Sequence[Json] | None) -> Answer:
        """``link_batch``: many links in one commit, failures per item."""
        return self._edges.link_batch(links)

    def unlink(self, edge_id: str | None, confirm: bool = False, token: str | None = None) -> Answer:
        """``unlink``: preview, then remove the edge with the preview's token."""
        return self._edges.unlink(edge_id, confirm, token)

    def unlink_batch(self, edge_ids: Sequence[str] | None, confirm: bool = False) -> Answer:
        """``unlink_batch``: a tokenless preview; confirm checks every id first."""
        return self._edges.unlink_batch(edge_ids, confirm)

    def retype(
        self, edge_id: str | None, new_type: str | None, confirm: bool = False, token: str | None = None
    ) -> Answer:
        """``retype``: preview, then change the edge's type with the preview's token."""
        return self._edges.retype(edge_id, new_type, confirm, token)

    # -- memory_supersede ---------------------------------------------------------------------------
    def archive(self, thought_id: str | None, confirm: bool = False, token: str | None = None) -> Answer:
        """``archive``: preview, then set the thought's status to archived."""
        return self._supersede.archive(thought_id, confirm, token)

    def archive_batch(
        self, thought_ids: Sequence[str] | None, confirm: bool = False, token: str | None = None
    ) -> Answer:
        """``archive_batch``: up to 1000 thoughts, one commit."""
        return self._supersede.archive_batch(thought_ids, confirm, token)

    def merge(
        self, spec: MergeSpec, cwd: str | None = None, confirm: bool = False, token: str | None = None
    ) -> Answer:
        """``merge``: the source's edges move onto the target, the source is archived."""
        scope = projects.scope_for(self._ctx, cwd, reader=False)
        return self._supersede.merge(
            dataclasses.replace(spec, project=scope.project), confirm, token
        ).with_scope(scope)

    # -- memory_manage ------------------------------------------------------------------------------
    def list_projects(self, fields: Sequence[str] | None = None) -> Answer:
        """``list``: the registered projects."""
        return self._projects.list(fields)

    def create_project(
        self, name: str | None, local_path: str | None, description: str | None = None
    ) -> Answer:
        """``create``: a project folder with its ``project.yaml``."""
        return self._projects.create(name, local_path, description)

    def update_project(
        self,
        project_id: str | None,
        name: str | None = None,
        local_path: str | None = None,
        description: str | None = None,
    ) -> Answer:
        """``update``: a project's name (written into its thoughts too), path or description."""
        return self._projects.update(project_id, name, local_path, description)

    def delete_project(
        self, project_id: str | None, confirm: bool = False, token: str | None = None
    ) -> Answer:
        """``delete``: preview, then mark ``project.yaml`` deleted and unproject its thoughts."""
        return self._projects.delete(project_id, confirm, token)

    def resolve_project(self, cwd: str | None) -> Answer:
        """``resolve``: the project a path belongs to."""
        return self._projects.resolve(cwd)

    # -- memory_reflect -----------------------------------------------------------------------------
    def reflect(self, spec: ReflectSpec, cwd: str | None = None) -> Answer:
        """``reflect``: a session's summary, goals, decisions and pending items, one commit."""
        scope = projects.scope_for(self._ctx, cwd, reader=False)
        return self._reflect.reflect(spec, self._project(scope)).with_scope(scope)

    def timeline(self, status: str | None, cwd: str | None, limit: int, offset: int) -> Answer:
        """``timeline``: the thoughts, newest first, a page at a time."""
        scope = projects.scope_for(self._ctx, cwd, reader=True)
        return self._reflect.timeline(_status(status, "all"), scope.project, limit, offset).with_scope(scope)

    # -- memory_status ------------------------------------------------------------------------------
    def slots(self, cwd: str | None, slots_limit: int = DEFAULT_SLOTS_LIMIT, offset: int = 0) -> Answer:
        """``slots``: project context, active goals, pending items, architecture decisions."""
        scope = projects.scope_for(self._ctx, cwd, reader=True)
        return self._status.slots(self._project(scope), slots_limit, offset, scope.given).with_scope(scope)

    def frontier(self, cwd: str | None, limit: int = DEFAULT_FRONTIER_LIMIT) -> Answer:
        """``frontier``: what needs attention (pending, contradictions, unfiled, stale)."""
        scope = projects.scope_for(self._ctx, cwd, reader=True)
        return self._status.frontier(scope.project, limit).with_scope(scope)

    def config_text(self) -> str:
        """``config``: the effective settings and the filing contract, as text."""
        return self._status.config_text()

    def health(self, include_details: bool = False) -> Answer:
        """``health``: doctor's checks, the index as a search reads it, the project registry."""
        return self._status.health(include_details)

    def propose(
        self,
        thought_id: str | None,
        content: str | None,
        cwd: str | None = None,
        max_edges: int | None = None,
        include_signals: bool | None = None,
        compact: bool | None = None,
    ) -> Answer:
        """``propose``: a read-only placement plan for a thought or draft content."""
        return self._placement.propose(
            thought_id, content, cwd, max_edges=max_edges, include_signals=include_signals, compact=compact
        )

    # -- memory_primers -----------------------------------------------------------------------------
    def list_primers(self) -> Answer:
        """``list``: the primers, most-hit first."""
        return self._primers.list_answer()

    def delete_primer(self, primer_id: str | None, confirm: bool = False, token: str | None = None) -> Answer:
        """``delete``: preview, then remove the primer (the thought is untouched)."""
        return self._primers.delete(primer_id, confirm, token)

    # -- edge_review --------------------------------------------------------------------------------
    def enqueue_proposals(
        self, thought_id: str | None, max_proposals: int | None = None, cwd: str | None = None
    ) -> Answer:
        """``enqueue``: queue the placement plan's edges for an active thought."""
        scope = projects.scope_for(self._ctx, cwd, reader=False)
        payload = scope.payload or {}
        project_id = payload.get("project") if scope.project else None
        found = self._review.enqueue(
            thought_id, max_proposals, scope.project, project_id if isinstance(project_id, str) else None
        )
        return found.with_scope(scope)

    def list_proposals(
        self,
        status: str | None,
        thought_id: str | None,
        cwd: str | None,
        include_retired: bool = False,
        limit: int | None = None,
        offset: int = 0,
    ) -> Answer:
        """``list``: the review queue, oldest first."""
        scope = projects.scope_for(self._ctx, cwd, reader=True)
        found = self._review.list_queue(status, thought_id, scope.project, include_retired, limit, offset)
        return found.with_scope(scope)

    def apply_proposal(
        self, proposal_id: str | None, confirm: bool = False, token: str | None = None
    ) -> Answer:
        """``apply``: preview, then write the proposal's edge."""
        return self._review.apply(proposal_id, confirm, token)

    def apply_proposals(
        self, proposal_ids: Sequence[str] | None, confirm: bool = False, token: str | None = None
    ) -> Answer:
        """``apply_batch``: preview, then write the proposals' edges in one commit."""
        return self._review.apply_batch(proposal_ids, confirm, token)

    def rollback_proposals(
        self, proposal_ids: Sequence[str] | str | None, confirm: bool = False, token: str | None = None
    ) -> Answer:
        """``rollback``: preview, then undo applied proposals (restoring what they replaced)."""
        return self._review.rollback(proposal_ids, confirm, token)

    def reject_proposal(self, proposal_id: str | None, reason: str | None = None) -> Answer:
        """``reject``: drop a proposal from review."""
        return self._review.reject(proposal_id, reason)

    # -- retention_review ---------------------------------------------------------------------------
    def retention_candidates(
        self, min_age_days: float | None, importance_floor: float | None, limit: int | None, offset: int
    ) -> Answer:
        """``list``: thoughts every retention signal marks (explicit actions only)."""
        return self._retention.candidates(min_age_days, importance_floor, limit, offset)

    def protect(self, thought_id: str | None) -> Answer:
        """``protect``: mark a thought protected."""
        return self._retention.protect(thought_id)

    def retention_delete(
        self, thought_id: str | None, confirm: bool = False, token: str | None = None
    ) -> Answer:
        """``delete``: preview with its dependents, then soft-delete."""
        return self._retention.delete(thought_id, confirm, token)

    def compact(self, source_ids: Sequence[str] | None, summary: Json, confirm: bool = False) -> Answer:
        """``compact``: a protected summary; every source merged into it."""
        return self._retention.compact(source_ids, summary, confirm)

    # -- memory_crystallize -------------------------------------------------------------------------
    def graph(self, cwd: str | None, status: str | None, limit: int, offset: int) -> Answer:
        """``graph``: a page of nodes and the edges between them."""
        scope = projects.scope_for(self._ctx, cwd, reader=True)
        return self._crystallize.graph(scope.project, _status(status, "all"), limit, offset).with_scope(scope)

    def cluster(
        self,
        thought_ids: Sequence[str] | None,
        title: str | None = None,
        tags: Sequence[str] | None = None,
        cwd: str | None = None,
    ) -> Answer:
        """``cluster``: a cluster thought with a cluster edge to each member, one commit."""
        scope = projects.scope_for(self._ctx, cwd, reader=False)
        return self._crystallize.cluster(thought_ids, title, tags, scope.project).with_scope(scope)

    def auto_cluster(
        self,
        min_similarity: float | None,
        min_cluster_size: int | None,
        max_clusters: int | None,
        confirm: bool = False,
        token: str | None = None,
    ) -> Answer:
        """``auto_cluster``: preview the groups by vector distance, then write one cluster each."""
        return self._crystallize.auto_cluster(min_similarity, min_cluster_size, max_clusters, confirm, token)

    def _project(self, scope: Scope) -> Project | None:
        return projects.project_called(self._ctx, scope.project)

    # -- the CLI's maintenance ----------------------------------------------------------------------
    def reindex(self, *, full: bool = False, progress: Progress | None = None) -> tuple[ReconcileReport, int]:
        """Bring the index up to date (``full``: build it anew beside the current one and switch to
        it, which a running daemon follows); return the report and the notes indexed."""
        ctx = self._ctx
        if full:
            from vaultmem.index.opening import embedder_for
            from vaultmem.sync.keeper import rebuild_index

            return rebuild_index(
                self.settings, ctx.layout, ctx.catalog, embedder_for(self.settings), progress
            )
        report = self._kept().reconcile(progress, wait=True)
        return report, ctx.index.count()

    @staticmethod
    def doctor(settings: Settings, progress: Progress | None = None) -> DoctorReport:
        """``vaultmem doctor``: whether vault, index and git agree. Reads only: nothing is committed,
        swept or indexed, and the index is opened only if one exists."""
        return doctor.diagnose_vault(settings, progress)

    @staticmethod
    def init(path: Path, git_dir: Path | None = None, folder: str | None = None) -> tuple[Path, bool]:
        """``vaultmem init``: make ``path`` a vault, or adopt it in place (:func:`init_vault`)."""
        return init_vault(path, git_dir, folder, size_limit=Settings.resolve(path).size_limit)
