"""Grouping thoughts by vector distance: Union-Find over every pair closer than a threshold.

``auto_cluster`` (graph document, ``memory_crystallize``) joins two thoughts when their cosine
**distance** (``1 - cosine``; vectors are unit length) is strictly below ``max_distance`` — the
setting the document calls ``min_similarity`` although it is a maximum distance: lower is tighter.
Groups are the connected components of that neighbour graph (single linkage), found with a
Union-Find (path halving, union by size).

The pairwise scan is blocked: rows ``i0:i1`` against rows ``i0:`` (the upper triangle only), so a
10k-note vault needs about 50 M dot products in ~40 MB blocks rather than a 400 MB matrix.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vaultmem.notes.slugs import meaningful_words

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: Rows compared at once: a block is BLOCK_ROWS x n float32 scores.
BLOCK_ROWS = 1024
#: Words a suggested cluster title is made of.
TITLE_WORDS = 3


class UnionFind:
    """Disjoint sets over ``0..n-1``."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))
        self.size = [1] * n

    def find(self, i: int) -> int:
        parent = self.parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]  # path halving
            i = parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]

    def groups(self) -> list[list[int]]:
        """Every set with more than one member, members ascending."""
        out: dict[int, list[int]] = {}
        for i in range(len(self.parent)):
            out.setdefault(self.find(i), []).append(i)
        return [members for members in out.values() if len(members) > 1]


@dataclass(frozen=True)
class Group:
    """One proposed cluster: member rows, how tight it is, and the pairs that joined it."""

    members: list[int]
    #: Mean cosine of the members to their centroid (1.0 = identical).
    cohesion: float
    #: The largest cosine distance of a joining pair inside the group.
    max_link_distance: float


def close_pairs(
    vectors: npt.NDArray[np.float32], max_distance: float, block_rows: int = BLOCK_ROWS
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.float32]]:
    """Every pair ``i < j`` whose cosine distance is strictly below ``max_distance``: (i, j, distance)."""
    import numpy as np  # here, not at import: the CLI's writes load the facade without NumPy

    n = len(vectors)
    threshold = np.float32(1.0 - max_distance)
    firsts: list[npt.NDArray[np.intp]] = []
    seconds: list[npt.NDArray[np.intp]] = []
    distances: list[npt.NDArray[np.float32]] = []
    for start in range(0, n, block_rows):
        stop = min(n, start + block_rows)
        scores = vectors[start:stop] @ vectors[start:].T  # rows start:stop against columns start:n
        rows, cols = np.nonzero(scores > threshold)
        upper = cols > rows  # column index is offset by `start`, exactly as the row index is
        rows, cols = rows[upper], cols[upper]
        firsts.append(rows + start)
        seconds.append(cols + start)
        distances.append((1.0 - scores[rows, cols]).astype(np.float32))
    if not firsts:
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty, np.zeros(0, dtype=np.float32)
    return np.concatenate(firsts), np.concatenate(seconds), np.concatenate(distances)


def group_vectors(
    vectors: npt.NDArray[np.float32],
    max_distance: float,
    min_size: int = 2,
    max_groups: int | None = None,
    block_rows: int = BLOCK_ROWS,
) -> list[Group]:
    """The Union-Find groups of ``vectors`` (unit rows), largest first, at least ``min_size`` each."""
    import numpy as np

    n = len(vectors)
    if n < 2 or max_distance <= 0:
        return []
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    first, second, dist = close_pairs(vectors, max_distance, block_rows)
    sets = UnionFind(n)
    for a, b in zip(first.tolist(), second.tolist(), strict=True):
        sets.union(a, b)
    # The longest joining link per group (how loose single linkage let it get).
    root_of = np.fromiter((sets.find(i) for i in range(n)), dtype=np.intp, count=n)
    longest: dict[int, float] = {}
    if len(first):
        roots = root_of[first]
        order = np.argsort(roots, kind="stable")
        roots, dist = roots[order], dist[order]
        starts = np.flatnonzero(np.r_[True, roots[1:] != roots[:-1]])
        peaks = np.maximum.reduceat(dist, starts)
        for root, peak in zip(roots[starts].tolist(), peaks.tolist(), strict=True):
            longest[root] = float(peak)
    out: list[Group] = []
    for members in sets.groups():
        if len(members) < min_size:
            continue
        block = vectors[members]
        centroid = block.mean(axis=0)
        norm = float(np.linalg.norm(centroid)) or 1.0
        cohesion = float((block @ (centroid / norm)).mean())
        out.append(Group(members, round(cohesion, 4), round(longest.get(int(root_of[members[0]]), 0.0), 4)))
    out.sort(key=lambda g: (-len(g.members), g.members[0]))
    return out if max_groups is None else out[:max_groups]


def suggest_title(titles: Sequence[str]) -> str:
    """A cluster title from the words its members' titles share most (``Cluster: cache, ttl``)."""
    counts: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    for title in titles:
        for word in meaningful_words(title):
            counts[word] += 1
            first_seen.setdefault(word, len(first_seen))
    top = sorted(counts, key=lambda w: (-counts[w], first_seen[w]))[:TITLE_WORDS]
    return "Cluster: " + (", ".join(top) if top else (titles[0] if titles else "thoughts"))
