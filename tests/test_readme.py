"""The README's commands work as written (issue 16, item 6): its shell blocks, run literally by bash
in a fresh home with nothing but the install's ``bin`` folder added to PATH, exit 0 at every line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mcp_harness import REPO

pytestmark = pytest.mark.model


def readme_block(heading: str) -> str:
    """The first ``sh`` block under the README's ``## <heading>``."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```sh\n(.*?)```", section, re.S)
    assert found, f"no sh block under '## {heading}'"
    return found.group(1)


def run_literally(script: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``script`` in a fresh bash (stop at the first failing line), HOME at ``home``, the system PATH."""
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": "C.UTF-8",
    }
    # The test's own interpreter must not leak into the PATH the README sets up: drop its bin folder.
    ours = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != ours)
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_readme_puts_vaultmem_on_path_as_it_says(tmp_path: Path) -> None:
    """The install block, from the checkout's folder; `make install` is what `make test` ran already,
    so it is up to date here and only says so."""
    block = readme_block("The `vaultmem` command")
    assert "make install" in block and "vaultmem --help" in block
    done = run_literally(block.replace("make install", "true  # make install", 1), tmp_path, REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "append" in done.stdout and "search" in done.stdout


def test_the_command_line_session_in_the_readme_runs_line_by_line(tmp_path: Path) -> None:
    """The "command line" block in order, in a fresh home: init, appends, captures, a search, the
    log and forget of the memory it appended, reindex, doctor, a second vault with its git outside."""
    block = readme_block("The command line")
    with_path = f'export PATH="{Path(sys.executable).parent}:$PATH"\n{block}'
    done = run_literally(with_path, tmp_path, tmp_path)
    assert done.returncode == 0, f"stdout:\n{done.stdout[-2000:]}\nstderr:\n{done.stderr[-2000:]}"
    assert "Port change" in done.stdout or "port-change" in done.stdout
    assert (tmp_path / "vaultmem-vault" / ".git").exists()
    assert (tmp_path / "notes" / "memory" / "filing.yaml").is_file()
    assert (tmp_path / ".vaultmem-git").is_dir()
