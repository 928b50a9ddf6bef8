"""``vaultmem doctor``: is the vault, its index and its git history consistent? Reads only."""

from __future__ import annotations

import contextlib
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from vaultmem.config import CONFIG_FILE, CONTRACT_FILE, Settings, find_homes
from vaultmem.errors import IndexError_, VaultError
from vaultmem.notes.links import EDGE_TYPES, names_a_file
from vaultmem.notes.merge import CONFLICT_TAG
from vaultmem.operations.note_facts import FactCache, NoteFacts, facts_of
from vaultmem.vault.catalog import Catalog
from vaultmem.vault.entry import Entry
from vaultmem.vault.gitlock import GitLockInfo as GitLockInfo  # (the facade re-exports it)
from vaultmem.vault.history import GitRepo
from vaultmem.vault.layout import VaultLayout, is_committed_at_start, is_conflict_copy, is_never_committed
from vaultmem.vault.note_files import MAX_NOTE_BYTES
from vaultmem.vault.reading import file_hash, shown
from vaultmem.vault.sizes import BigFile, size_above

if TYPE_CHECKING:
    from vaultmem.index.note_index import NoteIndex


#: A file a sync merge wrote for the side of a file that is not a note (``notes/merge.conflict_path``).
_SIDE_FILE = re.compile(r"\.conflict-[0-9a-f]{8}(\.[^./]+)?$")


def side_files(repo: GitRepo, notes: set[str]) -> list[str]:
    """The tracked files a sync merge wrote for the side of a setting, a project.yaml, a slot (not
    a note: those are conflict notes) that it could not keep: ``filing.conflict-1a2b3c4d.yaml``."""
    try:
        listed = repo.git(  # a glob pathspec: vaultmem's git takes paths literally otherwise
            "ls-files", "-z", "--", ":(glob)**/*.conflict-*",
            env={"GIT_LITERAL_PATHSPECS": "0"}, errors="surrogateescape",
        )  # fmt: skip
    except (VaultError, OSError):
        return []
    return sorted(p for p in listed.split("\0") if p and p not in notes and _SIDE_FILE.search(p))


class Layout(TypedDict):
    """How a vault is laid out (:func:`explain_layout`): where vaultmem's files are, what is the person's."""

    kind: str  # "in place", "vaultmem's own" or "not a vault yet"
    home: str
    claimed_by: list[str]  # the folders whose vaultmem.yaml says they are vaultmem's
    contract: str
    state_dir: str
    person_notes: int
    vaultmem_notes: int
    explanation: str


#: Below this much free space under the state directory, doctor warns that index writes may fail.
LOW_SPACE_MIB = 64.0


@dataclass
class DoctorReport:
    notes: int = 0
    malformed: dict[str, str] = field(default_factory=dict)
    #: Files named like notes that are never read: a name that is not UTF-8, a pipe, a socket.
    skipped: dict[str, str] = field(default_factory=dict)
    conflict_copies: list[str] = field(default_factory=list)
    #: Conflict notes a sync merge wrote (one machine's side of a note both changed in the same
    #: lines, tagged ``sync-conflict``), still live: for the person to merge and then forget.
    conflict_notes: list[str] = field(default_factory=list)
    dangling_links: list[dict[str, str]] = field(default_factory=list)
    #: Links in a note's body that no note answers to: ``{path, target}``. Listed, not counted
    #: against ``ok``: in Obsidian an unresolved link is a note not written yet, a person's idiom.
    dangling_text_links: list[dict[str, str]] = field(default_factory=list)
    #: The person's notes whose properties YAML cannot read (``{path: why}``): searched as plain
    #: text. Listed, not counted against ``ok``: Obsidian flags them too, and they are the person's.
    unreadable_properties: dict[str, str] = field(default_factory=dict)
    #: The person's notes over the size cap, 2 MiB (a pasted log, a drawing saved uncompressed):
    #: searched and linked by their start, the first ``MAX_NOTE_BYTES``. Listed, not counted against ``ok``.
    read_in_part: list[str] = field(default_factory=list)
    #: How the vault is laid out: where vaultmem's files are, what is the person's (see explain_layout).
    layout: Layout | None = None
    #: Whether the state directory holds a search index (``vaultmem reindex`` builds one).
    index_exists: bool = False
    index_rows: int = 0
    index_missing: list[str] = field(default_factory=list)
    index_stale: list[str] = field(default_factory=list)
    index_extra: list[str] = field(default_factory=list)
    index_needs_rebuild: bool = False
    #: Why the index's tables cannot be read (``vaultmem doctor`` reads them), None when they can.
    index_unreadable: str | None = None
    uncommitted: list[str] = field(default_factory=list)
    #: Notes whose secrets and property links were not looked at, the time budget spent (health).
    unchecked: int = 0
    #: Changes in hidden folders (``.obsidian/``: Obsidian's settings, its plugins' data) that
    #: vaultmem commits when it next starts, never as they happen. Listed, not counted against ``ok``.
    committed_at_start: list[str] = field(default_factory=list)
    #: Files above ``max_commit_file_mb`` that are not notes (a video, a disk image): vaultmem never
    #: commits them, so they reach no other machine through git; listed with their size, counted
    #: against ``ok`` until the person adds them to ``.gitignore`` or raises the limit.
    too_big_to_commit: list[str] = field(default_factory=list)
    #: The notes above that limit: committed all the same, each change adding up to its size to
    #: ``.git``. A warning, not counted against ``ok``.
    big_notes: list[str] = field(default_factory=list)
    #: What the person's git is in the middle of (a rebase, a detached HEAD...), when it is: vaultmem
    #: commits nothing meanwhile (``GitRepo.operation_in_progress``).
    git_operation: str | None = None
    #: Free space on the state directory's disk, MiB (an index write fails when it runs out).
    state_free_mib: float | None = None
    #: git's lock files now (``index.lock``, ...): ``{path, age_s, held, stale}`` each.
    git_locks: list[GitLockInfo] = field(default_factory=list)
    #: What looks like a secret in a note (a hand edit: agents' writes are guarded), where, never
    #: what: ``{path, kind, field, line}``. Reported only; the person's file is not rewritten.
    secrets: list[dict[str, str | int]] = field(default_factory=list)

    @property
    def stale_git_locks(self) -> list[GitLockInfo]:
        """Locks no process holds, older than the lock timeout: left by a git killed mid-commit."""
        return [lock for lock in self.git_locks if lock["stale"]]

    @property
    def ok(self) -> bool:
        return not (
            self.malformed or self.skipped or self.conflict_copies or self.conflict_notes
            or self.dangling_links
            or self.index_missing or self.index_stale or self.index_extra or self.index_needs_rebuild
            or self.index_unreadable
            or self.uncommitted or self.too_big_to_commit or self.git_operation or self.stale_git_locks
            or self.secrets
            or (self.layout is not None and len(self.layout["claimed_by"]) > 1)
        )  # fmt: skip

    def size_sections(self) -> list[tuple[str, list[str]]]:
        """The doctor's sections on files above ``max_commit_file_mb`` (titled with what to do)."""
        return [
            (
                "too big for git, so not committed by vaultmem (add them to .gitignore, or raise "
                "max_commit_file_mb in vaultmem.yaml)",
                self.too_big_to_commit,
            ),
            (
                "warning: notes above max_commit_file_mb, committed all the same (every note is): each "
                "change adds up to its size to .git; split them, or add a tool's log to .gitignore",
                self.big_notes,
            ),
        ]

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, **asdict(self)}


def diagnose(
    layout: VaultLayout,
    catalog: Catalog,
    index: NoteIndex | None,
    repo: GitRepo,
    facts: FactCache | None = None,
    budget_s: float | None = None,
    progress: Callable[[int, int, int], None] | None = None,
) -> DoctorReport:
    """The report; each note's file is hashed, and parsed only when ``facts`` does not know it.

    With ``budget_s``, notes ``facts`` does not know are read only while that many seconds last;
    the rest are counted in ``unchecked`` (their secrets and property links not looked at), and
    the next call goes on from the cache: at 100k notes reading all of them takes ~50 s, more
    than an MCP client waits for one tool call (memory_status health). ``progress(done, total,
    read)`` is told every 500 notes and at the end (``vaultmem doctor``'s bar)."""
    deadline = None if budget_s is None else time.monotonic() + budget_s
    report = DoctorReport()
    seen: dict[tuple[str, str], NoteFacts] = {}
    entries = list(catalog.entries())
    report.notes = len(entries)
    report.malformed = dict(catalog.problems)
    report.skipped = dict(catalog.skipped)
    # Listed for the person to merge by hand (memory_status's health check can report the same list).
    paths = {e.path for e in entries} | set(catalog.problems)
    report.conflict_notes = sorted(
        e.path for e in entries if CONFLICT_TAG in e.tags and e.status != "deleted"
    )  # a sync merge's: the person merges it, then forgets it
    report.conflict_copies = sorted(
        {p for p in paths if is_conflict_copy(p, layout.root) and p not in report.conflict_notes}
        | set(side_files(repo, paths))  # a setting's side: merged by hand like a sync client's copy
    )
    report.layout = explain_layout(layout, entries)
    report.read_in_part = sorted(e.path for e in entries if e.size > MAX_NOTE_BYTES)
    in_properties: set[tuple[str, str]] = set()
    read = 0
    for done, entry in enumerate(entries):
        if progress is not None and done % 500 == 0 and done:
            progress(done, len(entries), read)
        # By the file's bytes now, not the catalog's hash: the catalog trusts mtime and size, and a
        # secret pasted under a restored mtime must still be found (hashing is cheap, parsing not).
        current = file_hash(layout.root / entry.path)
        known = facts.get((entry.path, current)) if facts is not None and current is not None else None
        if known is None and deadline is not None and time.monotonic() > deadline:
            report.unchecked += 1  # read at a later call
            continue
        if known is None or current is None:
            known, current = facts_of(layout, entry)
            read += 1
        found = seen[(entry.path, current)] = known
        report.secrets += [{"path": entry.path, **f.to_dict()} for f in found.secrets]
        if found.unreadable_properties is not None:
            report.unreadable_properties[entry.path] = found.unreadable_properties
        persons = not layout.writable(entry.path)
        for key, target, made_for in found.property_links:
            if key not in EDGE_TYPES and target in entry.text_links:
                continue  # a person's property (`up: "[[Roadmap]]"`): judged with the text's links, below
            in_properties.add((entry.path, target))
            if catalog.resolve_link(target, source=entry.path, recorded=made_for) is not None:
                continue
            if persons and made_for is None:  # the person's `related: "[[Plan]]"`: a note not written yet
                if not names_a_file(target):
                    report.dangling_text_links.append({"path": entry.path, "target": target})
            else:
                report.dangling_links.append({"path": entry.path, "property": key, "target": target})
        for target in entry.text_links:
            if (entry.path, target) in in_properties:
                continue  # a person's property: reported above, with its property
            if catalog.resolve_link(target, source=entry.path) is None and not names_a_file(target):
                report.dangling_text_links.append({"path": entry.path, "target": target})
    if progress is not None:
        progress(len(entries), len(entries), read)
    if index is not None:
        report.index_exists = True
        hashes = index.path_hashes()
        report.index_rows = len(hashes)
        report.index_needs_rebuild = index.needs_rebuild()
        wanted = {e.path: e.content_hash for e in entries}
        report.index_missing = sorted(p for p in wanted if p not in hashes)
        report.index_stale = sorted(p for p, h in wanted.items() if p in hashes and hashes[p] != h)
        report.index_extra = sorted(p for p in hashes if p not in wanted)
    if facts is not None:  # keep what this vault holds now, nothing older
        facts.keep(seen)
        facts.save()
    # (not an editor's lock, autosave or backup file, nor the trash: vaultmem never commits those)
    pending = [p for p in repo.pending_changes() if not is_never_committed(p)]
    left_out, notes = big_files(layout, repo.size_limit, pending)
    report.too_big_to_commit, report.big_notes = [str(b) for b in left_out], [str(b) for b in notes]
    pending = [p for p in pending if p not in {b.path for b in left_out}]
    report.uncommitted = sorted({shown(p) for p in pending if not is_committed_at_start(p)})
    report.committed_at_start = sorted({shown(p) for p in pending if is_committed_at_start(p)})
    report.git_operation = repo.operation_in_progress()
    report.git_locks = [lock.to_dict(repo.lock_timeout) for lock in repo.locks()]
    with contextlib.suppress(OSError):
        report.state_free_mib = round(shutil.disk_usage(layout.state_dir).free / 2**20, 1)
    return report


def diagnose_vault(
    settings: Settings, progress: Callable[[int, int, int], None] | None = None
) -> DoctorReport:
    """:func:`diagnose` the vault ``settings`` name, opening its index only if one exists."""
    layout = VaultLayout(settings.vault, settings.state_dir, settings.home)
    repo = GitRepo(layout.root, lock_timeout=settings.git_lock_timeout, size_limit=settings.size_limit)
    if not layout.root.is_dir() or not repo.is_repo():
        raise VaultError(f"no vault at {layout.root}; create one with `vaultmem init {layout.root}`")
    catalog = Catalog.of_repo(layout, repo)
    catalog.scan()
    from vaultmem.index.opening import open_existing_index

    try:
        index = open_existing_index(settings)
    except IndexError_ as exc:  # reported, not raised: doctor reads only (the next open rebuilds it)
        report = diagnose(layout, catalog, None, repo, FactCache(layout.state_dir), progress=progress)
        report.index_exists, report.index_unreadable = True, str(exc)
        return report
    try:
        report = diagnose(layout, catalog, index, repo, FactCache(layout.state_dir), progress=progress)
        if index is not None:  # its tables too, which an index opened from its snapshot has not read
            report.index_unreadable = index.probe()
        return report
    finally:
        if index is not None:
            index.close()


def big_files(layout: VaultLayout, limit: int, pending: list[str]) -> tuple[list[BigFile], list[BigFile]]:
    """Of the changes git sees (``pending``), the files vaultmem leaves out of git for their size
    (above ``limit`` bytes, not notes), and the notes above it (committed all the same)."""
    if limit <= 0:
        return [], []
    left_out = [
        BigFile(rel, size)
        for rel in sorted(pending)
        if not rel.endswith(".md") and (size := size_above(layout.root / rel, limit)) is not None
    ]
    notes = [BigFile(rel, st.st_size) for rel, st in layout.iter_note_paths() if st.st_size > limit]
    return left_out, notes


def big_file_lines(settings: Settings) -> list[str]:
    """What ``vaultmem init`` says of the vault's files above ``max_commit_file_mb`` (:func:`big_files`):
    each file it did not commit, with what to do, and each note it committed though big."""
    layout = VaultLayout(settings.vault, settings.state_dir, settings.home)
    repo = GitRepo(layout.root, lock_timeout=settings.git_lock_timeout)
    pending = [p for p in repo.pending_changes() if not is_never_committed(p)]
    left_out, notes = big_files(layout, settings.size_limit, pending)
    config = layout.root / layout.home / CONFIG_FILE
    return [
        *(f"not committed: {b} is above max_commit_file_mb ({settings.max_commit_file_mb:g} MiB): add it "
          f"to .gitignore, or raise max_commit_file_mb in {config}" for b in left_out),
        *(f"warning: the note {b} is above max_commit_file_mb ({settings.max_commit_file_mb:g} MiB): "
          "committed all the same, as every note is; each change of it adds up to its size to .git"
          for b in notes),
    ]  # fmt: skip


def explain_layout(layout: VaultLayout, entries: list[Entry]) -> Layout:
    """Where vaultmem's files are in this vault, what is the person's, and one paragraph saying so."""
    root = layout.root
    claimed = find_homes(root)
    home = layout.home
    contract = root / home / CONTRACT_FILE
    theirs = sum(1 for e in entries if not layout.writable(e.path))
    names = [f"{h}/{CONFIG_FILE}" if h else "(the root)" for h in claimed]
    if len(claimed) > 1:
        explanation = (
            f"{len(claimed)} folders say they are vaultmem's own ({', '.join(names)}); vaultmem "
            f"uses {home}/. Remove vaultmem.yaml from the folder that is not vaultmem's."
        )
    elif home:
        explanation = (
            f"A vault adopted in place: vaultmem keeps its files in {home}/ (marked by {home}/{CONFIG_FILE}; "
            f"its filing contract {home}/{CONTRACT_FILE} files every agent's note under {home}/). The "
            f"{theirs} notes outside it are the person's: searched, read and linked, never changed."
        )
    elif claimed:
        explanation = (
            "vaultmem's own vault: its class folders, desk/ and filing.yaml are at the root, and every "
            "note in the vault may be written by its tools."
        )
    else:
        explanation = (
            "No vaultmem files here yet (no filing.yaml, no vaultmem.yaml): run `vaultmem init` on this "
            "folder (a folder that already holds notes gets one folder of vaultmem's own, Memory/)."
        )
    return Layout(
        kind="in place" if home else ("vaultmem's own" if claimed else "not a vault yet"),
        home=home,
        claimed_by=names,
        contract=str(contract) if contract.is_file() else "the shipped contract (no filing.yaml here)",
        state_dir=str(layout.state_dir),
        person_notes=theirs,
        vaultmem_notes=len(entries) - theirs,
        explanation=explanation,
    )
