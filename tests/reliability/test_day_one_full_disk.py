"""A full disk under the state directory (issue 13, item 20): an append is still acknowledged (the
note is safe in the vault and in git), health says which notes the index missed, and once space
returns the daemon writes them again by itself, without a restart or a reindex."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import lancedb.merge
import lancedb.table
import pytest
from conftest import git
from graph_wire import Wire
from mcp_harness import Lines, mcp_client, running_daemon, stdio_env, structured, wait_for

from vaultmem.server.daemon import Daemon

VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))


class FullDisk:
    """Makes LanceDB's writes fail as a full disk makes them fail (ENOSPC), while ``full`` is set:
    the seam where the index writes, below vaultmem's own code."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.full = False
        self.refused = 0
        real_add = lancedb.table.AsyncTable.add
        real_merge = lancedb.merge.LanceMergeInsertBuilder.execute

        async def add(table: Any, *args: Any, **kwargs: Any) -> Any:
            self._check()
            return await real_add(table, *args, **kwargs)

        def merge(builder: Any, *args: Any, **kwargs: Any) -> Any:
            self._check()
            return real_merge(builder, *args, **kwargs)

        monkeypatch.setattr(lancedb.table.AsyncTable, "add", add)
        monkeypatch.setattr(lancedb.merge.LanceMergeInsertBuilder, "execute", merge)

    def _check(self) -> None:
        if self.full:
            self.refused += 1
            raise OSError(errno.ENOSPC, f"LanceError(IO): {os.strerror(errno.ENOSPC)}")


@pytest.fixture
def daemon(vault: Path, tmp_path: Path) -> Iterator[Daemon]:
    with running_daemon(vault, tmp_path / "token") as running:
        yield running


def checks(wire: Wire) -> dict[str, dict[str, Any]]:
    report = wire.ok("memory_status", action="health", include_details=True)["item"]
    return {c["name"]: c for c in report["checks"]}


def found(wire: Wire, query: str, note_id: str) -> bool:
    hits = structured(wire.call("memory_search", query=query))["results"]
    return any(h["id"] == note_id for h in hits)


def test_a_note_whose_index_write_failed_on_a_full_disk_is_indexed_once_space_returns(
    daemon: Daemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13.20: the note stayed missing from search after space was freed (index_missing 4)."""
    wire, vault = Wire(daemon), daemon.settings.vault
    disk = FullDisk(monkeypatch)
    first = structured(wire.call("memory_append", content="The kiln fires at cone six.", kind="reference"))
    assert found(wire, "kiln cone six", first["id"])
    disk.full = True
    note = structured(wire.call("memory_append", content="Glazes mature at cone ten.", kind="reference"))
    assert note["deduplicated"] is False  # acknowledged: the note is in the vault
    assert not found(wire, "glazes mature cone ten", note["id"])  # a search waits for the write
    assert disk.refused >= 1
    report = checks(wire)
    path = report["index_missing"]["details"][0]["path"]
    assert report["index_write_failures"]["count"] == 1
    assert report["index_write_failures"]["details"][0]["path"] == path
    assert "No space left on device" in report["index_write_failures"]["details"][0]["problem"]
    assert (vault / path).is_file()
    disk.full = False  # space freed: no restart, no reindex
    wait_for(lambda: found(wire, "glazes mature cone ten", note["id"]), timeout=30)
    report = checks(wire)
    assert report["index_write_failures"]["ok"] and report["index_missing"]["ok"]
    assert note["id"] in git(vault, "log", "--format=%B")


def _tmpfs_available(where: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    where.mkdir(parents=True, exist_ok=True)
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "mount", "-t", "tmpfs", "-o", "size=1m",
         "tmpfs", str(where)],
        capture_output=True, check=False,
    )  # fmt: skip
    return probe.returncode == 0


#: Runs inside a user and mount namespace: a small tmpfs as the state directory, the daemon on it,
#: and commands on stdin to fill the disk and to free it again.
_SUPERVISOR = r"""
import os, signal, subprocess, sys
vaultmem, vault, state = sys.argv[1:4]
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", state], check=True)
server = subprocess.Popen(
    [vaultmem, "serve", "--vault", vault, "--state-dir", state, "--port", "0"], stdin=subprocess.DEVNULL
)
filler = os.path.join(state, "filler")
for line in sys.stdin:
    if line.strip() == "fill":
        with open(filler, "ab", buffering=0) as out:  # unbuffered: closing it writes nothing more
            try:
                while True:
                    out.write(b"\0" * 65536)
                    out.flush()
            except OSError:
                pass
        print("filled", flush=True)
    elif line.strip() == "free":
        os.unlink(filler)
        print("freed", flush=True)
server.send_signal(signal.SIGTERM)
print(f"stopped {server.wait()}", flush=True)
"""


def test_a_real_full_disk_under_the_state_directory_through_vaultmem_serve(
    vault: Path, tmp_path: Path
) -> None:
    """The same through `vaultmem serve` on a real, full tmpfs (where the kernel lets an
    unprivileged user mount one in a namespace of its own)."""
    state = tmp_path / "state"
    if not _tmpfs_available(tmp_path / "probe"):
        pytest.skip("no unprivileged tmpfs here (unshare --user --mount)")
    state.mkdir()
    token_file = tmp_path / "token"
    env = stdio_env(VAULTMEM_EMBEDDER="fake", VAULTMEM_TOKEN_FILE=str(token_file))
    process = subprocess.Popen(
        ["unshare", "--user", "--map-root-user", "--mount",
         sys.executable, "-c", _SUPERVISOR, VAULTMEM, str(vault), str(state)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    output = Lines(process.stdout)
    try:
        url = output.until(r"MCP URL:\s+(\S+)").group(1)
        output.until(r"Stop with Ctrl-C")
        token = token_file.read_text(encoding="utf-8").strip()

        def call(tool: str, **arguments: Any) -> dict[str, Any]:
            async def run() -> dict[str, Any]:
                async with mcp_client(url, token) as client:
                    result = await client.call_tool(tool, arguments)
                    assert not result.is_error and result.structured_content is not None, result.content
                    return dict(result.structured_content)

            return anyio.run(run)

        def is_found(note_id: str) -> bool:
            return any(h["id"] == note_id for h in call("memory_search", query="glazes cone ten")["results"])

        def failures() -> int:
            report = call("memory_status", action="health", include_details=True)["result"]["item"]
            return next(c["count"] for c in report["checks"] if c["name"] == "index_write_failures")

        process.stdin.write("fill\n")
        process.stdin.flush()
        output.until("filled")
        note = call("memory_append", content="Glazes mature at cone ten.", kind="reference")
        assert not is_found(note["id"])
        assert failures() == 1
        process.stdin.write("free\n")
        process.stdin.flush()
        output.until("freed")
        wait_for(lambda: is_found(note["id"]), timeout=60)
        assert failures() == 0
    finally:
        if process.poll() is None:
            process.stdin.close()
            output.until(r"stopped \d+", timeout=60)
            process.wait(timeout=60)
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
        output.thread.join(timeout=30)
        process.stdout.close()
    assert note["id"] in git(vault, "log", "--format=%B")
