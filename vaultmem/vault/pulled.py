"""The renames a person's own ``git pull`` (or checkout) brought while nothing ran.

A note without an ``id`` key answers under an id derived from its path; :mod:`vaultmem.vault.gone`
keeps the old id answering across the renames a vaultmem process sees. A pull of another machine's
rename made while vaultmem was stopped writes the file anew at its new name (a new modification
time), so at the next start nothing says the file that went and the one that came are one note. git
does: the catalog records the commit it last knew (``<state>/catalog.head``, saved with its cache),
and the start asks git's rename detection between it and ``HEAD``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from vaultmem.errors import GitError
from vaultmem.vault.atomic import atomic_write
from vaultmem.vault.entry import Entry
from vaultmem.vault.history import GitRepo
from vaultmem.vault.layout import VaultLayout
from vaultmem.vault.reading import read_regular


class PulledRenames:
    """The commit the catalog last knew (``<state>/catalog.head``), and git's renames since."""

    def __init__(self, repo: GitRepo, layout: VaultLayout) -> None:
        self.repo = repo
        self.file: Path = layout.state_dir / "catalog.head"

    def _head(self) -> str:
        return self.repo.git("rev-parse", "-q", "--verify", "HEAD^{commit}", check=False).strip()

    def remember(self) -> None:
        """Record ``HEAD`` as the commit the catalog knows (derived state: a failure forgets it)."""
        with contextlib.suppress(OSError, GitError):
            head = self._head()
            if head:
                atomic_write(self.file, head.encode("ascii"), durable=False)

    def moved_whole(
        self, cached: Mapping[str, Entry], walked: Collection[str], now: Callable[[str], Entry | None]
    ) -> list[tuple[Entry, Entry]]:
        """The notes without an ``id`` key that went since the cache (``cached`` paths not
        ``walked``) and that git saw renamed, their bytes unchanged: (as cached, as ``now`` reads
        it at its new path, a path the cache did not know)."""
        if not any(e.id is None and rel not in walked for rel, e in cached.items()):
            return []  # nothing to pair: no git asked
        pairs = []
        for old, new in self.since().items():
            went, came = cached.get(old), now(new)
            if went is None or came is None or old in walked or new in cached:
                continue
            if went.id is None and came.id is None and went.content_hash == came.content_hash:
                pairs.append((went, came))
        return pairs

    def since(self) -> dict[str, str]:
        """The files git saw renamed between the commit recorded and ``HEAD``: old path -> new."""
        try:
            known = read_regular(self.file).decode("ascii").strip()
            head = self._head()
            if not known or not head or known == head:
                return {}
            # Only a file moved whole is paired (the catalog checks its bytes): git finds those
            # by hash, whatever its rename limit.
            out = self.repo.git(
                "diff", "-M", "--name-status", "-z", known, head, "--", check=False, errors="surrogateescape"
            )  # fmt: skip
        except (OSError, UnicodeDecodeError, GitError):
            return {}
        fields = out.split("\0")
        found: dict[str, str] = {}
        i = 0
        while i + 1 < len(fields) and fields[i]:
            status = fields[i]
            if status[:1] == "R" and i + 2 < len(fields):
                found[fields[i + 1]] = fields[i + 2]
                i += 3
            else:
                i += 3 if status[:1] == "C" else 2
        return found
