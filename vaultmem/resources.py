"""Files vaultmem ships beside its code: the filing contract, its schema and the vault template."""

from __future__ import annotations

import os
from pathlib import Path

from vaultmem.errors import VaultmemError


def project_root() -> Path:
    """The directory holding ``contracts/`` and ``vault-template/``.

    ``VAULTMEM_RESOURCES`` overrides it; otherwise it is the package's ``_data`` folder, whose two
    entries are links to the source tree's folders in a checkout (``make install`` installs it
    editable) and copies of them in a wheel (``python -m build`` follows the links).
    """
    override = os.environ.get("VAULTMEM_RESOURCES")
    root = Path(override) if override else Path(__file__).resolve().parent / "_data"
    if not (root / "contracts" / "filing.yaml").is_file():
        raise VaultmemError(
            f"vaultmem's shipped files are missing under {root} (contracts/filing.yaml); reinstall "
            "vaultmem (`make install` in its source tree, or `pip install vaultmem`), or set "
            "VAULTMEM_RESOURCES"
        )
    return root


def shipped_contract() -> Path:
    return project_root() / "contracts" / "filing.yaml"


def contract_schema() -> Path:
    return project_root() / "contracts" / "filing.schema.json"


def vault_template() -> Path:
    return project_root() / "vault-template"
