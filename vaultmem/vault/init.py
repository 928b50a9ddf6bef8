"""Create a vault: copy the template, make the git repository, commit the starting state."""

from __future__ import annotations

import shutil
from pathlib import Path

from vaultmem.errors import VaultError
from vaultmem.resources import vault_template
from vaultmem.vault.history import GitRepo


def init_vault(root: Path, git_dir: Path | None = None) -> tuple[Path, bool]:
    """Create (or complete) a vault at ``root``; return its path and whether anything was created.

    An existing folder of notes is kept as it is: template files are only added where missing, and
    an existing repository is reused. ``git_dir`` keeps the repository outside the vault, which is
    what a Dropbox or Google Drive vault needs.
    """
    root = root.expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise VaultError(f"{root} exists and is not a folder; choose another path for the vault")
    created = False
    template = vault_template()
    for source in sorted(template.rglob("*")):
        rel = source.relative_to(template)
        target = root / rel
        if source.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            created = True
    repo = GitRepo(root)
    if not repo.is_repo():
        if git_dir is not None:
            git_dir = git_dir.expanduser().resolve()
            if git_dir == root or root in git_dir.parents:
                raise VaultError(f"--git-dir {git_dir} must be outside the vault {root}")
            git_dir.parent.mkdir(parents=True, exist_ok=True)
        GitRepo.init(root, git_dir)
        created = True
    repo.commit_all_pending("vaultmem: create the vault")
    return root, created
