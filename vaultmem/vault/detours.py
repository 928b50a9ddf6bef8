"""The fast-forwards that took this vault off its own first-parent line, for ``as_of``.

``as_of`` reads the vault's main line, the first-parent chain of ``HEAD`` (docs/architecture.md,
"Time travel"). When another machine merged this vault's pushed commits into its own (the merge's
first parent is the other machine's commit) and this vault's next round fast-forwards to that merge,
the first-parent chain of ``HEAD`` runs through the other machine's commits: this vault's own
commits since the last meeting would drop out of its past, and a moment before the fast-forward
would read the other machine's memory. A round records each such fast-forward here, ``old new
time`` a line in ``<git dir>/vaultmem-detours``, and the main line goes from ``new`` to ``old``
instead of to ``new``'s first parent (:func:`vaultmem.sync.mainline.main_line`). A fast-forward
whose first-parent chain passes through the old ``HEAD`` needs no record.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from vaultmem.vault.history import GitRepo

__all__ = ["DETOURS", "Detour", "detours", "on_first_parent_line", "record_detour"]

DETOURS = "vaultmem-detours"
_LINE = re.compile(r"([0-9a-f]{40,64}) ([0-9a-f]{40,64}) (\d+)")


@dataclass(frozen=True)
class Detour:
    """HEAD went from ``old`` to ``new`` by a fast-forward at ``time`` (seconds since the epoch)."""

    old: str
    new: str
    time: int


def on_first_parent_line(repo: GitRepo, commit: str, tip: str) -> bool:
    """Whether ``commit`` is on the first-parent chain of ``tip`` (only the commits between read)."""
    if commit == tip:
        return True
    above = repo.git("rev-list", "--first-parent", "--parents", tip, f"^{commit}", "--").split("\n")
    oldest = [line for line in above if line.strip()][-1:]
    return bool(oldest) and oldest[0].split()[1:2] == [commit]


def record_detour(repo: GitRepo, old: str, new: str, time: int) -> None:
    """Record the fast-forward ``old`` -> ``new`` when ``new``'s first-parent chain skips ``old``."""
    if on_first_parent_line(repo, old, new):
        return
    with open(repo.git_dir / DETOURS, "a", encoding="ascii") as handle:
        handle.write(f"{old} {new} {time}\n")
        handle.flush()
        os.fsync(handle.fileno())


def detours(git_dir: Path) -> list[Detour]:
    """The recorded fast-forwards, oldest first (a torn or foreign line is skipped)."""
    try:
        text = (git_dir / DETOURS).read_text(encoding="ascii", errors="replace")
    except OSError:
        return []
    found = (_LINE.fullmatch(line.strip()) for line in text.splitlines())
    return [Detour(m[1], m[2], int(m[3])) for m in found if m]
