"""The catalog: an in-memory view of every note's owned frontmatter, derived from the vault.

The write path asks it the questions the filing contract needs answered exactly and at once: does
this idempotency key exist, which live note has this fingerprint, which names are taken, how many
memories were written today. It is rebuilt from the files at start (reusing a cache of parsed
entries keyed by path, mtime and size, so a start with nothing changed parses nothing) and kept
current by the write path and the watcher. Malformed notes are recorded as problems, never touched.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator

from vaultmem.errors import MalformedNote
from vaultmem.notes.ids import canonical_id, derived_id
from vaultmem.notes.links import name_key
from vaultmem.notes.model import Note
from vaultmem.vault.catalog_cache import load_entries, save_entries
from vaultmem.vault.entry import Entry
from vaultmem.vault.gone import GoneNotes
from vaultmem.vault.history import GitRepo
from vaultmem.vault.layout import (
    VaultLayout,
    bad_name_reason,
    is_conflict_copy,
    is_conflict_stem,
    not_a_file_reason,
)
from vaultmem.vault.link_paths import closest as _closest
from vaultmem.vault.link_paths import dir_of as _dir_of
from vaultmem.vault.link_paths import path_link
from vaultmem.vault.multimap import Multimap
from vaultmem.vault.note_files import read_note
from vaultmem.vault.pulled import PulledRenames
from vaultmem.vault.reading import shown

log = logging.getLogger(__name__)
IDEM_TAG_PREFIX = "idem-"


class Catalog:
    """Every note's owned keys, with the lookups the write path needs. Thread-safe."""

    def __init__(
        self,
        layout: VaultLayout,
        first_added: Callable[[str], int] | None = None,
        pulled: PulledRenames | None = None,
    ) -> None:
        self.layout = layout
        #: The commit the cache knew and git's renames since: a person's pull while nothing ran.
        self.pulled = pulled
        #: When git first recorded a path (``GitRepo.first_added``): which of two files read with no
        #: cache to say which held their id keeps it (:meth:`_eldest_holds`).
        self.first_added = first_added
        self._lock = threading.RLock()
        self._by_path: dict[str, Entry] = {}
        self._by_id: dict[str, str] = {}
        self._by_fp = Multimap()  # fingerprint -> paths
        self._by_idem = Multimap()  # idempotency tag -> paths (two machines may each have used a key)
        self._by_stem = Multimap()  # file stem (name_key) -> paths of notes
        self._by_alias = Multimap()  # alias (name_key) -> paths of the notes it names
        self._by_source = Multimap()  # _source_key(source id or url) -> paths of the notes from it
        self._by_dir = Multimap()  # folder ("" for the root) -> paths of the notes directly in it
        #: Lower-cased stems of malformed files, by directory: their names are taken too.
        self._problem_names: dict[str, set[str]] = {}
        self._days: Counter[str] = Counter()
        self.problems: dict[str, str] = {}
        #: Paths that look like notes but are never read: ``{printable path: why}`` (a name that is
        #: not UTF-8, a named pipe, a socket, a device). Reported by doctor and health.
        self.skipped: dict[str, str] = {}
        self._cache_file = layout.state_dir / "catalog.cache"
        self._gone = GoneNotes(layout.state_dir / "gone-ids")  # the ids of renamed person's notes
        self._quiet_delay: float | None = None  # save_when_quiet
        self._save_due = 0.0
        self._saver: threading.Thread | None = None
        #: The lookups changed since the cache was last read or written (a close with nothing
        #: changed writes nothing: at 100k notes the cache is 0.36 s to write).
        self._unsaved = True

    @classmethod
    def of_repo(cls, layout: VaultLayout, repo: GitRepo) -> Catalog:
        """The catalog of a vault whose history ``repo`` holds (which file git recorded first, and
        the renames a person's pull brought while nothing ran)."""
        return cls(layout, first_added=repo.first_added, pulled=PulledRenames(repo, layout))

    # -- building ---------------------------------------------------------------------------
    def scan(self, temp_files: list[str] | None = None) -> tuple[int, int]:
        """Rebuild from the vault; return (notes seen, notes parsed anew). With ``temp_files``, the
        temp files of atomic writes met on the walk are appended to it (vault-relative)."""
        cached = load_entries(self._cache_file)
        parsed = 0
        with self._lock:
            self._clear()
            changed, same = [], set()
            for rel, st in self.layout.iter_note_paths(self.skipped, temp_files):
                old = cached.get(rel)
                if old is not None and old.mtime_ns == st.st_mtime_ns and old.size == st.st_size:
                    same.add(rel)
                else:
                    changed.append(rel)
            # Who held an id keeps it while its file still carries it, changed or not (edited,
            # touched, restored), against a copy made while nothing ran: the holders first, in the
            # cache's order (save_cache saves them first, so each id's first entry is its holder).
            # Then the files new since the last scan (a holder renamed while nothing ran keeps its
            # id at its new name), then the rest by path, which is the order the watcher would
            # give a free id in (``_hand_on``).
            claimed: set[str | None] = set()
            rest: dict[str, Entry | None] = {}  # path -> its cached entry, or None to read it
            for rel, entry in cached.items():
                held = entry.id is not None and entry.id not in claimed
                claimed.add(entry.id)
                if rel in same and (held or entry.id is None):  # no id: nothing to claim
                    self._add(entry)
                elif held and rel in changed:
                    parsed += 1
                    self.refresh(rel)
                elif rel in same:
                    rest[rel] = entry
            walked = same.union(changed)
            for rel, entry in cached.items():
                if rel not in walked:  # deleted or renamed while nothing ran
                    self._gone.went(entry)
            fresh = sorted(r for r in changed if r not in cached)
            for rel in fresh:
                parsed += 1
                self.refresh(rel)
            if self.pulled is not None and fresh:  # a person's pull of a rename while nothing ran
                for went, came in self.pulled.moved_whole(cached, walked, self._by_path.get):
                    self._gone.edited(went, came, self.with_fingerprint)
            self._eldest_holds(fresh)
            for rel in changed:  # the other files read before, unless read above as holders
                if rel in cached and rel not in self._by_path and rel not in self.problems:
                    rest[rel] = None
            for rel in sorted(rest):
                if (known := rest[rel]) is not None:
                    self._add(known)
                else:
                    parsed += 1
                    self._gone.edited(cached[rel], self.refresh(rel), self.with_fingerprint)
            seen = len(self._by_path) + len(self.problems)
        if parsed or len(cached) != len(self._by_path):
            self.save_cache()
        else:
            self._unsaved = False  # what the cache holds
        return seen, parsed

    def _eldest_holds(self, fresh: list[str]) -> None:
        """Files no cache knew (the state directory deleted, a clone's first start) that carry one
        id: the file git recorded first keeps it, not the first by path (Obsidian's copy
        ``<name> 1.md`` sorts before ``<name>.md``), so the derived state decides nothing."""
        if self.first_added is None:
            return
        fresh_set = set(fresh)
        contested: dict[str, list[str]] = {}
        for rel in self.problems:
            entry = self._by_path.get(rel)
            holder = self._by_id.get(entry.id) if entry is not None and entry.id else None
            if entry is not None and entry.id and rel in fresh_set and holder in fresh_set and holder:
                contested.setdefault(entry.id, [holder]).append(rel)
        root = self.layout.root
        for note_id, paths in contested.items():
            plain = [p for p in paths if not is_conflict_copy(p, root)]  # a copy never holds over them
            if len(plain) < 2:
                continue
            added = self.first_added
            eldest = min(plain, key=lambda p: (added(p), p))
            if eldest == self._by_id[note_id]:
                continue
            self._by_id[note_id] = eldest
            self.problems.pop(eldest, None)
            for other in paths:
                if other != eldest:
                    self.problems[other] = _same_id(other, eldest)

    def save_when_quiet(self, delay: float) -> None:
        """Save the cache ``delay`` seconds after the changes (writes, the watcher's paths) pause,
        not only at scans and at close: a daemon does, so that a start after a kill -9 knows from
        the cache which file held each id since (a copy made by hand, whose name sorts first,
        used to take an agent's note's id and links at that start)."""
        self._quiet_delay = delay

    def _changed(self) -> None:
        self._unsaved = True
        if self._quiet_delay is None:
            return
        with self._lock:
            self._save_due = time.monotonic() + self._quiet_delay
            if self._saver is None:
                self._saver = threading.Thread(target=self._save_when_due, name="vaultmem-catalog-save")
                self._saver.daemon = True
                self._saver.start()

    def _save_when_due(self) -> None:
        while True:
            with self._lock:
                wait = self._save_due - time.monotonic()
                if wait <= 0:
                    self._saver = None
                    break
            time.sleep(wait)
        self.save_cache()

    def refresh(self, rel: str) -> Entry | None:
        """Re-read one path (created, changed or gone) and update the lookups."""
        with self._lock:
            held = self._id_held_by(rel)
            entry = self._read(rel)
            self._hand_on(held)
            self._changed()
            return entry

    def _read(self, rel: str) -> Entry | None:
        old = self._remove(rel)
        self._no_problem(rel)
        self.skipped.pop(shown(rel), None)
        reason = bad_name_reason(rel)
        if reason is not None:
            self.skipped[shown(rel)] = reason
            return None
        full = self.layout.root / rel
        try:
            st = full.stat()
        except OSError:
            self._gone.went(old)
            return None
        reason = not_a_file_reason(rel, st.st_mode)
        if reason is not None:  # a pipe or socket: never opened (a read could block forever)
            self.skipped[rel] = reason
            return None
        try:
            note = read_note(self.layout, rel)
        except MalformedNote as exc:
            self.problems[rel] = str(exc)
            self._problem_names.setdefault(_dir_of(rel), set()).add(name_key(_stem(rel)))
            return None
        entry = Entry.from_note(note, st.st_mtime_ns, st.st_size)
        self._add(entry)
        self._gone.edited(old, entry, self.with_fingerprint)
        return entry

    def refresh_merged(self, rels: list[str]) -> None:
        """:meth:`refresh` the paths a merge changed. A note without an ``id`` key that it moved (one
        path gone, one come, of the same bytes) keeps answering the ids it had: the checkout wrote
        it anew, so its modification time is not the one a rename keeps (``gone.py``)."""
        with self._lock:
            went: dict[str, list[Entry]] = {}  # content hash -> the notes without an id at rels
            for rel in rels:
                if (e := self._by_path.get(rel)) is not None and e.id is None:
                    went.setdefault(e.content_hash, []).append(e)
            for rel in rels:
                self.refresh(rel)
            came: dict[str, list[Entry]] = {}
            for rel in rels:
                if (e := self._by_path.get(rel)) is not None and e.content_hash in went:
                    came.setdefault(e.content_hash, []).append(e)
            for content_hash, heirs in came.items():
                olds = went[content_hash]
                if len(heirs) == len(olds) == 1 and olds[0].path not in self._by_path:
                    self._gone.edited(olds[0], heirs[0], self.with_fingerprint)

    def put(self, note: Note) -> Entry:
        """Record a note the write path has just written."""
        st = (self.layout.root / note.path).stat()
        entry = Entry.from_note(note, st.st_mtime_ns, st.st_size)
        with self._lock:
            old = self._remove(note.path)
            self._no_problem(note.path)
            self._add(entry)
            self._gone.edited(old, entry, self.with_fingerprint)
            self._changed()
        return entry

    def forget_path(self, rel: str) -> None:
        with self._lock:
            held = self._id_held_by(rel)
            self._gone.went(self._remove(rel))
            self._no_problem(rel)
            self.skipped.pop(shown(rel), None)
            self._hand_on(held)
            self._changed()

    def _id_held_by(self, rel: str) -> str | None:
        """The id the note at ``rel`` holds (None when it holds none: no id, or a copy's)."""
        entry = self._by_path.get(rel)
        return entry.id if entry is not None and entry.id and self._by_id.get(entry.id) == rel else None

    def _hand_on(self, note_id: str | None, *, plain_only: bool = False) -> str | None:
        """The file that held ``note_id`` is gone or carries another id now: a file reported for
        carrying it too (a copy made by hand) takes it, as the next start's scan would give it.
        A sync client's conflict copy only when no other file carries it (never, ``plain_only``);
        else the first path. Return the file that took it, if one did."""
        if not note_id or note_id in self._by_id:
            return None
        heirs = [p for p in self.problems if (e := self._by_path.get(p)) is not None and e.id == note_id]
        if not heirs:
            return None
        heir = min(heirs, key=lambda p: (is_conflict_copy(p, self.layout.root), p))
        if plain_only and is_conflict_copy(heir, self.layout.root):
            return None
        del self.problems[heir]
        self._by_id[note_id] = heir
        for other in heirs:  # the others now share it with the heir
            if other != heir:
                self.problems[other] = _same_id(other, heir)
        return heir

    def _no_problem(self, rel: str) -> None:
        if self.problems.pop(rel, None) is not None:
            names = self._problem_names.get(_dir_of(rel))
            if names is not None:
                names.discard(name_key(_stem(rel)))

    def _clear(self) -> None:
        for table in (self._by_path, self._by_id, self._problem_names, self._days):
            table.clear()
        for multimap in (
            self._by_fp,
            self._by_idem,
            self._by_stem,
            self._by_alias,
            self._by_source,
            self._by_dir,
        ):
            multimap.clear()
        self.problems.clear()
        self.skipped.clear()

    def _add(self, entry: Entry) -> None:
        path = entry.path
        self._by_path[path] = entry
        stem = path.rsplit("/", 1)[-1].removesuffix(".md")  # the slug (once: every note, every start)
        folder = path.rpartition("/")[0]
        copy = is_conflict_stem(stem, self.layout.root, folder)
        if entry.id:
            owner = self._by_id.get(entry.id)
            if owner is not None and owner != path and self._gave_up(owner, entry.id):
                # The file that held the id changed since it was read and carries another id now:
                # a sync's merge gave its path to another machine's note and this one a new name,
                # and the watcher reads paths in sorted order. The id goes where it is now; the old
                # reading is dropped, and the change to that file is read as any other.
                self._remove(owner)
                self.problems.pop(owner, None)
                owner = None
            if owner is not None and owner != entry.path and not (self.layout.root / owner).exists():
                # The file that held the id is gone: a rename whose new name was seen first (the
                # watcher takes paths in sorted order). The note keeps its id at its new path.
                self._remove(owner)
                self._no_problem(owner)
                owner = None
                if copy:  # renamed to a conflict copy's name: a plain file carrying the id takes it
                    owner = self._hand_on(entry.id, plain_only=True)
            root = self.layout.root
            if owner is not None and owner != entry.path and not copy and is_conflict_copy(owner, root):
                # A sync client's copy was seen first: the original takes its id back.
                self.problems[owner] = _same_id(owner, entry.path)
                owner = None
            if owner is not None and owner != entry.path:
                self.problems[entry.path] = _same_id(entry.path, owner)
            else:
                self._by_id[entry.id] = entry.path
        if not copy:  # a conflict copy is never a write's target: no reinforce, no key
            self._by_fp.add(entry.fingerprint, entry.path)
            for tag in entry.tags:
                if tag.startswith(IDEM_TAG_PREFIX):
                    self._by_idem.add(tag, entry.path)
            for key in _source_keys(entry):
                self._by_source.add(key, entry.path)
        self._by_stem.add(name_key(stem), path)
        self._by_dir.add(folder, path)
        for alias in entry.aliases:
            self._by_alias.add(name_key(alias), entry.path)
        day = entry.created_day
        if day:
            self._days[day] += 1

    def _gave_up(self, rel: str, note_id: str) -> bool:
        """Whether the file at ``rel``, which held ``note_id``, changed since it was read and no
        longer carries that id (read again to tell; only ever asked of an id's holder)."""
        known = self._by_path.get(rel)
        try:
            st = (self.layout.root / rel).stat()
        except OSError:
            return False  # gone: the caller's rule for a file that held the id applies
        if known is not None and (known.mtime_ns, known.size) == (st.st_mtime_ns, st.st_size):
            return False
        try:
            return read_note(self.layout, rel).id != note_id
        except MalformedNote:
            return True

    def _remove(self, rel: str) -> Entry | None:
        entry = self._by_path.pop(rel, None)
        if entry is None:
            return None
        if entry.id and self._by_id.get(entry.id) == rel:
            del self._by_id[entry.id]
        self._by_fp.discard(entry.fingerprint, rel)
        for tag in entry.tags:
            if tag.startswith(IDEM_TAG_PREFIX):
                self._by_idem.discard(tag, rel)
        self._by_stem.discard(name_key(entry.slug), rel)
        self._by_dir.discard(_dir_of(rel), rel)
        for key in _source_keys(entry):
            self._by_source.discard(key, rel)
        for alias in entry.aliases:
            self._by_alias.discard(name_key(alias), rel)
        day = entry.created_day
        if day:
            self._days[day] -= 1
            if self._days[day] <= 0:
                del self._days[day]
        return entry

    # -- questions --------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._by_path)

    def entries(self) -> Iterator[Entry]:
        with self._lock:
            yield from list(self._by_path.values())

    def by_path(self, rel: str) -> Entry | None:
        return self._by_path.get(rel)

    def by_id(self, note_id: str) -> Entry | None:
        with self._lock:
            rel = self._by_id.get(note_id.lower())
            return self._by_path.get(rel) if rel else None

    def holders(self) -> dict[str, str]:
        """``{id: path of the note holding it}``."""
        with self._lock:
            return dict(self._by_id)

    def entry_for_id(self, note_id: str) -> Entry | None:
        """The note a full id names: its ``id`` key, or the id derived from its path that the index
        (and so every read) reports for a note a person wrote without one, or for a copy whose id
        another file holds. Every id a read returns is accepted here."""
        wanted = canonical_id(note_id)
        entry = self.by_id(wanted)
        if entry is not None:
            return entry
        for candidate in self.entries():
            if candidate.id:
                owner = self.by_id(candidate.id)
                if owner is not None and owner.path == candidate.path:
                    continue  # indexed under its own id, which is not the one wanted
            if derived_id(candidate.path) == wanted:
                return candidate
        with self._lock:  # its file renamed since (the records may be read again from disk)
            return self._gone.successor(wanted, self.with_fingerprint)

    def by_idempotency_tag(self, tag: str) -> Entry | None:
        """The note a key names; of several (each machine wrote one before they met), the first by
        path, as for a fingerprint: every machine answers the same note, whichever it read first.
        A copy made by hand, carrying its original's id and key, comes after its original."""
        with self._lock:
            entries = [self._by_path[p] for p in self._by_idem.get(tag) if p in self._by_path]
            if not entries:
                return None
            return min(entries, key=lambda e: (e.id is not None and self._by_id.get(e.id) != e.path, e.path))

    def resolve_link(
        self, target: str, *, source: str | None = None, recorded: str | None = None
    ) -> Entry | None:
        """The note a link target names: a file name, a path, or an alias.

        ``recorded`` is the id the linking note recorded for this link (``link_targets``): while a
        note has that id, the link is that note's, whatever names changed since (a clash, a rename
        outside Obsidian). Otherwise the name decides, as Obsidian resolves it, case-insensitively:
        a path (``folder/name``) is the note at that vault path, else at that path from the linking
        note ``source``'s folder (``../x``; ``./x`` from there first, ``/x`` from the root only), else
        the closest note whose path ends with it; a bare
        name shared by several notes goes to the closest one: in ``source``'s folder first, then
        the shortest path, then the first in sort order. A name no file has resolves to the note
        whose ``aliases:`` list it (Obsidian writes ``[[file|alias]]`` when you pick an alias; a
        bare ``[[alias]]`` is what a person means by it), by the same order.
        """
        name = target.strip()
        if name.lower().endswith(".md"):
            name = name[:-3]
        with self._lock:
            if recorded:
                owner = self._by_id.get(recorded)
                if owner is not None:
                    return self._by_path.get(owner)
            here = _dir_of(source) if source is not None else None
            if "/" in name:
                return self._by_path_link(name, here)
            paths = self._by_stem.get(name_key(name))
            if not paths:
                paths = self._by_alias.get(name_key(name))
                if not paths:
                    return None
            if recorded:  # the note it was made for has no id of its own: its id is its path's
                made_for = next((p for p in paths if derived_id(p) == recorded), None)
                if made_for is not None:
                    return self._by_path.get(made_for)
            return self._by_path.get(_closest(paths, here))

    def _by_path_link(self, name: str, here: str | None) -> Entry | None:
        """The note a link with a path names (``vault/link_paths.py`` says how a path is read)."""
        named = self._by_stem.get(name_key(name.rsplit("/", 1)[-1]))
        found = path_link(name, here, self._by_path, named)
        return self._by_path.get(found) if found is not None else None

    def paths_named(self, name: str) -> list[str]:
        """Every note whose file name (without ``.md``) is ``name``, compared case-insensitively."""
        with self._lock:
            return sorted(self._by_stem.get(name_key(name)))

    def from_source(self, source_id: str | None, source_url: str | None) -> list[Entry]:
        """The notes (never a sync client's conflict copy) captured from this source id or url, by
        path: a capture's lookup of its source's card without a walk over every note (at 100k notes
        the walk made a capture ~70 ms slower, inside the write lock; docs/benchmarks.md)."""
        keys = [_source_key("id", source_id), _source_key("url", source_url)]
        with self._lock:
            paths = {p for key in keys if key for p in self._by_source.get(key)}
            return [self._by_path[p] for p in sorted(paths)]

    def in_folder(self, folder: str) -> list[Entry]:
        """The notes in ``folder`` and the folders below it, by path (without a walk over every note:
        an idea capture asks it of the ideas folder, inside the write lock)."""
        below = folder.rstrip("/") + "/"
        with self._lock:
            paths = [
                p for d in self._by_dir if d == folder or d.startswith(below) for p in self._by_dir.get(d)
            ]
            return [self._by_path[p] for p in sorted(paths)]

    def with_fingerprint(self, fp: str) -> list[Entry]:
        with self._lock:
            return [self._by_path[p] for p in sorted(self._by_fp.get(fp))]

    def name_taken(self, directory: str, slug: str) -> bool:
        """True when ``directory/slug.md`` exists, compared case-insensitively (macOS, Windows)."""
        with self._lock:
            key = name_key(slug)
            if any(_dir_of(p) == directory for p in self._by_stem.get(key)):
                return True
            if key in self._problem_names.get(directory, ()):
                return True
        full = self.layout.root / directory / f"{slug}.md"
        return full.exists()

    def written_since(self, day: dt.date) -> int:
        """Notes created on ``day`` or later (a clock that jumps back still counts them)."""
        key = day.isoformat()
        with self._lock:
            return sum(n for d, n in self._days.items() if d >= key)

    # -- the cache --------------------------------------------------------------------------
    def save_cache(self, *, unless_saved: bool = False) -> None:
        """Write the cache; with ``unless_saved``, only when a change since the last read or write
        is not in it, or the file is gone (the state directory deleted while the vault was open)."""
        with self._lock:  # the holders of ids first: the next scan adds them first (see scan)
            if unless_saved and not self._unsaved and self._cache_file.exists():
                return
            holders = set(self._by_id.values())
            entries = sorted(self._by_path.values(), key=lambda e: e.path not in holders)
            self._unsaved = False
            self._gone.save()
        save_entries(self._cache_file, entries)
        if self.pulled is not None:
            self.pulled.remember()


def _source_key(kind: str, value: str | None) -> str | None:
    return f"{kind}:{value}" if value else None


def _source_keys(entry: Entry) -> Iterator[str]:
    for key in (_source_key("id", entry.source_id), _source_key("url", entry.source_url)):
        if key:
            yield key


def _same_id(path: str, other: str) -> str:
    return f"{path}: has the same id as {other}; give one of them a new id or delete the copy"


def _stem(rel: str) -> str:
    return rel.rsplit("/", 1)[-1].removesuffix(".md")
