"""Load and validate the filing contract (``filing.yaml``) and answer routing questions from it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.config import CONTRACT_FILE, memory_home
from vaultmem.errors import ContractError, MalformedNote
from vaultmem.filing.secrets import SecretsMode
from vaultmem.resources import contract_schema, shipped_contract
from vaultmem.safe_yaml import load_yaml_mapping
from vaultmem.vault.layout import IGNORED_DIRS
from vaultmem.vault.statefile import read_state, write_state

#: Where a vault keeps its own copy of the contract, in vaultmem's folder (it wins over the shipped one).
VAULT_CONTRACT = CONTRACT_FILE


if TYPE_CHECKING:
    import jsonschema


#: The state file (in the state directory) holding the digest of the last contract text that passed
#: the schema, and its format.
CHECKED_FILE = "contract.checked"
CHECKED_VERSION = 1


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    # ~60-75 ms to import, ~15 ms to build: only a process that checks a new contract text pays
    import jsonschema

    schema = json.loads(contract_schema().read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


@dataclass(frozen=True)
class Contract:
    """A validated filing contract."""

    path: Path
    kinds: dict[str, str]
    aliases: dict[str, str]
    capture_default_kind: str
    capture_confidence: float
    append_confidence: float
    projects_root: str
    projects_desk: str
    unscoped_kinds: frozenset[str]
    daily_write_cap: int
    low_confidence: float
    idea_overlap: float
    sources: dict[str, str]
    max_content_bytes: int
    max_title_chars: int
    max_tags: int
    max_tag_chars: int
    #: What a write holding a secret does (see vaultmem.filing.secrets).
    secrets_mode: SecretsMode = "refuse"
    #: vaultmem's folder in the vault ("" for the root). The contract's folders are relative to
    #: it; the ones above (``kinds``, ``projects_root``, ``projects_desk``) are vault paths already.
    home: str = ""

    def resolve_kind(self, kind: str) -> str:
        """The contract kind for ``kind`` (an alias maps to its target); ContractError-free."""
        key = kind.strip().lower()
        key = self.aliases.get(key, key)
        return key

    def class_dir(self, kind: str) -> str:
        return self.kinds[self.resolve_kind(kind)]

    def trust_for(self, transport: str) -> str:
        return self.sources.get(transport, "untrusted")

    def directories(self) -> list[tuple[str, str]]:
        """Every folder the contract files notes into, with the key that names it."""
        pairs = [(f"kinds/{kind}/dir", folder) for kind, folder in self.kinds.items()]
        return [*pairs, ("projects/root", self.projects_root), ("projects/desk", self.projects_desk)]

    def check_directories(self, vault_root: Path, forbidden: list[Path]) -> None:
        """Refuse a class directory that is (or, through a symlink, resolves into) one of the
        ``forbidden`` folders: the git directory and the state directory, wherever they are."""
        root = vault_root.resolve()
        for key, folder in self.directories():
            target = (root / folder).resolve()
            for place in forbidden:
                place = place.resolve()
                if target == place or place in target.parents:
                    raise ContractError(
                        f"the filing contract {self.path} is invalid at {key}: {folder!r} is inside "
                        f"{place}, which belongs to git or to vaultmem's state, not to notes; pick a "
                        "folder of the vault such as memory/semantic (writes are refused until then)"
                    )


def dir_problem(folder: str) -> str | None:
    """Why ``folder`` (a contract's class directory) cannot hold notes, or None when it can.

    vaultmem never reads, indexes or writes a hidden folder (``.obsidian``, ``.git``, ``.trash``,
    its own ``.vaultmem``) nor one it ignores (``node_modules``): a note filed there would be
    written and then never found, or land in git's or Obsidian's own files.
    """
    if folder.startswith("/") or "\\" in folder or ":" in folder:
        return "is not a relative path inside the vault"
    for part in folder.strip("/").split("/"):
        if part in ("", ".", ".."):
            return "is not a relative path inside the vault"
        if part in IGNORED_DIRS:
            return f"names the folder {part!r}, which vaultmem never reads (git, its state, Obsidian's own)"
        if part.startswith("."):
            return f"names the hidden folder {part!r}; vaultmem never reads or indexes hidden folders"
    return None


def load_contract(
    vault_root: Path | None = None, home: str | None = None, checked: Path | None = None
) -> Contract:
    """The vault's contract when it has one, else the shipped one, validated.

    The vault's copy is ``filing.yaml`` in vaultmem's folder ``home`` (the root, or the folder
    ``vaultmem init`` made in a vault that already held notes; read from the vault unless given),
    and the folders it names are relative to that folder: the same contract files into the root of
    a vault vaultmem made and into ``Memory/`` of one it adopted, never into the person's folders.
    Raise :class:`ContractError` naming the file and what is wrong when it does not validate;
    writes stop until it is fixed.

    ``checked`` is a state file that remembers the digest of the last text (with the schema's)
    that passed the schema: the same text is not checked against it again, which spares every
    start and CLI command importing ``jsonschema`` (docs/benchmarks.md). Every other check runs.
    """
    path = shipped_contract()
    if home is None:
        home = memory_home(vault_root) if vault_root is not None else ""
    if vault_root is not None and (vault_root / home / VAULT_CONTRACT).is_file():
        path = vault_root / home / VAULT_CONTRACT
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ContractError(f"cannot read the filing contract {path}: {exc}") from exc
    try:
        data = load_yaml_mapping(text, source=str(path))
    except MalformedNote as exc:
        raise ContractError(f"the filing contract {path} is not valid YAML: {exc}") from exc
    if checked is None:
        return in_folder(contract_from_data(data, path), home)
    digest = contract_digest(text)
    known = read_state(checked, CHECKED_VERSION, "the contract is checked against its schema again")
    passed = known is not None and known.get("sha256") == digest
    contract = contract_from_data(data, path, schema_passed=passed)
    if not passed:
        write_state(checked, {"version": CHECKED_VERSION, "sha256": digest})
    return in_folder(contract, home)


def contract_digest(text: str) -> str:
    """What names a contract text checked against this schema (a new schema checks it again)."""
    body = contract_schema().read_bytes() + b"\0" + text.encode("utf-8", "surrogatepass")
    return hashlib.sha256(body).hexdigest()


def in_folder(contract: Contract, home: str) -> Contract:
    """``contract`` with its folders made vault paths under vaultmem's folder ``home``."""
    if not home:
        return contract
    return dataclasses.replace(
        contract,
        kinds={kind: f"{home}/{folder}" for kind, folder in contract.kinds.items()},
        projects_root=f"{home}/{contract.projects_root}",
        projects_desk=f"{home}/{contract.projects_desk}",
        home=home,
    )


class VaultContract:
    """A vault's filing contract as it is now: re-read (and checked) when its file changes."""

    def __init__(
        self, vault_root: Path, forbidden: list[Path], home: str = "", checked: Path | None = None
    ) -> None:
        self.vault_root = vault_root
        self.home = home
        #: The state file naming the last contract text that passed the schema (:func:`load_contract`).
        self.checked = checked
        #: Where this vault keeps git and its state (either may be configured elsewhere): no class
        #: directory may lead there.
        self.forbidden = forbidden
        self._loaded: tuple[tuple[str, int, int], Contract] | None = None

    def current(self) -> Contract:
        vault_copy = self.vault_root / self.home / VAULT_CONTRACT
        try:
            st = vault_copy.stat()
            stamp = (str(vault_copy), st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = ("shipped", 0, 0)
        if self._loaded is None or self._loaded[0] != stamp:
            contract = load_contract(self.vault_root, self.home, self.checked)
            contract.check_directories(self.vault_root, self.forbidden)
            self._loaded = (stamp, contract)
        return self._loaded[1]


def contract_from_data(data: dict[str, Any], path: Path, *, schema_passed: bool = False) -> Contract:
    """The contract ``data`` describes; ``schema_passed`` when this very data passed the schema
    before (a state file that says so wrongly costs the check: the data is checked after all)."""
    if schema_passed:
        try:
            return _from_data(data, path)
        except (KeyError, TypeError, ValueError, AttributeError):
            pass  # not the data that passed: the schema names what is wrong
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "(top level)"
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        problem = first.message
        if first.validator == "pattern" and isinstance(first.instance, str):
            why = dir_problem(first.instance)  # a class directory: say what is wrong with it
            if why is not None:
                problem = f"{first.instance!r} {why}; pick a visible folder such as memory/semantic"
        raise ContractError(
            f"the filing contract {path} is invalid at {where}: {problem}{more}; "
            "fix the file, writes are refused until it validates"
        )
    return _from_data(data, path)


def _from_data(data: dict[str, Any], path: Path) -> Contract:
    kinds = {k: v["dir"].strip("/") for k, v in data["kinds"].items()}
    aliases = {k: v for k, v in data.get("aliases", {}).items()}
    for alias, target in aliases.items():
        if target not in kinds:
            raise ContractError(
                f"the filing contract {path} is invalid at aliases/{alias}: {target!r} is not a kind"
            )
    default_kind = data["capture"]["default_kind"]
    if aliases.get(default_kind, default_kind) not in kinds:
        raise ContractError(
            f"the filing contract {path} is invalid at capture/default_kind: {default_kind!r} is not a kind"
        )
    limits = data.get("limits", {})
    projects = data["projects"]
    thresholds = data["thresholds"]
    contract = Contract(
        path=path,
        kinds=kinds,
        aliases=aliases,
        capture_default_kind=aliases.get(default_kind, default_kind),
        capture_confidence=float(data["capture"]["confidence"]),
        append_confidence=float(data.get("append", {}).get("confidence", 1.0)),
        projects_root=projects["root"].strip("/"),
        projects_desk=projects["desk"].strip("/"),
        unscoped_kinds=frozenset(projects.get("unscoped_kinds", [])),
        daily_write_cap=int(thresholds["daily_write_cap"]),
        low_confidence=float(thresholds["low_confidence"]),
        idea_overlap=float(thresholds["idea_overlap"]),
        sources=dict(data["sources"]),
        max_content_bytes=int(limits.get("max_content_bytes", 100_000)),
        max_title_chars=int(limits.get("max_title_chars", 200)),
        max_tags=int(limits.get("max_tags", 50)),
        max_tag_chars=int(limits.get("max_tag_chars", 100)),
        secrets_mode=data.get("secrets", {}).get("mode", "refuse"),  # the schema allows only the modes
    )
    for key, folder in contract.directories():
        why = dir_problem(folder)
        if why is not None:
            raise ContractError(
                f"the filing contract {path} is invalid at {key}: {folder!r} {why}; pick a visible "
                "folder such as memory/semantic (writes are refused until it validates)"
            )
    return contract
