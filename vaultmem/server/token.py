"""The daemon's bearer token: where it lives, how it is made, and how a running daemon reads it.

The token is a secret, so it is kept out of the vault (which is synced and under git) and out of
the state directory (which is derived and may be deleted at any time): it lives in the user's
config directory, one file per vault, readable by the owner only::

    $VAULTMEM_TOKEN_FILE                      when set (one file, whatever the vault)
    $XDG_CONFIG_HOME/vaultmem/tokens/<vault name>-<hash of the vault path>.token
    ~/.config/vaultmem/tokens/...             when XDG_CONFIG_HOME is unset
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

from vaultmem.errors import VaultError

TOKEN_BYTES = 32
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def token_path(vault: Path) -> Path:
    """The token file of the vault at ``vault``."""
    override = os.environ.get("VAULTMEM_TOKEN_FILE")
    if override:
        return Path(override).expanduser().resolve()
    config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config_home).expanduser() / "vaultmem" / "tokens" / token_file_name(vault)


def token_file_name(vault: Path) -> str:
    """``<vault name>-<first 12 hex digits of the sha256 of the vault's resolved path>.token``."""
    root = vault.expanduser().resolve()
    digest = hashlib.sha256(str(root).encode("utf-8")).hexdigest()[:12]
    name = _SAFE.sub("-", root.name).strip("-") or "vault"
    return f"{name}-{digest}.token"


def new_token() -> str:
    """A fresh random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def write_token(path: Path, token: str) -> None:
    """Write ``token`` to ``path`` atomically, readable and writable by the owner only (0600)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, (token + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        tmp.chmod(0o600)  # in case a umask or ACL widened it
        tmp.replace(path)
    except OSError as exc:
        raise VaultError(f"cannot write the token file {path}: {exc}") from exc


def read_token(path: Path) -> str | None:
    """The token stored at ``path``, or None when there is none yet."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise VaultError(
            f"cannot read the token file {path}: {exc}; replace it with `vaultmem token --rotate`"
        ) from exc
    return text or None


def ensure_token(path: Path) -> tuple[str, bool]:
    """The token at ``path``, generating one when missing; also whether it was just created."""
    existing = read_token(path)
    if existing is not None:
        return existing, False
    token = new_token()
    write_token(path, token)
    return token, True


def rotate_token(path: Path) -> str:
    """Replace the token; a running daemon accepts only the new one from its next request."""
    token = new_token()
    write_token(path, token)
    return token


class TokenFile:
    """The token a running daemon checks requests against, re-read when the file changes.

    So ``vaultmem token --rotate`` takes effect without a restart. The file is stat'ed on each
    check (microseconds); it is re-read only when its mtime or size changed.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._token: bytes = b""

    def current(self) -> bytes:
        try:
            st = self.path.stat()
        except OSError:
            return self._token  # keep serving with the last token rather than locking everyone out
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp != self._stamp:
            token = read_token(self.path)
            self._token = token.encode("ascii") if token else b""
            self._stamp = stamp
        return self._token

    def matches(self, presented: bytes) -> bool:
        """Constant-time comparison of a presented token with the current one."""
        expected = self.current()
        return bool(expected) and hmac.compare_digest(presented, expected)
