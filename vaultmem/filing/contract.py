"""Load and validate the filing contract (``filing.yaml``) and answer routing questions from it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

from vaultmem.errors import ContractError
from vaultmem.filing.secrets import SecretsMode
from vaultmem.notes.frontmatter import MalformedNote, load_yaml_mapping
from vaultmem.resources import contract_schema, shipped_contract

#: Where a vault keeps its own copy of the contract (it wins over the shipped one).
VAULT_CONTRACT = "filing.yaml"


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
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

    def resolve_kind(self, kind: str) -> str:
        """The contract kind for ``kind`` (an alias maps to its target); ContractError-free."""
        key = kind.strip().lower()
        key = self.aliases.get(key, key)
        return key

    def class_dir(self, kind: str) -> str:
        return self.kinds[self.resolve_kind(kind)]

    def trust_for(self, transport: str) -> str:
        return self.sources.get(transport, "untrusted")


def load_contract(vault_root: Path | None = None) -> Contract:
    """The vault's contract when it has one, else the shipped one, validated.

    Raise :class:`ContractError` naming the file and what is wrong when it does not validate;
    writes stop until it is fixed.
    """
    path = shipped_contract()
    if vault_root is not None and (vault_root / VAULT_CONTRACT).is_file():
        path = vault_root / VAULT_CONTRACT
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ContractError(f"cannot read the filing contract {path}: {exc}") from exc
    try:
        data = load_yaml_mapping(text, source=str(path))
    except MalformedNote as exc:
        raise ContractError(f"the filing contract {path} is not valid YAML: {exc}") from exc
    return contract_from_data(data, path)


def contract_from_data(data: dict[str, Any], path: Path) -> Contract:
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "(top level)"
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise ContractError(
            f"the filing contract {path} is invalid at {where}: {first.message}{more}; "
            "fix the file, writes are refused until it validates"
        )
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
    return Contract(
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
