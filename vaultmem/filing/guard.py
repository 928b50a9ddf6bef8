"""The secret guard on every agent write: whatever the tool, each plan is checked once, in the writer.

:class:`PlanGuard` is handed every plan (:class:`~vaultmem.vault.writer.VaultWriter` calls it after
the decision and before a byte is staged). For each file the plan writes it scans what the write
*adds*: every frontmatter value that changed (title, tags, source, instructions, project, a delete
reason, url links, ...) and the body when it changed. A secret the file already held (a person's
hand edit, which health and doctor report) is not the write's and is left alone: the person's file
is theirs. So one check covers ``memory_append`` and ``memory_capture``, ``memory_store``'s create,
update and bulk_create, reflect, merge, clusters, compaction, projects and slots alike.

``refuse`` (the contract's default): :class:`~vaultmem.filing.secrets.SecretFound`, nothing staged,
every file as it was. ``redact``: the plan's texts with each new secret replaced by its marker
(``[REDACTED:<kind>]``; a tag holding one is dropped), reported to the caller
(:func:`vaultmem.caller.record_redactions`) so the tool's answer says so. A secret where no marker
can stand is refused in both modes: in a project name (it names a folder) and in a side file that
is not Markdown (``project.yaml``). The guard reads only: content is data, never an instruction.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vaultmem.caller import record_redactions
from vaultmem.filing.secrets import Finding, SecretFound, SecretsMode, find_secrets, redact
from vaultmem.notes import frontmatter as fm
from vaultmem.vault.plan import FileWrite
from vaultmem.vault.reading import read_regular

#: Keys vaultmem fills itself with ids, times and numbers: never an agent's text.
GENERATED_KEYS = frozenset(
    {"id", "created", "updated", "deleted_at", "importance", "occurrences", "link_created"}
)
#: Where a marker cannot stand in for a secret: the value names a folder.
UNREDACTABLE_KEYS = frozenset({"project"})


@dataclass(frozen=True)
class _Value:
    """One text of a file: where it sits (its frontmatter key and path inside the value) and it."""

    field: str
    key: str | None  # None: the body
    path: tuple[str | int, ...]
    text: str


@dataclass(frozen=True)
class _Found:
    value: _Value
    findings: list[Finding]


class PlanGuard:
    """Checks the files of each plan for secrets the write adds (see the module's docstring)."""

    def __init__(self, root: Path, mode: Callable[[], SecretsMode]) -> None:
        self.root = root
        self.mode = mode

    def warm_in_background(self) -> threading.Thread:
        """Load the detector (detect-secrets' plugins, ~0.2 s) on a thread, so a long-running
        process's first write does not wait for it; a one-shot command loads it when it writes."""
        thread = threading.Thread(target=find_secrets, args=("warm up",), name="vaultmem-secrets-warmup")
        thread.start()
        return thread

    def check(self, writes: list[FileWrite]) -> list[FileWrite]:
        """``writes`` as they may be written: unchanged when clean, redacted in ``redact`` mode;
        SecretFound (nothing written) in ``refuse`` mode or where no marker can stand."""
        found = {id(w): hits for w in writes if (hits := list(self._added_secrets(w)))}
        if not found:
            return writes
        mode = self.mode()
        several = len(writes) > 1
        blocked = [
            f
            for w in writes
            for hit in found.get(id(w), [])
            for f in _named(hit.findings, w, several)
            if mode == "refuse" or not _redactable(w, hit.value)
        ]
        if blocked:
            raise SecretFound(blocked)
        report: list[dict[str, object]] = []
        out: list[FileWrite] = []
        for w in writes:
            in_file = found.get(id(w))
            if in_file is None:
                out.append(w)
                continue
            out.append(dataclasses.replace(w, text=_redacted(w.text, in_file)))
            report += [{**f.to_dict(), "path": w.rel} for hit in in_file for f in hit.findings]
        record_redactions(report)
        return out

    def _added_secrets(self, write: FileWrite) -> Iterator[_Found]:
        old = "" if write.create else self._old_text(write.rel)
        unchanged: dict[str | None, bool] = {None: old.endswith(write.text.body)}
        for value in _values(write):
            if value.key is not None and value.key not in unchanged:  # lines the file has as they are
                unchanged[value.key] = _entry_text(write.text, value.key) in old
            if unchanged[value.key]:
                continue
            found = find_secrets(value.text, value.field, identifier=value.field == "source.id")
            added = [f for f in found if value.text[f.start : f.end] not in old]  # not the person's
            if added:
                yield _Found(value, added)

    def _old_text(self, rel: str) -> str:
        try:
            return read_regular(self.root / rel).decode("utf-8", "replace")
        except OSError:
            return ""


def _values(write: FileWrite) -> Iterator[_Value]:
    """Every text the file will hold that an agent could have sent: each key's strings (but the
    ones vaultmem generates) and the body."""
    text = write.text
    for entry in text.entries if text.has_frontmatter else ():
        if entry.key is None or entry.key in GENERATED_KEYS or entry.key not in text.meta:
            continue
        yield from _strings(entry.key, entry.key, (), text.meta[entry.key])
    if text.body:
        yield _Value("content" if write.note else "text", None, (), text.body)


def _strings(field: str, key: str, path: tuple[str | int, ...], value: Any) -> Iterator[_Value]:
    if isinstance(value, str):
        yield _Value(field, key, path, value)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(f"{field}.{k}", key, (*path, k), v)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(f"{field}[{i}]", key, (*path, i), v)


def _entry_text(text: fm.NoteText, key: str) -> str:
    return "".join(line for e in text.entries if e.key == key for line in e.lines)


def _redactable(write: FileWrite, value: _Value) -> bool:
    if not write.note:
        return write.rel.endswith(".md")  # a slot; project.yaml's YAML would not survive a marker
    return value.key not in UNREDACTABLE_KEYS


def _named(findings: Sequence[Finding], write: FileWrite, several: bool) -> list[Finding]:
    """Each finding with the note it is in, when the plan writes several (a batch, a merge)."""
    if not several:
        return list(findings)
    title = write.text.meta.get("title") if write.note else None
    label = f'the note "{_clean(title)}"' if isinstance(title, str) and title else write.rel
    return [dataclasses.replace(f, field=f"{label}: {f.field}") for f in findings]


def _clean(text: str) -> str:
    return redact(text, find_secrets(text, "title"))


def _redacted(text: fm.NoteText, hits: list[_Found]) -> fm.NoteText:
    """``text`` with every finding replaced by its marker (a tag holding one dropped)."""
    changes: dict[str, Any] = {}
    for hit in hits:
        value = hit.value
        if value.key is None:
            text = fm.with_body(text, redact(value.text, hit.findings))
            continue
        current = changes.get(value.key, text.meta[value.key])
        changes[value.key] = _put(current, value.path, redact(value.text, hit.findings), value.key == "tags")
    if changes:
        changes = {k: _without_dropped(v) for k, v in changes.items()}
        text = fm.set_fields(text, changes)
    return text


_DROPPED: Any = object()


def _without_dropped(value: Any) -> Any:
    return [v for v in value if v is not _DROPPED] if isinstance(value, list) else value


def _put(value: Any, path: tuple[str | int, ...], new: str, drop: bool) -> Any:
    """A copy of ``value`` with the string at ``path`` replaced by ``new`` (or marked dropped)."""
    if not path:
        return _DROPPED if drop else new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _put(value[head], rest, new, False)}
    copy = list(value)
    copy[head] = _put(copy[head], rest, new, drop and not rest)  # type: ignore[index]
    return copy


__all__ = ["GENERATED_KEYS", "PlanGuard"]
