"""A vault with folders nested deeper than Python's recursion limit (a runaway copy, a sync loop):
the start reads it, the note at the bottom is found, and the watcher watches the rest."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vaultmem.config import Settings
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.memory import Memory, SearchRequest
from vaultmem.vault.layout import VaultLayout

DEPTH = sys.getrecursionlimit() + 200


def nest(root: Path, depth: int, name: str, text: bytes) -> str:
    """``depth`` folders ``a`` one in another under ``root`` with the file ``name`` at the bottom,
    made by descriptor (the whole path is longer than the system lets one name); its vault path."""
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("a", dir_fd=fd)
            inner = os.open("a", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        out = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, text)
        os.close(out)
    finally:
        os.close(fd)
    return "a/" * depth + name


@pytest.fixture
def deep_tree(tmp_path: Path) -> Iterator[Path]:
    """A folder to nest in, removed by ``rm -rf`` (shutil.rmtree, pytest's clean-up, recurses)."""
    root = tmp_path / "deep"
    root.mkdir()
    yield root
    subprocess.run(["rm", "-rf", str(root)], check=True)


def test_the_walk_reads_a_vault_nested_deeper_than_pythons_recursion_limit(deep_tree: Path) -> None:
    """The walk is a loop over a stack, not a call per level (a walk of nested generators raised
    RecursionError here, and the start with it)."""
    rel = nest(deep_tree, DEPTH, "deep.md", b"the deepest note")
    assert [r for r, _st in VaultLayout(deep_tree).iter_note_paths()] == [rel]


def test_a_daemon_starts_on_a_deep_vault_and_watches_everything_else(
    vault: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """watchdog cannot watch the deep folder (its walk recurses on Python 3.11): the start says
    so and goes on; the deep note is found, and a hand edit elsewhere is indexed as usual."""
    (vault / "runaway").mkdir()
    rel = nest(vault / "runaway", DEPTH, "kiln.md", b"# Kiln\nThe kiln fires at cone six.\n")
    settings = Settings.resolve(vault, durable=False, commit_quiet_period=0.2)
    memory = Memory(settings, embedder=FakeEmbedder())
    try:
        memory.reconcile()
        with caplog.at_level(logging.WARNING, logger="vaultmem.sync.watcher"):
            memory.start_watching()
        too_deep = [r.getMessage() for r in caplog.records if "nested too deep" in r.getMessage()]
        if sys.version_info < (3, 12):  # os.walk recurses there (a loop from 3.12: watched then)
            assert too_deep and "runaway" in too_deep[0]
        assert [h["slug"] for h in memory.search(SearchRequest("kiln cone"))["results"]][:1] == ["kiln"]
        assert rel.endswith("/kiln.md")
        (vault / "memory" / "semantic" / "glaze.md").write_text(
            "---\ntitle: Glaze\n---\nThe celadon glaze needs a reduction firing.\n", encoding="utf-8"
        )
        deadline = time.monotonic() + 20
        while not any(h["slug"] == "glaze" for h in memory.search(SearchRequest("celadon glaze"))["results"]):
            assert time.monotonic() < deadline, "the watcher did not index the hand edit"
            time.sleep(0.05)
    finally:
        memory.close()
        subprocess.run(["rm", "-rf", str(vault / "runaway")], check=True)
