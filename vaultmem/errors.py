"""The one exception tree of vaultmem.

    VaultmemError                  every error this package raises on purpose
    ├── InvalidInput               the caller passed something unusable (fix the arguments)
    ├── NotFound                   an id or path addresses nothing
    ├── Conflict                   the write contradicts the current state (an edge already joins a pair)
    ├── ContractError              the filing contract does not load or validate (fix the file)
    ├── CapReached                 the daily write cap refuses a new note (wait, or raise the cap)
    ├── VaultError                 the vault on disk is unusable (missing, read-only)
    │   ├── MalformedNote          a note's frontmatter cannot be read (reported, never rewritten)
    │   ├── VaultBusy              another vaultmem process held a lock of the vault too long (retry)
    │   └── GitError               git refused an operation
    │       └── GitLocked          another process holds git's lock (the change is safe on disk)
    │           └── GitBusy        the person's git is mid-operation (a rebase, a detached HEAD)
    └── IndexError_                the derived index is unavailable (rebuild it with `vaultmem reindex`)

Library errors (YAML, git, LanceDB, onnxruntime, OS) are translated once, where they are called,
with ``raise ... from exc``; messages say what went wrong and what to do about it.
"""

from __future__ import annotations


class VaultmemError(Exception):
    """Root of every error vaultmem raises on purpose."""

    #: True when the same call, made again unchanged, may well succeed.
    retryable: bool = False


class InvalidInput(VaultmemError, ValueError):
    """The caller passed an argument that cannot be used as given."""


class NotFound(VaultmemError, LookupError):
    """An id or path addresses nothing in the vault."""


class Conflict(VaultmemError):
    """The write contradicts what is already there (a pair of thoughts carries one edge)."""


class ChangedOnDisk(Conflict):
    """A note changed on disk (a person's save) between being read for a write and being replaced.

    Nothing was written; running the same call again decides from the new text.
    """

    retryable = True


class ContractError(VaultmemError):
    """The filing contract does not load or does not validate."""


class CapReached(VaultmemError):
    """The daily write cap refuses a new note."""


class VaultError(VaultmemError):
    """The vault on disk cannot be used as it is."""


class MalformedNote(VaultError):
    """A note's frontmatter cannot be read; the file is reported and left untouched."""


class VaultBusy(VaultError):
    """Another vaultmem process (or a sync round) held one of the vault's locks past its timeout."""

    retryable = True


class GitError(VaultError):
    """Git refused an operation, or another process holds its lock."""


class GitLocked(GitError):
    """Another process held git's lock past the lock timeout; the file is safe, the commit retried."""

    retryable = True


class GitBusy(GitLocked):
    """The person's git is in the middle of an operation (a rebase, a merge, a cherry-pick, a
    revert, a checkout of one commit): vaultmem commits nothing until it is over; the file is safe."""


class IndexError_(VaultmemError):
    """The derived search index is unavailable or inconsistent."""
