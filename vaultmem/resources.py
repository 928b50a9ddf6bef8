"""Files vaultmem ships beside its code: the filing contract, its schema and the vault template."""

from __future__ import annotations

import os
from pathlib import Path

from vaultmem.errors import VaultmemError


def project_root() -> Path:
    """The directory holding ``contracts/`` and ``vault-template/``.

    ``VAULTMEM_RESOURCES`` overrides it; otherwise it is the source tree the package runs from
    (vaultmem is installed editable by ``make install``).
    """
    override = os.environ.get("VAULTMEM_RESOURCES")
    root = Path(override) if override else Path(__file__).resolve().parent.parent
    if not (root / "contracts" / "filing.yaml").is_file():
        raise VaultmemError(
            f"vaultmem's shipped files are missing under {root} (contracts/filing.yaml); reinstall "
            "vaultmem from its source tree with `make install`, or set VAULTMEM_RESOURCES"
        )
    return root


def shipped_contract() -> Path:
    return project_root() / "contracts" / "filing.yaml"


def contract_schema() -> Path:
    return project_root() / "contracts" / "filing.schema.json"


def vault_template() -> Path:
    return project_root() / "vault-template"
