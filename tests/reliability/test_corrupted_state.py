"""Scenario 6: corrupted derived state.

A LanceDB data file or manifest deleted, every manifest deleted, the scalar index files truncated,
the saved lexical postings garbled, the model marker changed, ``index.json`` garbled. Pass:
detected when the index opens, rebuilt from the vault, search answers equal those of a fresh
build, and the vault is untouched.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from _support import file_hashes, indexed_vs_fresh
from conftest import snapshot
from layers import parts

from vaultmem.config import Settings
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.memory import Memory

QUERIES = ["alpha topic", "alpha alpha alpha", "beta", "topic3", "deploy Tuesdays"]


def _notes(vault: Path) -> Path:
    return vault / ".vaultmem" / "index" / "lancedb" / "notes.lance"


def delete_data_files(vault: Path) -> None:
    for f in (_notes(vault) / "data").glob("*.lance"):
        f.unlink()


def delete_newest_manifest(vault: Path) -> None:
    manifests = sorted((_notes(vault) / "_versions").glob("*.manifest"), key=lambda p: p.stat().st_mtime_ns)
    manifests[-1].unlink()


def delete_every_manifest(vault: Path) -> None:
    for f in (_notes(vault) / "_versions").glob("*.manifest"):
        f.unlink()


def truncate_indices(vault: Path) -> None:
    files = [f for f in (_notes(vault) / "_indices").rglob("*") if f.is_file()]
    assert files
    for f in files:
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])


def garble_lexical_state(vault: Path) -> None:
    state = vault / ".vaultmem" / "index" / "lexical.state"
    raw = state.read_bytes()
    state.write_bytes(raw[: len(raw) // 2] + b"\xff" * 64)


def change_model_marker(vault: Path) -> None:
    marker = vault / ".vaultmem" / "index" / "index.json"
    meta = json.loads(marker.read_text(encoding="utf-8"))
    marker.write_text(json.dumps({**meta, "model_id": "some-other-model"}), encoding="utf-8")


def garble_marker(vault: Path) -> None:
    (vault / ".vaultmem" / "index" / "index.json").write_text("{not json", encoding="utf-8")


DAMAGE: dict[str, Callable[[Path], None]] = {
    "data files deleted": delete_data_files,
    "newest manifest deleted": delete_newest_manifest,
    "every manifest deleted": delete_every_manifest,
    "scalar indices truncated": truncate_indices,
    "lexical postings garbled": garble_lexical_state,
    "model marker changed": change_model_marker,
    "index.json garbled": garble_marker,
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_derived_state_is_rebuilt_from_the_vault(vault: Path, tmp_path: Path, damage: str) -> None:
    settings = Settings.resolve(vault, durable=False)
    with Memory(settings, embedder=FakeEmbedder(), background_commits=False) as runtime:
        for i in range(40):  # distinct term counts: a clear best hit for each query
            text = f"note {i}: " + "alpha " * (i + 1) + "beta " * (40 - i) + f"topic{i % 5}"
            runtime.append(text, "reference")
        runtime.append("We deploy on Tuesdays.", "decision")
        runtime.reconcile()
    vault_before = snapshot(vault)
    DAMAGE[damage](vault)
    with Memory(settings, embedder=FakeEmbedder(), background_commits=False) as runtime:
        runtime.reconcile()
        assert parts(runtime).index.path_hashes() == file_hashes(vault)
        # After a silent rollback (the newest manifest lost) the re-added rows are outside the
        # full-text index: the reconcile starts the maintenance that folds them in.
        parts(runtime).index.wait_for_maintenance()
    indexed_vs_fresh(vault, vault / ".vaultmem", tmp_path / "fresh", QUERIES)
    assert snapshot(vault) == vault_before  # the vault is untouched
