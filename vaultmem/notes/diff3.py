"""Three-way merge of sequences (diff3): what both sides kept, what one side changed, what both did.

Written here on the standard library's ``difflib`` rather than taken from PyPI: the line-based
``merge3`` package is GPL-2.0-or-later (vaultmem is MIT), ``three-merge`` merges characters, not
lines, and ``git merge-file`` needs temp files and a process per call where the note merge must be
a pure function. The algorithm is the classic one: lines that base, ours and theirs all share (the
intersections of the base-ours and base-theirs matching blocks) are *stable*; each stretch between
two stable runs is taken from the side that changed it, or is a *conflict* when both changed it
differently. Both matchings are computed independently, so swapping ours and theirs swaps the
regions' sides and nothing else: a merge that resolves conflicts by a rule that does not depend on
which side is "ours" gives the same result on both machines.
"""

from __future__ import annotations

import difflib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)


@dataclass(frozen=True)
class Region(Generic[T]):
    """One stretch of a three-way merge.

    ``merged`` is the stretch's result when it is stable or changed on one side (or identically on
    both); it is ``None`` for a conflict, where ``ours`` and ``theirs`` both differ from ``base``.
    """

    base: tuple[T, ...]
    ours: tuple[T, ...]
    theirs: tuple[T, ...]
    merged: tuple[T, ...] | None

    @property
    def conflict(self) -> bool:
        return self.merged is None


def _common_prefix(base: Sequence[T], ours: Sequence[T], theirs: Sequence[T]) -> int:
    n = min(len(base), len(ours), len(theirs))
    i = 0
    while i < n and base[i] == ours[i] == theirs[i]:
        i += 1
    return i


def _common_suffix(base: Sequence[T], ours: Sequence[T], theirs: Sequence[T], skip: int) -> int:
    n = min(len(base), len(ours), len(theirs)) - skip
    i = 0
    while i < n and base[-1 - i] == ours[-1 - i] == theirs[-1 - i]:
        i += 1
    return i


def _sync_runs(base: Sequence[T], ours: Sequence[T], theirs: Sequence[T]) -> list[tuple[int, int, int, int]]:
    """Runs ``(base_start, ours_start, theirs_start, length)`` common to all three, in order."""
    in_ours = difflib.SequenceMatcher(None, base, ours, autojunk=False).get_matching_blocks()
    in_theirs = difflib.SequenceMatcher(None, base, theirs, autojunk=False).get_matching_blocks()
    runs: list[tuple[int, int, int, int]] = []
    i = j = 0
    while i < len(in_ours) and j < len(in_theirs):
        a_base, a_at, a_len = in_ours[i]
        b_base, b_at, b_len = in_theirs[j]
        start, end = max(a_base, b_base), min(a_base + a_len, b_base + b_len)
        if start < end:
            runs.append((start, a_at + start - a_base, b_at + start - b_base, end - start))
        if a_base + a_len < b_base + b_len:
            i += 1
        else:
            j += 1
    return runs


def diff3(base: Sequence[T], ours: Sequence[T], theirs: Sequence[T]) -> list[Region[T]]:
    """The regions of a three-way merge of ``base`` into ``ours`` and ``theirs``, in order.

    Concatenating every region's ``merged`` (a conflict's chosen side in its place) gives the
    merged sequence. A stable region lists the shared items once in all three fields.
    """
    head = _common_prefix(base, ours, theirs)
    tail = _common_suffix(base, ours, theirs, head)
    regions: list[Region[T]] = []
    if head:
        shared = tuple(base[:head])
        regions.append(Region(shared, shared, shared, shared))
    b_mid = base[head : len(base) - tail]
    o_mid = ours[head : len(ours) - tail]
    t_mid = theirs[head : len(theirs) - tail]
    bi = oi = ti = 0
    for b_at, o_at, t_at, length in [
        *_sync_runs(b_mid, o_mid, t_mid),
        (len(b_mid), len(o_mid), len(t_mid), 0),
    ]:
        changed = _classify(tuple(b_mid[bi:b_at]), tuple(o_mid[oi:o_at]), tuple(t_mid[ti:t_at]))
        if changed is not None:
            regions.append(changed)
        if length:
            shared = tuple(b_mid[b_at : b_at + length])
            regions.append(Region(shared, shared, shared, shared))
        bi, oi, ti = b_at + length, o_at + length, t_at + length
    if tail:
        shared = tuple(base[len(base) - tail :])
        regions.append(Region(shared, shared, shared, shared))
    return regions


def _classify(base: tuple[T, ...], ours: tuple[T, ...], theirs: tuple[T, ...]) -> Region[T] | None:
    if not base and not ours and not theirs:
        return None
    if ours == theirs:
        return Region(base, ours, theirs, ours)
    if ours == base:
        return Region(base, ours, theirs, theirs)
    if theirs == base:
        return Region(base, ours, theirs, ours)
    return Region(base, ours, theirs, None)
