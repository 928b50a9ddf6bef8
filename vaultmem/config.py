"""Settings: one typed object, read once when a command or the daemon starts.

Precedence: explicit arguments (the CLI's flags), then environment variables (``VAULTMEM_VAULT``,
``VAULTMEM_STATE_DIR``), then the vault's own ``vaultmem.yaml`` (tunables a person may want to keep
with the vault, under git), then the defaults here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from vaultmem.errors import InvalidInput, MalformedNote
from vaultmem.safe_yaml import load_yaml_mapping

#: The vault every command uses when neither --vault nor $VAULTMEM_VAULT names one: the one
#: `make serve` creates, so the CLI finds it from any folder.
DEFAULT_VAULT = "~/vaultmem-vault"
CONFIG_FILE = "vaultmem.yaml"
#: The state directory's name inside the vault when none is configured (git-ignored, never read).
STATE_DIRNAME = ".vaultmem"
#: The vault's copy of the filing contract, in vaultmem's folder (the root, or its own folder).
CONTRACT_FILE = "filing.yaml"
#: The default name of vaultmem's own folder in a vault adopted in place (``vaultmem init``).
DEFAULT_HOME = "Memory"


def find_homes(vault: Path) -> list[str]:
    """Where vaultmem keeps its files in ``vault``, as the vault itself says (so another machine
    opening the same vault finds the same place): ``[""]`` when its filing contract or settings
    file is at the root (a vault vaultmem made, or one made by an earlier version), else every
    top-level folder holding a ``vaultmem.yaml`` (a vault adopted in place: normally one), else
    ``[""]`` again when vaultmem's state or project desk is at the root. Empty when the vault shows
    none of these (not a vault yet): vaultmem then files at the root, as it always did."""
    if (vault / CONTRACT_FILE).is_file() or (vault / CONFIG_FILE).is_file():
        return [""]
    try:
        with os.scandir(vault) as listing:
            folders = sorted(e.name for e in listing if not e.name.startswith(".") and e.is_dir())
    except OSError:
        return []
    marked = [name for name in folders if (vault / name / CONFIG_FILE).is_file()]
    if marked:
        return marked
    # A vault of vaultmem's own whose contract copy was removed: its state or its project desk
    # (``desk/projects``) at the root still says where it files.
    if (vault / STATE_DIRNAME).is_dir() or (vault / "desk" / "projects").is_dir():
        return [""]
    return []


def memory_home(vault: Path) -> str:
    """vaultmem's folder in ``vault``, relative to its root ("" for the root): see :func:`find_homes`
    (two folders claiming it is a mistake ``vaultmem doctor`` reports; the first in name order wins)."""
    homes = find_homes(vault)
    return homes[0] if homes else ""


@dataclass(frozen=True)
class Settings:
    """Everything a vaultmem process needs to know about where it runs and how."""

    vault: Path
    state_dir: Path
    #: vaultmem's own folder in the vault, relative to it: "" when its files are at the root, or
    #: the folder ``vaultmem init`` made in a vault that already held notes (``Memory``).
    home: str = ""
    #: Seconds to wait for a git ``index.lock`` another process holds before giving up.
    git_lock_timeout: float = 5.0
    #: Seconds to wait for the cross-process vault write lock.
    write_lock_timeout: float = 30.0
    #: fsync files and directories before a write is acknowledged (turn off only in tests).
    durable: bool = True
    #: A folder holding your own ``model.onnx`` + ``tokenizer.json``; unset = the packaged MiniLM.
    model_dir: Path | None = None
    #: Cores that embedding may use (0 = every core): texts embedded side by side, one core each.
    embed_threads: int = 0
    #: Calibration of the vector leg's cosine (see docs/benchmarks.md for how they were measured).
    unrelated_floor: float | None = None
    vector_floor: float | None = None
    #: The default noise gate on the calibrated relevance scale (0 turns it off).
    min_relevance: float | None = None
    #: Seconds a hand-edited file must stay quiet before the watcher commits it.
    commit_quiet_period: float = 2.0
    #: Seconds between full rescans of the vault by the watcher.
    rescan_interval: float = 300.0
    #: A file above this many MiB that is not a note is never committed by vaultmem (a note is, and
    #: doctor warns of it): docs/architecture.md, "Big files and hidden folders in git". 0: no limit.
    max_commit_file_mb: float = 25.0
    #: Seconds between two commits of what hidden folders hold (``.obsidian/``: Obsidian's settings,
    #: its plugins' data): a start (any CLI command) commits them only when this long has passed
    #: since they were last looked at; a daemon looks again at each rescan, and when it stops.
    hidden_commit_interval: float = 600.0
    #: A server (the daemon, a stdio server) restarted on a vault of at least this many notes, whose
    #: index opened from the snapshot its last clean stop saved, answers ``memory_search`` while it
    #: scans the vault behind (docs/architecture.md, "Searching while the vault is scanned"); every
    #: other tool waits for the scan and the reconcile. 0: on every vault.
    search_first_notes: int = 5000
    #: memory_recall hits after which a thought is promoted to a primer (memory_primers).
    primer_threshold: int = 3
    #: Days without an update after which an active thought shows on memory_status's frontier as stale.
    stale_after_days: int = 90
    #: retention_review list: the defaults each call may override (minimum age from the age anchor,
    #: the importance a candidate must stay below, the page size).
    retention_min_age_days: float = 30.0
    retention_importance_floor: float = 0.3
    retention_page_size: int = 20
    #: memory_crystallize auto_cluster. Despite the name (the graph document's), min_similarity is a
    #: MAXIMUM cosine distance: thoughts strictly closer than it are grouped; lower is tighter.
    auto_cluster_min_similarity: float = 0.15
    auto_cluster_min_cluster_size: int = 3
    auto_cluster_max_clusters: int = 50
    #: The HTTP daemon. Seconds a client has to send a request's headers, then its body, before it is
    #: answered 408 and the connection closed (a stalled or trickling client holds nothing longer).
    request_header_timeout: float = 10.0
    request_body_timeout: float = 10.0
    #: MCP sessions over HTTP: seconds an idle one is kept (a connected client's open event stream
    #: holds its session), and how many may be open; a new one beyond that ends the longest idle.
    mcp_session_idle_timeout: float = 300.0
    mcp_max_sessions: int = 100
    #: Seconds the requests being answered get to finish, and be answered, when the daemon stops
    #: (event streams end at once). Below a supervisor's own stop timeout (systemd: 90 s).
    shutdown_grace: float = 60.0
    #: Sync between machines through the vault repository's git remote (docs/sync.md): the remote's
    #: name; seconds between the daemon's rounds (it fetches what other machines pushed), and seconds
    #: after a write (an agent's or a hand edit's commit) before the round that pushes it. 0 turns
    #: either off; nothing syncs on its own while the repository has no such remote.
    sync_remote: str = "origin"
    sync_interval: float = 300.0
    sync_debounce: float = 10.0

    @property
    def size_limit(self) -> int:
        """``max_commit_file_mb`` in bytes (0: no limit)."""
        return int(self.max_commit_file_mb * 2**20) if self.max_commit_file_mb > 0 else 0

    @staticmethod
    def resolve(
        vault: str | os.PathLike[str] | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        **overrides: Any,
    ) -> Settings:
        """Settings from explicit values, then the environment, then ``<vault>/vaultmem.yaml``,
        then the defaults (``~/vaultmem-vault`` and ``<vault>/<home>/.vaultmem``, where ``home`` is
        vaultmem's folder in the vault, the root unless the vault was adopted in place)."""
        vault_path = Path(vault or os.environ.get("VAULTMEM_VAULT") or DEFAULT_VAULT).expanduser()
        vault_path = vault_path.resolve()
        home = memory_home(vault_path)
        state = state_dir or os.environ.get("VAULTMEM_STATE_DIR")
        state_path = Path(state).expanduser().resolve() if state else vault_path / home / STATE_DIRNAME
        settings = Settings(vault=vault_path, state_dir=state_path, home=home)
        settings = replace(settings, **_file_overrides(vault_path / home / CONFIG_FILE))
        return replace(settings, **overrides)


_TUNABLE = {f.name for f in fields(Settings)} - {"vault", "state_dir", "home"}


def _file_overrides(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = load_yaml_mapping(path.read_text(encoding="utf-8-sig"), source=str(path))
    except (OSError, UnicodeDecodeError, MalformedNote) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}; fix or remove the file") from exc
    unknown = sorted(set(data) - _TUNABLE)
    if unknown:
        raise InvalidInput(
            f"{path}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(_TUNABLE))}"
        )
    out: dict[str, Any] = {}
    for key, value in data.items():
        out[key] = Path(value).expanduser() if key == "model_dir" and value else value
    return out
