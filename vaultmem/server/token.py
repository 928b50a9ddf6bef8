"""The daemon's bearer token: where it lives, how it is made, and how a running daemon reads it.

The token is a secret, so it is kept out of the vault (which is synced and under git) and out of
the state directory (which is derived and may be deleted at any time): it lives in the user's
config directory, one file per vault, readable by the owner only::

    $VAULTMEM_TOKEN_FILE                      when set (one file, whatever the vault)
    $XDG_CONFIG_HOME/vaultmem/tokens/<vault name>-<hash of the vault path>.token
    ~/.config/vaultmem/tokens/...             when XDG_CONFIG_HOME is unset

That file holds the *default* token (``vaultmem token`` prints it; hosts set up before named tokens
keep working). **Named tokens**, one per agent (``vaultmem token add cursor``), live beside it in
``<same name>.agents.json`` (0600 too), stored as sha256 digests: a named token is shown once, when
it is made, and nothing of it is kept. ``vaultmem token list`` tells tokens apart by a fingerprint,
the first hex digits of the digest (:func:`fingerprint`), which reveals nothing of the token but
lets its holder check which one they have. A request is
attributed to its token's name: its commits are authored ``<name> <<name>@vaultmem.local>`` (or
the address given with ``--email``). A running daemon re-reads both files when they change, so a
``token revoke`` takes effect on its next request.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vaultmem.caller import AGENT_DOMAIN
from vaultmem.errors import InvalidInput, VaultError

TOKEN_BYTES = 32
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
#: The name the default token's requests are attributed to.
DEFAULT_AGENT = "default"
#: A token's name: what `git log --author=NAME` finds (letters, digits, ``.``, ``_``, ``-``).
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
#: Hex digits of a token's sha256 digest that ``token list`` shows to tell it apart.
FINGERPRINT_CHARS = 8


def token_path(vault: Path) -> Path:
    """The token file of the vault at ``vault``."""
    override = os.environ.get("VAULTMEM_TOKEN_FILE")
    if override:
        return Path(override).expanduser().resolve()
    config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config_home).expanduser() / "vaultmem" / "tokens" / token_file_name(vault)


def token_command(vault: Path) -> str:
    """The command that prints the default token of ``vault`` (``add NAME`` after it makes an
    agent's): it names the vault, since without ``--vault`` it acts on the default one."""
    return f"vaultmem --vault {shlex.quote(str(vault))} token"


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
    _write_private(path, (token + "\n").encode("ascii"))


def _write_private(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, data)
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


# -- named tokens ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Agent:
    """Whom a token belongs to: the name its writes are attributed to, and their commits' address."""

    name: str
    email: str


def agents_path(token_file: Path) -> Path:
    """The named tokens of the vault whose default token is ``token_file``."""
    stem = token_file.name.removesuffix(".token")
    return token_file.with_name(f"{stem}.agents.json")


def _digest(token: str | bytes) -> str:
    return hashlib.sha256(token.encode("ascii") if isinstance(token, str) else token).hexdigest()


def fingerprint(digest: str) -> str:
    """How ``token list`` names a token without revealing any of it: ``sha256:`` and the first
    hex digits of its digest (``printf %s TOKEN | sha256sum`` prints the same digits first)."""
    return f"sha256:{digest[:FINGERPRINT_CHARS]}" if digest else "-"


def _read_agents(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise VaultError(
            f"cannot read the named tokens in {path}: {exc}; fix or remove the file (every named "
            "token in it stops working), then add the agents again with `vaultmem token add NAME`"
        ) from exc
    tokens = data.get("tokens") if isinstance(data, dict) else None
    return {k: v for k, v in tokens.items() if isinstance(v, dict)} if isinstance(tokens, dict) else {}


@contextlib.contextmanager
def _agents_locked(path: Path) -> Iterator[dict[str, dict[str, Any]]]:
    """The named tokens, for a change written back when the block ends (two `token add` at once
    both land: the change is made under an exclusive lock)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise VaultError(f"cannot lock the named tokens in {path}: {exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        tokens = _read_agents(path)
        yield tokens
        for record in tokens.values():  # earlier versions kept a token's first characters here
            record.pop("shown", None)
        body = json.dumps({"version": 1, "tokens": tokens}, indent=2, sort_keys=True)
        _write_private(path, (body + "\n").encode("utf-8"))
    finally:
        os.close(fd)


def check_agent_name(name: str) -> str:
    """``name`` if it can name a token (and a commit author), else InvalidInput saying what can."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidInput(
            f"{name!r} cannot name a token: use 1-64 letters, digits, '.', '_' or '-', starting with "
            "a letter or digit (it becomes the commit author, so `git log --author=NAME` finds it)"
        )
    return name


def _check_email(email: str) -> str:
    if "@" not in email or any(c in email for c in "<>\n\r\0") or len(email) > 254:
        raise InvalidInput(f"{email!r} is not a mail address a commit can carry (name@host)")
    return email


def add_token(
    token_file: Path, name: str, email: str | None = None, *, command: str = "vaultmem token"
) -> str:
    """Make a token for the agent ``name`` and return it: the only time it is shown. ``command``
    is how the hints name the token command (:func:`token_command`: with the vault it acts on)."""
    check_agent_name(name)
    address = _check_email(email) if email is not None else f"{name}@{AGENT_DOMAIN}"
    token = new_token()
    with _agents_locked(agents_path(token_file)) as tokens:
        if name.casefold() == DEFAULT_AGENT:
            raise InvalidInput(f"{DEFAULT_AGENT!r} is the default token's name; choose another")
        if name.casefold() in {n.casefold() for n in tokens}:
            raise InvalidInput(
                f"a token named {name!r} exists already; revoke it first (`{command} revoke "
                f"{name}`) to make a new one"
            )
        tokens[name] = {
            "sha256": _digest(token),
            "email": address,
            "created": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
    return token


def revoke_token(token_file: Path, name: str, *, command: str = "vaultmem token") -> None:
    """Remove the agent ``name``'s token; a running daemon refuses it from its next request."""
    if name.casefold() == DEFAULT_AGENT:
        raise InvalidInput(
            f"the default token cannot be revoked (hosts set up with `{command}` use it); "
            f"replace it with `{command} --rotate`"
        )
    with _agents_locked(agents_path(token_file)) as tokens:
        found = next((n for n in tokens if n.casefold() == name.casefold()), None)
        if found is None:
            known = ", ".join(sorted(tokens)) or "none"
            raise InvalidInput(f"no token is named {name!r} (named tokens: {known}); see `{command} list`")
        del tokens[found]


def _email_of(name: str, record: dict[str, Any]) -> str:
    return str(record.get("email") or f"{name}@{AGENT_DOMAIN}")


def list_tokens(token_file: Path) -> list[dict[str, str]]:
    """Every token: the default one first, then the named ones by name, each with its
    :func:`fingerprint`. Never a token itself, nor any part of one."""
    default = read_token(token_file)
    rows = [
        {
            "name": DEFAULT_AGENT,
            "email": f"{DEFAULT_AGENT}@{AGENT_DOMAIN}",
            "created": "",
            "fingerprint": fingerprint(_digest(default) if default else ""),
        }
    ]
    for name, record in sorted(_read_agents(agents_path(token_file)).items()):
        rows.append(
            {
                "name": name,
                "email": _email_of(name, record),
                "created": str(record.get("created", "")),
                "fingerprint": fingerprint(str(record.get("sha256", ""))),
            }
        )
    return rows


class TokenFile:
    """The tokens a running daemon checks requests against, re-read when their files change.

    So ``vaultmem token --rotate``, ``token add`` and ``token revoke`` take effect without a
    restart. Both files are stat'ed on each check (microseconds); one is re-read only when its
    mtime or size changed.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.agents_path = agents_path(path)
        self._stamp: tuple[int, int] | None = None
        self._token: bytes = b""
        self._agents_stamp: tuple[int, int] | None = None
        self._agents: list[tuple[str, Agent]] = []

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

    def named(self) -> list[tuple[str, Agent]]:
        """(sha256 of the token, its agent) for every named token now; none once the file is gone."""
        try:
            st = self.agents_path.stat()
        except OSError:
            self._agents_stamp, self._agents = None, []
            return self._agents
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp != self._agents_stamp:
            self._agents = [
                (
                    str(record.get("sha256", "")),
                    Agent(name, str(record.get("email") or f"{name}@{AGENT_DOMAIN}")),
                )
                for name, record in _read_agents(self.agents_path).items()
            ]
            self._agents_stamp = stamp
        return self._agents

    def agent_for(self, presented: bytes) -> Agent | None:
        """The agent whose token ``presented`` is (constant-time comparisons), or None."""
        found: Agent | None = None
        expected = self.current()
        if expected and hmac.compare_digest(presented, expected):
            found = Agent(DEFAULT_AGENT, f"{DEFAULT_AGENT}@{AGENT_DOMAIN}")
        digest = _digest(presented)
        for stored, agent in self.named():  # every one compared: the time says nothing about which
            if hmac.compare_digest(digest, stored) and found is None:
                found = agent
        return found

    def matches(self, presented: bytes) -> bool:
        """Whether ``presented`` is one of the tokens."""
        return self.agent_for(presented) is not None
