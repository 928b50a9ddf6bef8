"""The memory as it was: the versioned store built from ``git log`` and kept current, and ``as_of``.

:class:`PastIndex` builds a :class:`~vaultmem.index.versions.VersionStore` on the first ``as_of``
read of a process (a daemon nobody asks about the past never reads its history), from the snapshot
an earlier process left in the state directory and the commits since, or from the whole ``git log``
of the main line (:mod:`vaultmem.sync.mainline`); later reads take only the commits made since.
Texts the embedding cache does not hold are embedded once, in the background when they are many
(answers say ``degraded`` meanwhile). What ``as_of`` means (a time, a commit, a merge from another
machine): docs/architecture.md, "Time travel".
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
import logging
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vaultmem.errors import GitError, IndexError_, InvalidInput, MalformedNote
from vaultmem.index.note_index import NoteIndex
from vaultmem.index.versions import RECORD_FIELDS, PastView, Version, VersionStore
from vaultmem.notes.ids import derived_id
from vaultmem.sync.mainline import LineCommit, RefsWatch, batches, head_of, main_line, read_blobs
from vaultmem.sync.reconcile import record_for
from vaultmem.vault.entry import ENTRY_FIELDS, Entry
from vaultmem.vault.history import GitRepo
from vaultmem.vault.layout import is_conflict_copy
from vaultmem.vault.note_files import note_of_bytes

__all__ = ["SNAPSHOT", "AsOf", "PastIndex", "parse_as_of"]

log = logging.getLogger(__name__)
_HEX = re.compile(r"[0-9a-fA-F]{7,40}")
_MAX_AS_OF = 64
#: Past texts the first ``as_of`` read embeds before answering; beyond, in the background.
EMBED_INLINE = 256
#: The store's snapshot in the state directory, and the layout it is written in (bump it when the
#: snapshot's shape or the full-text analyzer changes: an older snapshot is then rebuilt from git).
SNAPSHOT = "past.jsonl"
SNAPSHOT_FORMAT = 2  # 2: BM25F (a title and a body length per document), the Snowball stop words
_FIELDS = [list(RECORD_FIELDS), list(ENTRY_FIELDS)]
#: Versions read since the last snapshot after which one is written at once (else at close).
SAVE_AFTER = 1000
#: Seconds the first ``as_of`` read of a process waits for the history to be read; past that it
#: answers "ask again shortly" (a retryable 503) while the reading goes on in the background.
FIRST_READ_WAIT = 20.0


@dataclass(frozen=True)
class AsOf:
    """A parsed ``as_of``: a commit id to look up, a time, or both (``20260314`` is both)."""

    text: str
    commit: str | None
    time: float | None


def parse_as_of(value: object) -> AsOf:
    """Check an ``as_of`` argument's form (no git needed): a 400 naming it when it has none."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("as_of is empty; pass an ISO 8601 date-time (2026-03-14T09:30:00Z) or a commit id")
    text = value.strip()
    if len(text) > _MAX_AS_OF:
        raise InvalidInput(f"as_of is {len(text)} characters; pass a date-time or a commit id")
    commit = text if _HEX.fullmatch(text) else None
    when: float | None = None
    try:
        parsed = dt.datetime.fromisoformat(text)
        when = (parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)).timestamp()
    except ValueError:
        if commit is None:
            raise InvalidInput(
                f"as_of {text!r} is neither an ISO 8601 date-time (2026-03-14T09:30:00Z; without a "
                "zone it is UTC) nor a commit id (7 to 40 hex digits, as `vaultmem log` shows)"
            ) from None
    return AsOf(text, commit, when)


class PastIndex:
    """The versions of the vault's main line, built on first use from git and kept current."""

    def __init__(
        self, repo: GitRepo, index: NoteIndex, state_dir: Path, writable: Callable[[str], bool] | None = None
    ) -> None:
        self.repo = repo
        #: Whether a path is vaultmem's (``VaultLayout.writable``): a person's file is read as theirs.
        self._writable = writable or (lambda _rel: True)
        self.index = index
        self.snapshot_path = state_dir / SNAPSHOT
        self._lock = threading.Lock()
        self._starting = threading.Lock()
        self._store: VersionStore | None = None
        self._line: list[str] = []  # commit ids, oldest first
        self._times: list[float] = []  # their committer times, never decreasing
        self._position: dict[str, int] = {}
        self._owner: dict[str, str] = {}  # a note id (its file's) -> the path holding it now
        self._refs = RefsWatch(repo)
        self._seen: tuple[object, ...] | None = None  # the refs' stamp when the store was read up
        self._saved = 0  # versions in the snapshot on disk
        self._embedder: threading.Thread | None = None
        self._saver: threading.Thread | None = None
        self._reader: threading.Thread | None = None
        self._failure: Exception | None = None
        self._progress = (0, 0)  # commits read of the commits to read, while reading
        self._stopping = threading.Event()

    # ----------------------------------------------------------------- reading the past

    def view(self, as_of: object) -> PastView:
        """The memory at ``as_of``: a 400 naming the argument when it is no date-time or commit, a
        retryable 503 while the first read of the history takes longer than :data:`FIRST_READ_WAIT`."""
        wanted = parse_as_of(as_of)
        if self._store is None:
            self._first_read()
        with self._lock:
            store = self._current()
            position = self._position_for(wanted)
            moment = self._moment(position)
        searcher = self.index.searcher
        return PastView(
            store,
            position,
            moment=moment,
            embed_query=searcher.embed_query,
            stale=self.index.needs_rebuild,
            fusion=searcher.fusion,
            calibration=searcher.calibration,
        )

    def _first_read(self) -> None:
        """Read the history on a thread of its own (the snapshot, or the whole ``git log``) and wait
        for it a bounded time: a long history is not read inside one tool call's time."""
        with self._starting:  # not the store's lock, which the reading holds throughout
            if self._store is not None:
                return
            if self._reader is None or not self._reader.is_alive():
                self._failure = None
                self._reader = threading.Thread(target=self._read_first, name="vaultmem-past-read")
                self._reader.start()
            reader = self._reader
        reader.join(FIRST_READ_WAIT)
        if reader.is_alive():
            done, total = self._progress
            read = f": {done:,} of {total:,} commits" if total else ""
            raise IndexError_(
                f"the vault's history is still being read for as_of (the first time in this process{read}); "
                "ask again in a few seconds"
            )
        if self._failure is not None:
            raise self._failure

    def _read_first(self) -> None:
        try:
            with self._lock:
                self._current()
        except Exception as exc:  # handed to the read that waits (or the next one)
            self._failure = exc

    def _moment(self, position: int) -> str:
        """How an answer names its moment: the commit and its date, or before the first commit."""
        if position < 0:
            return "before the vault's first commit"
        when = dt.datetime.fromtimestamp(self._times[position], dt.UTC).isoformat()
        return f"at commit {self._line[position][:12]} ({when.replace('+00:00', 'Z')})"

    def _position_for(self, wanted: AsOf) -> int:
        if wanted.commit is not None:
            sha = self.repo.git(
                "rev-parse", "--verify", "--quiet", "--end-of-options", f"{wanted.commit}^{{commit}}",
                check=False,
            ).strip()  # fmt: skip
            if sha:
                return self._position_of_commit(sha, wanted.text)
            if wanted.time is None:
                raise InvalidInput(
                    f"as_of {wanted.text!r} names no commit of this vault's history; pass a commit id "
                    "from `vaultmem log` or an ISO 8601 date-time"
                )
        assert wanted.time is not None
        return bisect.bisect_right(self._times, wanted.time) - 1

    def _position_of_commit(self, sha: str, text: str) -> int:
        found = self._position.get(sha)
        if found is not None:
            return found
        if not self._line or not self._contains(self._line[-1], sha):
            raise InvalidInput(
                f"as_of {text!r} is a commit the vault's current branch does not contain; pass a "
                "commit from `vaultmem log` or an ISO 8601 date-time"
            )
        low, high = 0, len(self._line) - 1  # the first main-line commit containing it (a merge)
        while low < high:
            middle = (low + high) // 2
            if self._contains(self._line[middle], sha):
                high = middle
            else:
                low = middle + 1
        return low

    def _contains(self, commit: str, ancestor: str) -> bool:
        return self.repo.run("merge-base", "--is-ancestor", ancestor, commit, check=False).returncode == 0

    # ----------------------------------------------------------------- keeping it current

    def _current(self) -> VersionStore:
        """The store read up to ``HEAD``: from the snapshot and the commits since the first time in a
        process, built from the whole ``git log`` when there is none or the line changed, and then
        only the new commits (nothing at all while the refs' files are unchanged)."""
        stamp = self._refs.stamp()
        if self._store is not None and stamp is not None and stamp == self._seen:
            return self._store
        head = head_of(self.repo)
        if self._store is None:
            self._restore()
        store = self._store
        tip = self._line[-1] if self._line else ""
        if store is None or head != tip:
            try:
                new = main_line(self.repo, head, since=tip) if store is not None and tip else []
            except GitError:  # the commit read last is gone (history rewritten, then pruned)
                new = []
            if store is not None and new and new[0].parent == tip:
                self._apply(store, new)
            else:
                if store is not None:
                    log.info("the vault's main line is not the one read before; reading it again")
                store = VersionStore(self.index.embedder.dim)
                self._line, self._times, self._position, self._owner = [], [], {}, {}
                self._saved = -1  # a new store: written out once read
                self._apply(store, main_line(self.repo, head))
                self._store = store  # only now: another read waits for the first one, boundedly
        self._seen = stamp
        if len(store) - self._saved >= SAVE_AFTER or self._saved < 0:
            self._save(background=True)
        self._vectors()
        return store

    def _apply(self, store: VersionStore, commits: list[LineCommit]) -> None:
        done = 0
        for batch in batches(commits):
            if self._stopping.is_set():  # closing: what was read is whole up to its last commit
                return
            self._progress = (done, len(commits))
            blobs = read_blobs(self.repo, sorted({b for c in batch for _, b in c.changes if b is not None}))
            with store.lock:
                for commit in batch:
                    self._apply_commit(store, commit, blobs)
            done += len(batch)

    def _apply_commit(self, store: VersionStore, commit: LineCommit, blobs: dict[str, bytes]) -> None:
        position = len(self._line)
        self._line.append(commit.sha)
        self._times.append(max(commit.time, self._times[-1]) if self._times else commit.time)
        self._position[commit.sha] = position
        for path, _ in commit.changes:  # removals first: a rename hands its id to the new path
            closed = store.close(path, position)
            if closed is not None and self._owner.get(closed.record.id) == path:
                del self._owner[closed.record.id]
        # Originals before sync clients' copies, as the catalog decides who keeps a shared id.
        written = sorted(
            (c for c in commit.changes if c[1] is not None), key=lambda c: (is_conflict_copy(c[0]), c)
        )
        for path, blob in written:
            version = self._version(path, blobs.get(blob or ""))
            if version is not None:
                store.add(version, position)

    def _version(self, path: str, raw: bytes | None) -> Version | None:
        """The version a blob holds, under the id the index would give it; None for a file that is
        not a readable note (left out, as the index leaves it out)."""
        if raw is None:
            return None
        try:
            persons = not self._writable(path)
            note = note_of_bytes(raw, path, persons)
        except MalformedNote:
            return None
        record = record_for(note)
        if note.id:
            holder = self._owner.setdefault(record.id, path)
            if holder != path:  # a copy carrying another file's id: indexed under its path's id
                record = record.but(id=derived_id(path))
        entry = Entry.from_note(note, 0, len(raw)).but(id=record.id)
        return Version(record, entry)

    def _vectors(self) -> None:
        """Vectors for the texts added: the embedding cache's, the rest embedded (a few at once, many
        in the background)."""
        store = self._store
        missing = store.unembedded() if store is not None else {}
        if not missing or store is None:
            return
        store.set_vectors(self.index.vectors_of(missing, embed=len(missing) <= EMBED_INLINE))
        if store.unembedded() and (self._embedder is None or not self._embedder.is_alive()):
            self._embedder = threading.Thread(target=self._embed_rest, name="vaultmem-past-vectors")
            self._embedder.start()

    def _embed_rest(self) -> None:
        """Embed the store's texts without a vector, a batch at a time, until none is left (the store
        read may be replaced by a rebuild meanwhile: the current one is embedded)."""
        while not self._stopping.is_set() and (store := self._store) is not None:
            batch = dict(list(store.unembedded().items())[:EMBED_INLINE])
            if not batch:
                return
            try:
                store.set_vectors(self.index.vectors_of(batch, embed=True))
            except Exception:  # the model or the cache failed: answers stay degraded, say why once
                log.exception("embedding past versions failed; `as_of` searches skip their vectors")
                return

    def texts_to_embed(self) -> int:
        """How many past texts have no vector yet (embedded in the background meanwhile)."""
        store = self._store
        return 0 if store is None else len(store.unembedded())

    # ----------------------------------------------------------------- the snapshot

    def _restore(self) -> None:
        """Take the store from the snapshot a process wrote, if there is a usable one: JSON lines,
        a header (the main line read), each term's postings, then each version, read line by line."""
        try:
            handle = self.snapshot_path.open("rb")
        except OSError:
            return
        try:
            with handle:
                header = json.loads(handle.readline())
                if header.get("format") != SNAPSHOT_FORMAT or header.get("fields") != _FIELDS:
                    return
                store = VersionStore(self.index.embedder.dim)
                postings = (json.loads(handle.readline()) for _ in range(int(header["terms"])))
                store.restore(list(header["lengths"]), postings, (json.loads(line) for line in handle))
            line = [str(sha) for sha, _ in header["line"]]
            times = [float(t) for _, t in header["line"]]
            owner = {str(k): str(v) for k, v in header["owner"].items()}
            if len(store) != header["rows"]:
                raise ValueError("the snapshot was cut short")
        except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            log.info(
                "the snapshot %s is unusable (%s); reading the history from git", self.snapshot_path, exc
            )
            return
        self._store, self._line, self._times, self._owner = store, line, times, owner
        self._position = {sha: i for i, sha in enumerate(line)}
        self._saved = len(store)

    def _save(self, *, background: bool) -> None:
        """Write the snapshot (atomically, from a copy taken now; derived state: a failure only
        slows the next process)."""
        store = self._store
        if store is None:
            return
        lengths, postings, rows = store.snapshot()
        header = {
            "format": SNAPSHOT_FORMAT,
            "fields": _FIELDS,
            "line": [[sha, t] for sha, t in zip(self._line, self._times, strict=True)],
            "owner": dict(self._owner),
            "lengths": lengths,
            "terms": len(postings),
            "rows": len(store),
        }
        self._saved = len(store)
        path = self.snapshot_path

        def write() -> None:
            temp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                with temp.open("w", encoding="utf-8") as out:
                    out.write(_line_of(header))
                    for term, docs, tfs in postings:
                        out.write(_line_of([term, docs.tolist(), tfs.tolist()]))
                    for row in rows:
                        out.write(_line_of(row))
                temp.replace(path)
            except (OSError, ValueError) as exc:
                log.warning("the snapshot %s was not written: %s", path, exc)
                temp.unlink(missing_ok=True)

        if self._saver is not None:
            self._saver.join()
        if background:
            self._saver = threading.Thread(target=write, name="vaultmem-past-snapshot")
            self._saver.start()
        else:
            write()

    def close(self) -> None:
        """Stop embedding in the background and write what was read since the last snapshot."""
        self._stopping.set()
        if self._embedder is not None:
            self._embedder.join()
        with self._lock:
            if self._store is not None and len(self._store) != self._saved:
                self._save(background=False)
            if self._saver is not None:
                self._saver.join()


def _line_of(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"
