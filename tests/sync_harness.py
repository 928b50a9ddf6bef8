"""Machines that share one memory through a bare git remote in ``tmp_path`` (issue 17).

``Cluster`` makes the remote and clones vaults from it: the laptop keeps its git directory in the
vault, the desktop keeps it outside (``--separate-git-dir``, as for a Dropbox vault). Each machine
writes through a real ``Memory`` (real write path, real commits) and by hand (plain files),
and syncs with ``VaultSync``.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import START, FakeClock, git, snapshot
from vaultmem.config import Settings
from vaultmem.memory import Memory
from vaultmem.vault.history import GitRepo
from vaultmem.vault.init import init_vault
from vaultmem.vault.remote import SyncReport, VaultSync, clone_vault

MARKERS = (b"<<<<<<<", b"=======", b">>>>>>>", b"|||||||")


@dataclass
class Machine:
    name: str
    root: Path
    clock: FakeClock
    services: list[Memory] = field(default_factory=list)

    @property
    def repo(self) -> GitRepo:
        return GitRepo(self.root)

    def service(self) -> Memory:
        """A service on this vault (opened afresh, so its catalog reads what the last sync brought)."""
        for old in self.services:
            old.close()
        self.services = [Memory(Settings.resolve(self.root, durable=False), clock=self.clock, index=False)]
        return self.services[0]

    def append(self, content: str, kind: str = "reference", **kwargs: Any) -> dict[str, Any]:
        service = self.services[-1] if self.services else self.service()
        return service.append(content, kind, **kwargs)

    def sync(self, **kwargs: Any) -> SyncReport:
        report = VaultSync(self.repo, **kwargs).sync()
        assert report.ok, report.errors
        return report

    def write(self, rel: str, data: bytes | str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        return path

    def read(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()

    def close(self) -> None:
        for service in self.services:
            service.close()
        self.services = []


class Cluster:
    """A bare remote and the machines cloned from it."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.remote = tmp_path / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(self.remote)], check=True)
        self.machines: list[Machine] = []

    def first(self, name: str = "laptop") -> Machine:
        """The machine that starts the memory and pushes it to the empty remote."""
        root, _ = init_vault(self.tmp / name)
        GitRepo(root).git("remote", "add", "origin", str(self.remote))
        machine = Machine(name, root, FakeClock(START))
        machine.sync()
        self.machines.append(machine)
        return machine

    def clone(self, name: str = "desktop", *, separate_git_dir: bool = True) -> Machine:
        git_dir = self.tmp / f"{name}.git" if separate_git_dir else None
        repo = clone_vault(str(self.remote), self.tmp / name, git_dir=git_dir)
        machine = Machine(name, repo.work_tree, FakeClock(START))
        self.machines.append(machine)
        return machine

    def settle(self, rounds: int = 4) -> None:
        """Sync every machine in turn until a whole pass brings nothing in and sends nothing out."""
        for _ in range(rounds):
            reports = [m.sync() for m in self.machines]
            if all(not r.incoming and not r.pushed_commits for r in reports):
                return
        raise AssertionError(f"no quiet pass after {rounds} rounds of sync")

    def close(self) -> None:
        for machine in self.machines:
            machine.close()


def tree(machine: Machine) -> dict[str, bytes]:
    return snapshot(machine.root)


def notes_with_markers(machine: Machine) -> list[str]:
    return [
        rel
        for rel, data in tree(machine).items()
        if rel.endswith(".md") and any(line.startswith(MARKERS) for line in data.splitlines())
    ]


def fsck(git_dir_or_root: Path) -> str:
    """``git fsck --full --strict``'s complaints (empty when clean). Dangling objects are not
    complaints: every merge leaves a few (git's own AUTO_MERGE tree, the virtual merge bases)."""
    result = subprocess.run(
        ["git", "fsck", "--full", "--strict", "--no-progress", "--no-dangling"],
        cwd=git_dir_or_root, capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return "\n".join(
        line
        for line in (result.stdout + result.stderr).splitlines()
        if line and not line.startswith("Checking")
    )


def status(machine: Machine) -> str:
    return git(machine.root, "status", "--porcelain", "--untracked-files=all")
