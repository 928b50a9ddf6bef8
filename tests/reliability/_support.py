"""Helpers for the reliability suite: a real `vaultmem serve` subprocess, and checks of the vault,
its git history and its index that every scenario ends with."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from layers import parts
from mcp_harness import Lines, mcp_client, stdio_env

from vaultmem.config import Settings
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.memory import Memory
from vaultmem.notes.frontmatter import parse
from vaultmem.server.token import read_token
from vaultmem.vault.atomic import TEMP_PREFIX
from vaultmem.vault.layout import VaultLayout

VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))


class ServeProcess:
    """``vaultmem serve`` on a free loopback port, with the fake embedder (instant start) unless
    ``fake_embedder`` is False (the benchmarks run the real model)."""

    def __init__(self, vault: Path, config_home: Path, *extra: str, fake_embedder: bool = True) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
        env.update(XDG_CONFIG_HOME=str(config_home))
        if fake_embedder:
            env["VAULTMEM_EMBEDDER"] = "fake"
        self.process = subprocess.Popen(
            [VAULTMEM, "serve", "--vault", str(vault), "--port", "0", *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        assert self.process.stdout is not None
        self.output = Lines(self.process.stdout)
        try:
            self.url = self.output.until(r"MCP URL:\s+(\S+)").group(1)
            # Not printed to a pipe (item 10 of issue 13): read from the file the banner names.
            token = read_token(Path(self.output.until(r"token file:\s+(.+?)\s*$").group(1)))
            assert token is not None
            self.token = token
            self.output.until(r"Stop with Ctrl-C")
        except BaseException:
            self.kill()
            raise

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs (the crash every acknowledged write must survive)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self._reap()

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM and wait: the clean shutdown (watcher stopped, commits flushed)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=timeout)
        self._reap()
        return code

    def _reap(self) -> None:
        self.process.wait(timeout=60)
        self.output.thread.join(timeout=30)
        assert self.process.stdout is not None
        self.process.stdout.close()


# -- checks ------------------------------------------------------------------------------------


def git(root: Path, *args: str, check: bool = True) -> str:
    result = subprocess.run(
        ["git", "-c", "core.quotepath=off", *args], cwd=root, capture_output=True, text=True, check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {result.stderr}")
    return result.stdout


def temp_files(vault: Path) -> list[str]:
    """vaultmem temp files anywhere under the vault (state directory included, .git excluded)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(vault):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        found += [os.path.join(dirpath, n) for n in filenames if n.startswith(TEMP_PREFIX)]
    return found


def notes_by_id(vault: Path) -> dict[str, tuple[str, dict[str, Any], str]]:
    """Every note in the vault with an id: id -> (relative path, frontmatter, body)."""
    layout = VaultLayout(vault)
    out: dict[str, tuple[str, dict[str, Any], str]] = {}
    for rel, _st in layout.iter_note_paths():
        text = (vault / rel).read_text(encoding="utf-8")
        note = parse(text)
        if note.meta.get("id"):
            out[str(note.meta["id"])] = (rel, note.meta, note.body)
    return out


def assert_no_half_notes(vault: Path) -> None:
    """Every note file is non-empty and parses with a closed frontmatter block."""
    layout = VaultLayout(vault)
    for rel, st in layout.iter_note_paths():
        assert st.st_size > 0, f"{rel} is empty"
        text = (vault / rel).read_text(encoding="utf-8")
        note = parse(text)
        if text.startswith("---"):
            assert note.meta, f"{rel} has an unreadable frontmatter block: {text[:200]!r}"


def assert_git_clean_and_sound(vault: Path) -> None:
    fsck = subprocess.run(
        ["git", "fsck", "--full", "--strict"], cwd=vault, capture_output=True, text=True, check=False
    )
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert "error" not in fsck.stderr.lower(), fsck.stderr


def file_hashes(vault: Path) -> dict[str, str]:
    """(path, sha256 of the bytes) of every note file, computed without vaultmem's index code."""
    layout = VaultLayout(vault)
    return {
        rel: hashlib.sha256((vault / rel).read_bytes()).hexdigest() for rel, _st in layout.iter_note_paths()
    }


def indexed_vs_fresh(vault: Path, state_dir: Path, fresh_state: Path, queries: list[str]) -> None:
    """After a reconcile, the index on ``state_dir`` answers as one built from scratch: the same
    (path, hash) rows; the same strong hits for each query (a hit scoring 60% of the best in one is
    at least 40% in the other); and the same best hit wherever the fresh build has a clear winner
    (2% ahead). Near-ties and the weak tail may fall either way: an index that has taken updates keeps
    replaced rows in its BM25 statistics until its next compaction, and ranks among exact ties
    follow row order."""
    answers: list[list[tuple[dict[str, float], str | None]]] = []
    hashes: list[dict[str, str]] = []
    for state in (state_dir, fresh_state):
        settings = Settings.resolve(vault, state, durable=False)
        with Memory(settings, embedder=FakeEmbedder(), background_commits=False) as runtime:
            runtime.reconcile()  # starts folding rows the crashed runs left unindexed into FTS
            parts(runtime).index.wait_for_maintenance()
            hashes.append(parts(runtime).index.path_hashes())
            per_query = []
            for q in queries:
                hits = parts(runtime).index.search(q, k=500).hits
                top = hits[0].score if hits and hits[0].score > 0 else 1.0
                clear = len(hits) == 1 or (len(hits) > 1 and hits[0].score > hits[1].score * 1.02)
                relative = {h.record.id: h.score / top for h in hits}
                per_query.append((relative, hits[0].record.id if clear else None))
            answers.append(per_query)
    assert hashes[0] == hashes[1]
    for query, got, fresh in zip(queries, answers[0], answers[1], strict=True):
        for one, other in ((got[0], fresh[0]), (fresh[0], got[0])):
            strong = [i for i, r in one.items() if r >= 0.6]
            assert all(other.get(i, 0.0) >= 0.4 for i in strong), (query, strong, other)
        if fresh[1] is not None:
            assert got[1] == fresh[1], query


# -- a person's vault, adopted through the CLI ----------------------------------------------------


def cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``vaultmem ARGS`` as a subprocess, configuration under ``config``, the fake embedder."""
    env = stdio_env(XDG_CONFIG_HOME=str(config), VAULTMEM_EMBEDDER="fake")
    return subprocess.run(
        [VAULTMEM, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def persons_vault(tmp_path: Path, files: dict[str, bytes]) -> Path:
    """A person's Obsidian vault of ``files`` (with a ``.obsidian/`` folder), adopted with
    ``vaultmem init`` (configuration under ``tmp_path / "config"``)."""
    vault = tmp_path / "notes"
    (vault / ".obsidian").mkdir(parents=True)
    for rel, data in files.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_bytes(data)
    init = cli(tmp_path / "config", "init", str(vault))
    assert init.returncode == 0, init.stderr
    return vault


async def call_tool(server: ServeProcess, tool: str, **arguments: Any) -> dict[str, Any]:
    """One tool call over MCP to ``server``; its structured answer (a graph tool's ``result``)."""
    async with mcp_client(server.url, server.token) as client:
        result = await client.call_tool(tool, arguments)
        assert not result.is_error, result.content
        answer = dict(result.structured_content or {})
        return answer.get("result", answer)  # the graph tools wrap theirs in `result`
