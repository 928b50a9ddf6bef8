"""A person's links as Obsidian reads them, in a vault adopted in place (found by a helper playing a
person whose vault links in every way Obsidian allows, 2026-12-03).

Through the real surfaces: the CLI as a subprocess (`vaultmem init`, `doctor`) and `vaultmem serve`
answering `memory_recall get` with its edges. Every file of the person's stays byte-identical.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mcp_harness import stdio_env

VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))


def cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = stdio_env(XDG_CONFIG_HOME=str(config), VAULTMEM_EMBEDDER="fake")
    return subprocess.run(
        [VAULTMEM, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def persons_vault(tmp_path: Path, files: dict[str, bytes]) -> Path:
    vault = tmp_path / "notes"
    (vault / ".obsidian").mkdir(parents=True)
    for rel, data in files.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_bytes(data)
    init = cli(tmp_path / "config", "init", str(vault))
    assert init.returncode == 0, init.stderr
    return vault


def unchanged(vault: Path, files: dict[str, bytes]) -> bool:
    return all((vault / rel).read_bytes() == data for rel, data in files.items())


def test_a_persons_related_property_to_a_note_not_written_yet_is_listed_without_failing(
    tmp_path: Path,
) -> None:
    # `related:` and `parent:` are common property names in a person's templates (and names of
    # vaultmem's typed links): a link to a note not written yet is Obsidian's idiom there too.
    files = {
        "Projects/Kitchen.md": b'---\nrelated:\n  - "[[Plumbing plan]]"\nparent: "[[Home]]"\n---\nRedo it.\n',
        "Home.md": b"Home.\n",
    }
    config = tmp_path / "config"
    vault = persons_vault(tmp_path, files)
    doctor = cli(config, "doctor", "--json", "--vault", str(vault))
    assert doctor.returncode == 0, doctor.stdout
    report = json.loads(doctor.stdout)
    assert report["dangling_links"] == []
    assert report["dangling_text_links"] == [{"path": "Projects/Kitchen.md", "target": "Plumbing plan"}]
    # A typed link to nothing in vaultmem's own folder is still a failure: vaultmem wrote it.
    own = vault / "Memory/memory/semantic/claim.md"
    own.parent.mkdir(parents=True, exist_ok=True)
    own.write_bytes(b'---\nid: 0b9a4d7e-4f3c-4c1e-9f00-000000000002\nsupports: ["[[Nothing]]"]\n---\nx\n')
    failing = json.loads(cli(config, "doctor", "--json", "--vault", str(vault)).stdout)
    assert failing["ok"] is False
    assert failing["dangling_links"] == [
        {"path": "Memory/memory/semantic/claim.md", "property": "supports", "target": "Nothing"}
    ]
    assert unchanged(vault, files)
