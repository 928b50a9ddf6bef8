"""Several note writes as one action: decided together, installed together, one git commit.

The same pipeline as :meth:`VaultService._run` (decide under the locks, stage unlocked, install
under the lock, fsync the folders, tell the listeners before returning), for an action that touches
many files: ``link_batch``, ``bulk_create``, an upgrade that edits both ends of a pair. Every file is
staged (temp file, fsync) before any is renamed into place, so a failure while staging leaves the
vault as it was; the renames then run back to back under the lock, and one commit records them all.

A batch may also write *side files*, vault files that are not notes (a project's ``project.yaml``, the
slot files ``project_context.md`` / ``active_goals.md``): staged and committed the same way, but kept out
of the catalog and the index (``FileWrite.note`` is false).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from vaultmem.errors import VaultmemError
from vaultmem.notes.frontmatter import NoteText
from vaultmem.notes.model import Note
from vaultmem.vault.catalog import file_hash
from vaultmem.vault.history import names_in_subject
from vaultmem.vault.store import StagedWrite, changed_on_disk

if TYPE_CHECKING:
    from vaultmem.service import VaultService

log = logging.getLogger(__name__)
R = TypeVar("R")
#: Files staged in parallel (their fsyncs overlap instead of queuing).
STAGE_THREADS = 16
#: Notes named one per line in a batch commit message before it summarises the rest.
MESSAGE_LINES = 2000


@dataclass
class FileWrite:
    """One file of a batch: its new text, whether it is new, and what happened to it."""

    rel: str
    text: NoteText
    create: bool
    action: str
    #: False for a side file (not a note): committed with the batch, never catalogued or indexed.
    note: bool = True


@dataclass
class Plan(Generic[R]):
    """A decided batch: the files to write and the answer to give once they are written."""

    writes: list[FileWrite]
    result: R


class Draft:
    """The notes a batch edits, as they will be once it is written (edits to one note compose)."""

    def __init__(self, service: VaultService) -> None:
        self.service = service
        self._texts: dict[str, FileWrite] = {}
        self._new_names: set[str] = set()  # lower-cased file names of the notes this batch creates

    def text_of(self, rel: str) -> NoteText:
        pending = self._texts.get(rel)
        if pending is not None:
            return pending.text
        note = self.service.store.read(rel)
        assert note.text is not None
        return note.text

    def edited(self, rel: str) -> NoteText | None:
        pending = self._texts.get(rel)
        return pending.text if pending is not None else None

    def put(self, rel: str, text: NoteText, action: str, *, create: bool = False, note: bool = True) -> None:
        pending = self._texts.get(rel)
        if pending is not None:
            pending.text = text
            return
        self._texts[rel] = FileWrite(rel, text, create, action, note)
        if create:
            self._new_names.add(rel.rsplit("/", 1)[-1].lower())

    def reserved(self, rel: str) -> bool:
        return rel in self._texts

    def reserved_name(self, slug: str) -> bool:
        """A note this batch creates already has the file name ``slug`` (in any folder)."""
        return f"{slug}.md".lower() in self._new_names

    def writes(self) -> list[FileWrite]:
        return list(self._texts.values())


def run_writes(
    service: VaultService,
    decide: Callable[[], Plan[R]],
    *,
    tool: str,
    summary: str,
    keys: Sequence[str] = (),
    wait_commit: bool = False,
    message: Callable[[list[Note], R], str] | None = None,
    subject: Callable[[R], str] | None = None,
) -> tuple[list[Note], R]:
    """Decide, stage, install and commit a batch; return the notes written and the plan's result.

    ``message`` words the commit from the notes written and the plan's result (default: a batch
    message listing every file, whose subject is ``<tool>: <summary>`` and the notes' names, or
    what ``subject`` makes of the plan's result).
    """
    service.process_lock.acquire()
    held: list[str] = []
    done = threading.Event()
    try:
        service._catch_up()
        while True:
            with service.lock:
                busy = next((service._inflight[k] for k in keys if k in service._inflight), None)
                if busy is None:
                    with service.store.recording() as read:
                        plan = decide()
                    if not plan.writes:
                        return [], plan.result
                    paths = [f"path:{w.rel}" for w in plan.writes]
                    busy = next((service._inflight[k] for k in paths if k in service._inflight), None)
                    if busy is None:
                        held = [*keys, *paths]
                        for k in held:
                            service._inflight[k] = done
                        break
            busy.wait(timeout=service.settings.write_lock_timeout)
        staged = [StagedWrite(service.store, w.rel, w.text) for w in plan.writes]
        try:
            _stage_all(staged)
            with service.lock:
                _check_unchanged(service, plan.writes, read)
                notes, side = _install_all(service, staged, plan.writes, read)
                service._bump_generation()
                text = (
                    message(notes, plan.result)
                    if message is not None and notes and not side
                    else batch_message(
                        tool, summary, notes, plan, side, subject(plan.result) if subject else None
                    )
                )
                future = service.commits.submit([*(n.path for n in notes), *side], text)
        except BaseException:
            for s in staged:
                s.discard()
            raise
        finally:
            with service.lock:
                for k in held:
                    service._inflight.pop(k, None)
                done.set()
    finally:
        service.process_lock.release()
    for directory in {s.path.parent: s for s in staged}.values():
        directory.sync_directory()
    _tell_listeners(service, notes)
    if wait_commit:
        future.result(timeout=120)
    return notes, plan.result


def _check_unchanged(service: VaultService, writes: list[FileWrite], read: dict[str, str]) -> None:
    """Refuse the batch if a file it replaces changed since the decision read it (call under the
    write lock, just before the renames).

    A person's save landing while the new version was being staged would otherwise be overwritten:
    the write read the note, built its new text from it and replaces the file a few milliseconds
    later. Nothing is written then, and the error says to run the call again (it will read the
    new text). Each ``StagedWrite.install`` checks its file through the descriptor it keeps across
    its rename; a batch of several is also checked here first, so that a change to its last file
    cannot leave the first ones renamed (a partial batch).
    """
    replaced = [w for w in writes if not w.create and w.rel in read]
    if len(replaced) < 2:  # one file: StagedWrite.install checks it, nothing else to keep whole
        return
    changed = [w.rel for w in replaced if file_hash(service.store.layout.root / w.rel) != read[w.rel]]
    if changed:
        raise changed_on_disk(changed[0], len(changed) - 1)


def _stage_all(staged: list[StagedWrite]) -> None:
    if len(staged) <= 2:
        for s in staged:
            s.stage()
        return
    with ThreadPoolExecutor(max_workers=min(STAGE_THREADS, len(staged))) as pool:
        for future in [pool.submit(s.stage) for s in staged]:
            future.result()


def _install_all(
    service: VaultService, staged: list[StagedWrite], writes: list[FileWrite], read: dict[str, str]
) -> tuple[list[Note], list[str]]:
    """Rename every staged file into place; return the notes written and the side files' paths."""
    notes: list[Note] = []
    side: list[str] = []
    try:
        for s, w in zip(staged, writes, strict=True):
            note = s.install(create=w.create, parsed=w.text, expected=read.get(w.rel))
            if w.note:
                service.catalog.put(note)
                notes.append(note)
            else:
                side.append(w.rel)
    except VaultmemError:
        # A file appeared where a new note was going (written by hand meanwhile): the ones already
        # renamed are real files on disk, so they are kept and committed; the rest are not written.
        done = [*(n.path for n in notes), *side]
        if done:
            names = names_in_subject([*(n.slug for n in notes), *side])
            service.commits.submit(done, f"vaultmem: partial batch of {len(done)} files: {names}")
        raise
    return notes, side


def _tell_listeners(service: VaultService, notes: list[Note]) -> None:
    for listener in service.listeners:
        many: Any = getattr(listener, "notes_written", None)
        try:
            if many is not None:
                many(notes)
            else:
                for note in notes:
                    listener.note_written(note)
        except VaultmemError as exc:  # the notes are safe on disk; the index catches up later
            log.warning("index update failed for a batch of %d notes: %s", len(notes), exc)


def batch_message(
    tool: str,
    summary: str,
    notes: list[Note],
    plan: Plan[Any],
    side: Sequence[str] = (),
    subject: str | None = None,
) -> str:
    """A commit message naming the tool, the action and every file written (notes: id, slug, path).

    The subject names the notes too (``memory_store: create espresso-ratio``; several:
    ``memory_store: bulk_create 5 thoughts: a, b, c and 2 more``), so ``git log --oneline`` reads
    as an audit trail; ``subject`` replaces it when the caller can say more (a link's two ends).
    """
    actions = {w.rel: w.action for w in plan.writes}
    lines = [f"- {actions.get(rel, 'edit')} {rel}" for rel in side]
    lines += [
        f"- {actions.get(n.path, 'edit')} {n.slug} id={n.id} path={n.path}" for n in notes[:MESSAGE_LINES]
    ]
    if len(notes) > MESSAGE_LINES:
        lines.append(f"- ... and {len(notes) - MESSAGE_LINES} more")
    body = "\n".join(lines)
    if subject is None:
        names = [n.slug for n in notes] or list(side)  # side files named when no note was written
        subject = f"{tool}: {summary}" + (
            f" {names[0]}" if len(names) == 1 else f": {names_in_subject(names)}" if names else ""
        )
    return f"{subject}\n\ntool: {tool}\nfiles: {len(notes) + len(side)}\n\n{body}\n"
