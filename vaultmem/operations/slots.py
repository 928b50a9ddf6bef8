"""Slots: the small, always-relevant texts an agent reads at the start of a session.

Two slots are *stored*, as Markdown files a person reads and edits in Obsidian:

- ``project_context``: dated summaries, one ``## <UTC time>`` section per ``memory_reflect`` summary;
- ``active_goals``: a Markdown list, one goal per ``- `` line.

The global ones are ``desk/project_context.md`` and ``desk/active_goals.md``; a project's are in its
folder (``desk/projects/<slug>/``), next to its ``project.yaml``. A project's file, when it exists,
wins over the global one. Two more slots are *virtual* (derived, never stored): ``pending_items``
(pending thoughts whose time has come) and ``architecture_decisions`` (the primers, most-hit first).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vaultmem.filing.contract import Contract
from vaultmem.filing.projects import Project
from vaultmem.vault.layout import DESK_DIR, in_home

PROJECT_CONTEXT = "project_context"
ACTIVE_GOALS = "active_goals"
STORED_SLOTS = (PROJECT_CONTEXT, ACTIVE_GOALS)
PENDING_ITEMS = "pending_items"
ARCHITECTURE_DECISIONS = "architecture_decisions"
_TITLES = {PROJECT_CONTEXT: "Project context", ACTIVE_GOALS: "Active goals"}
_GOAL = re.compile(r"^\s*[-*+]\s+(?:\[[ xX]\]\s+)?(?P<text>.*\S)\s*$")


@dataclass(frozen=True)
class SlotFile:
    """Where a stored slot lives: its vault path, and the project it belongs to (None = global)."""

    name: str
    rel: str
    project: Project | None

    @property
    def scope(self) -> str:
        return "project" if self.project is not None else "global"


def slot_file(name: str, contract: Contract, project: Project | None) -> SlotFile:
    folder = (
        f"{contract.projects_desk}/{project.slug}"
        if project is not None
        else in_home(contract.home, DESK_DIR)
    )
    return SlotFile(name, f"{folder}/{name}.md", project)


def new_slot_text(slot: SlotFile) -> str:
    """The text of a slot file that does not exist yet: a heading saying what it is."""
    title = _TITLES[slot.name]
    whose = f": {slot.project.name}" if slot.project is not None else " (every project)"
    return f"# {title}{whose}\n"


def append_summary(text: str, stamp: str, summary: str) -> str:
    """``text`` with a ``## <stamp>`` section holding ``summary`` appended."""
    base = text if text.endswith("\n") or not text else text + "\n"
    return f"{base}\n## {stamp}\n\n{summary.strip()}\n"


def goals_of(text: str) -> list[str]:
    """The goals a slot file lists (its ``- `` lines), in order."""
    return [m.group("text") for line in text.splitlines() if (m := _GOAL.match(line))]


def add_goals(text: str, goals: list[str]) -> tuple[str, int]:
    """``text`` with each goal not already listed (case-insensitively) appended; and how many were."""
    present = {g.casefold() for g in goals_of(text)}
    out = text if text.endswith("\n") or not text else text + "\n"
    if not goals_of(text) and out and not out.endswith("\n\n"):
        out += "\n"
    added = 0
    for goal in goals:
        line = " ".join(goal.split())
        if line and line.casefold() not in present:
            out += f"- {line}\n"
            present.add(line.casefold())
            added += 1
    return out, added


def remove_goals(text: str, needles: list[str]) -> tuple[str, int]:
    """``text`` without the goal lines that contain any needle (case-insensitive substring)."""
    wanted = [n.strip().casefold() for n in needles if n.strip()]
    kept: list[str] = []
    removed = 0
    for line in text.splitlines(keepends=True):
        match = _GOAL.match(line.rstrip("\r\n"))
        if match and any(n in match.group("text").casefold() for n in wanted):
            removed += 1
            continue
        kept.append(line)
    return "".join(kept), removed
