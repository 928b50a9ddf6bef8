"""A memory's history, read from git: its versions (``memory_recall action=history``, ``vaultmem
log``) and who wrote each of its lines and frontmatter keys (``vaultmem blame``).

A version is one commit that changed the note's file, renames followed: ``{commit, at, author,
action, summary}``, newest first. ``action`` says what happened to the note, read from the file
itself so that a hand edit and a grouped commit are described like any other: ``create`` (the
file appears), ``update``, ``rename``, ``forget`` (its status became ``deleted``), ``archive``,
``supersede``, ``restore`` (back to live from one of those) and ``remove`` (the file was deleted).
``summary`` is the commit's subject (for a commit grouping several writes, the line naming this
note). The text at one version is the file as that commit recorded it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from vaultmem.errors import InvalidInput, MalformedNote, NotFound
from vaultmem.notes import frontmatter as fm
from vaultmem.operations.context import Context
from vaultmem.operations.results import Answer, Json, Row
from vaultmem.vault.entry import Entry
from vaultmem.vault.history import BlameLine, Version

#: The most versions one answer lists (page with offset).
MAX_VERSIONS = 100
DEFAULT_VERSIONS = 20
#: The shortest commit prefix a ``version`` argument may be.
MIN_COMMIT_PREFIX = 7
_ENDS = {"deleted": "forget", "archived": "archive", "superseded": "supersede"}
_UNCOMMITTED = "0" * 40


@dataclass
class NoteVersion:
    """One version of a note, with the text the commit recorded (None for a removal)."""

    version: Version
    text: str | None
    status: str | None
    action: str = "update"

    def row(self, summary: str) -> Row:
        v = self.version
        return {"commit": v.commit, "at": v.at, "author": v.author, "action": self.action, "summary": summary}


@dataclass
class Blame:
    """Who last wrote each line of a note and each of its frontmatter keys."""

    id: str
    path: str
    lines: list[Row] = field(default_factory=list)
    keys: dict[str, Row] = field(default_factory=dict)


class History:
    """Reading a note's history through the vault's repository."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def _entry(self, note_id: Json) -> Entry:
        # The history is the audit trail: a forgotten note's is read like any other (its forget
        # is its last version).
        return self.ctx.lookup.require(note_id, forgotten_ok=True)

    def versions(self, entry: Entry) -> list[NoteVersion]:
        """Every version of the note, newest first, each with its text and what happened in it."""
        found = self.ctx.repo.versions(entry.path)
        blobs = self.ctx.repo.blobs([v.blob for v in found if v.blob])
        texts = iter(blobs)
        out = [NoteVersion(v, _decode(next(texts)) if v.blob else None, None) for v in found]
        for item in out:
            item.status = _status(item.text)
        for older, newer in zip([*out[1:], None], out, strict=True):
            newer.action = _action(older, newer)
        return out

    def answer(
        self, thought_id: Json, version: Json, limit: Json, offset: Json, *, diff: bool = False
    ) -> Answer:
        """``memory_recall action=history``: the versions, a page at a time; ``version``: that one,
        with its text. With ``diff`` (``vaultmem log --diff``) each row has its change as a diff."""
        entry = self._entry(thought_id)
        size = _whole("limit", limit, DEFAULT_VERSIONS, 1, MAX_VERSIONS)
        skip = _whole("offset", offset, 0, 0, None)
        every = self.versions(entry)
        if version is not None:
            chosen = _chosen(every, version, entry)
            row = chosen.row(self._summary(chosen.version, entry))
            row["text"] = chosen.text
            return Answer.many("history", [row], total=1)
        page = every[skip : skip + size]
        rows: list[Row] = []
        for i, item in enumerate(page, start=skip):
            row = item.row(self._summary(item.version, entry))
            if diff:
                before = every[i + 1] if i + 1 < len(every) else None
                row["diff"] = _diff(before, item)
            rows.append(row)
        answer = Answer.many(
            "history", rows, total=len(every), filtered_out=len(every) - len(rows), limit=size, offset=skip
        )
        return answer

    def blame(self, note_id: Json) -> Blame:
        """Who last wrote each line of the note as it is on disk, and each frontmatter key (the
        last to change any of the key's lines)."""
        entry = self._entry(note_id)
        lines = self.ctx.repo.blame(entry.path)
        out = Blame(self.ctx.lookup.id_of(entry), entry.path)
        for number, line in enumerate(lines, start=1):
            out.lines.append({"line": number, **_who(line), "text": line.text})
        try:
            text = fm.parse("".join(f"{line.text}\n" for line in lines), source=entry.path)
        except MalformedNote:
            return out
        number = 1 + (1 if text.has_frontmatter else 0)
        for key_entry in text.entries if text.has_frontmatter else []:
            span = lines[number - 1 : number - 1 + len(key_entry.lines)]
            number += len(key_entry.lines)
            if key_entry.key is not None and span:
                out.keys[key_entry.key] = _who(max(span, key=lambda b: (b.commit == _UNCOMMITTED, b.at)))
        return out

    def _summary(self, version: Version, entry: Entry) -> str:
        """The commit's subject, or in a commit of several writes the line naming this note."""
        if not version.subject.startswith("vaultmem: ") or " writes: " not in version.subject:
            return version.subject
        stem = version.path.rsplit("/", 1)[-1].removesuffix(".md")
        for line in version.message.splitlines()[1:]:
            if line.startswith("- ") and (f" {stem}" in line or line.endswith(stem)):
                return line[2:]
        return version.subject


def _decode(data: bytes | None) -> str | None:
    return data.decode("utf-8", "replace") if data is not None else None


def _status(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        value = fm.parse(text).meta.get("status", "active")
    except MalformedNote:
        return None
    return value if isinstance(value, str) else None


def _action(older: NoteVersion | None, newer: NoteVersion) -> str:
    """What ``newer`` did to the note, against the version before it."""
    change = newer.version.change
    if change == "D":
        return "remove"
    if older is None or change == "A" or older.text is None:
        return "create"
    if newer.status != older.status and newer.status is not None:
        if newer.status in _ENDS:
            return _ENDS[newer.status]
        if older.status in _ENDS:
            return "restore"
    return "rename" if change in "RC" else "update"


def _chosen(every: list[NoteVersion], version: Json, entry: Entry) -> NoteVersion:
    wanted = version.strip().lower() if isinstance(version, str) else ""
    if len(wanted) < MIN_COMMIT_PREFIX or any(c not in "0123456789abcdef" for c in wanted):
        raise InvalidInput(
            f"version must be a commit of the note's history ({MIN_COMMIT_PREFIX}+ hex digits, as "
            "memory_recall action=history lists them)"
        )
    matches = [item for item in every if item.version.commit.startswith(wanted)]
    if len(matches) != 1:
        problem = "is in several commits of" if matches else "is no commit of"
        raise NotFound(
            f"{version} {problem} the history of {entry.path}; list its versions with memory_recall "
            "action=history"
        )
    return matches[0]


def _diff(before: NoteVersion | None, item: NoteVersion) -> str:
    old = (before.text or "") if before is not None else ""
    name_old = f"{before.version.path}@{before.version.commit[:10]}" if before is not None else "/dev/null"
    name_new = f"{item.version.path}@{item.version.commit[:10]}" if item.text is not None else "/dev/null"
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), (item.text or "").splitlines(keepends=True), name_old, name_new
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _who(line: BlameLine) -> Row:
    if line.commit == _UNCOMMITTED:
        return {"commit": None, "author": "(not committed yet)", "at": None}
    return {"commit": line.commit, "author": line.author, "at": line.at}


def _whole(name: str, value: Json, default: int, low: int, high: int | None) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high and value > high):
        upper = f" to {high}" if high else " or more"
        raise InvalidInput(f"{name} must be a whole number from {low}{upper}")
    return value


__all__ = ["Blame", "History", "NoteVersion"]
