"""Which note a link with a path names, as Obsidian reads the path (``Catalog.resolve_link``'s).

- ``/Folder/Note``: from the vault root only (a Markdown link written from the root, the form of
  tools beside Obsidian and of plugins such as Better Markdown Links);
- ``./Note``, ``../Other/Note``: from the linking note's folder, which is what ``./`` and ``../``
  say; a ``./`` path no note answers falls back to the closest note whose path ends with it;
- ``Folder/Note``: the note at that vault path, else at that path from the linking note's folder,
  else the closest note whose path ends with it.

All case-insensitively and blind to Unicode's two forms of an accented letter (``name_key``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Container

from vaultmem.notes.links import name_key

__all__ = ["closest", "dir_of", "path_link"]


def path_link(name: str, here: str | None, notes: Container[str], named: Collection[str]) -> str | None:
    """The path of the note the link ``name`` (a path, ``.md`` dropped) names from the folder
    ``here`` (None: no linking note), given every note's path (``notes``) and the paths of the
    notes whose file name is the link's last part (``named``)."""
    rooted = name.startswith("/")
    wanted = name.lstrip("/")
    if f"{wanted}.md" in notes:
        return f"{wanted}.md"
    if not named:
        return None
    folded = {name_key(p): p for p in named}
    norm = name_key(posixpath.normpath(wanted))
    if rooted:
        return folded.get(f"{norm}.md")
    relative = wanted.startswith(("./", "../"))
    tries = [] if relative else [norm]
    if here is not None:
        tries.insert(0 if relative else 1, name_key(posixpath.normpath(posixpath.join(here, wanted))))
    for candidate in tries:
        found = folded.get(f"{candidate}.md")
        if found is not None:
            return found
    if norm.startswith(".."):
        return None
    ends = [p for low, p in folded.items() if f"/{low}".endswith(f"/{norm}.md")]
    return closest(ends, here) if ends else None


def closest(paths: Collection[str], here: str | None) -> str:
    """Of several notes a name fits, the one in the folder ``here``, then the shortest path, then
    the first in sort order."""
    if len(paths) == 1:  # a unique name: most links
        return next(iter(paths))
    return min(paths, key=lambda p: (dir_of(p) != here, len(p), p))


def dir_of(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else ""
