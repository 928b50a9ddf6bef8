"""Settings: one typed object, read once when a command or the daemon starts."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from vaultmem.vault.layout import STATE_DIRNAME

DEFAULT_VAULT = "vault"


@dataclass(frozen=True)
class Settings:
    """Everything a vaultmem process needs to know about where it runs and how."""

    vault: Path
    state_dir: Path
    #: Seconds to wait for a git ``index.lock`` another process holds before giving up.
    git_lock_timeout: float = 5.0
    #: Seconds to wait for the cross-process vault write lock.
    write_lock_timeout: float = 30.0
    #: fsync files and directories before a write is acknowledged (turn off only in tests).
    durable: bool = True

    @staticmethod
    def resolve(
        vault: str | os.PathLike[str] | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        **overrides: object,
    ) -> Settings:
        """Settings from explicit values, then ``$VAULTMEM_VAULT`` / ``$VAULTMEM_STATE_DIR``,
        then the defaults (``./vault`` and ``<vault>/.vaultmem``)."""
        vault_path = Path(vault or os.environ.get("VAULTMEM_VAULT") or DEFAULT_VAULT).expanduser()
        vault_path = vault_path.resolve()
        state = state_dir or os.environ.get("VAULTMEM_STATE_DIR")
        state_path = Path(state).expanduser().resolve() if state else vault_path / STATE_DIRNAME
        return Settings(vault=vault_path, state_dir=state_path, **overrides)  # type: ignore[arg-type]
