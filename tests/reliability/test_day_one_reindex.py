"""`vaultmem reindex --full` beside a running daemon (issue 13, item 7): the daemon keeps searching
while the index is rebuilt, switches to the new one when it is done (with what it wrote meanwhile),
and health tells the truth when the index cannot be used."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import lancedb.query
import pytest
from _support import ServeProcess
from conftest import hand_write
from graph_wire import Wire
from mcp_harness import mcp_client, running_daemon, stdio_env, structured

from vaultmem.index import location
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.index.note_index import NoteIndex
from vaultmem.index.records import NoteRecord

VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))
NOTES = {
    "kiln": "The kiln fires at cone six and cools overnight.",
    "glaze": "Glazes mature at cone ten in the gas kiln.",
    "clay": "Porcelain clay shrinks about thirteen percent.",
}


class Client:
    """Calls a `vaultmem serve` process's tools, one MCP session per call."""

    def __init__(self, server: ServeProcess) -> None:
        self.server = server

    def call(self, tool: str, **arguments: Any) -> tuple[bool, Any]:
        """(is_error, structured content or error text)."""

        async def run() -> tuple[bool, Any]:
            with anyio.fail_after(60):
                async with mcp_client(self.server.url, self.server.token) as client:
                    result = await client.call_tool(tool, arguments)
            if result.is_error:
                return True, " ".join(getattr(b, "text", "") for b in result.content)
            return False, result.structured_content

        return anyio.run(run)

    def slugs(self, query: str) -> list[str]:
        failed, result = self.call("memory_search", query=query)
        assert not failed, result
        return [hit["slug"] for hit in result["results"]]

    def health(self) -> dict[str, Any]:
        failed, result = self.call("memory_status", action="health", include_details=True)
        assert not failed, result
        item = result["result"]["item"]
        return {"status": item["status"], **{c["name"]: c for c in item["checks"]}}


def reindex_full(vault: Path, config: Path) -> subprocess.CompletedProcess[str]:
    env = stdio_env(XDG_CONFIG_HOME=str(config), VAULTMEM_EMBEDDER="fake")
    return subprocess.run(
        [VAULTMEM, "reindex", "--full", "--vault", str(vault)],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


def test_the_daemon_keeps_searching_after_a_full_reindex_by_another_process(
    vault: Path, tmp_path: Path
) -> None:
    """Issue 13.7: afterwards every daemon search failed with lance "Not found" until a restart."""
    for name, text in NOTES.items():
        hand_write(vault, f"memory/semantic/{name}.md", f"---\ntitle: {name}\n---\n{text}\n")
    server = ServeProcess(vault, tmp_path / "config")
    try:
        client = Client(server)
        assert "kiln" in client.slugs("kiln cone six")
        old = location.current(vault / ".vaultmem")
        done = reindex_full(vault, tmp_path / "config")
        assert done.returncode == 0, done.stderr
        assert "3 notes" in done.stdout
        for _ in range(3):  # every search, not only the first after the switch
            assert "kiln" in client.slugs("kiln cone six")
            assert "glaze" in client.slugs("glazes mature")
        assert location.current(vault / ".vaultmem") != old  # built beside, not in place
        failed, written = client.call("memory_append", content="Bisque at cone 04.", kind="reference")
        assert not failed, written
        assert written["slug"] in client.slugs("bisque cone")
        health = client.health()
        assert health["status"] == "ok", health
        assert health["index_missing"]["ok"] and health["index_usable"]["ok"]
    finally:
        assert server.stop() == 0
    assert not old.exists()  # deleted by its last user, the daemon, once it let go of it


def test_a_note_written_while_another_process_rebuilds_the_index_is_not_lost_from_search(
    vault: Path, tmp_path: Path
) -> None:
    """The rebuild reads the vault at its start: what the daemon writes meanwhile reaches the new
    index when the daemon switches to it."""
    hand_write(vault, "memory/semantic/kiln.md", f"---\ntitle: kiln\n---\n{NOTES['kiln']}\n")
    server = ServeProcess(vault, tmp_path / "config")
    try:
        client = Client(server)
        env = stdio_env(XDG_CONFIG_HOME=str(tmp_path / "config"), VAULTMEM_EMBEDDER="fake")
        # A rebuild that has built its folder but not switched yet: the daemon writes meanwhile.
        state = vault / ".vaultmem"
        script = (
            "import sys\n"
            "from vaultmem.config import Settings\n"
            "from vaultmem.memory import Memory\n"
            "import vaultmem.index.location as location\n"
            "real = location.point_at\n"
            "def slow(state_dir, folder):\n"
            "    print('built', flush=True)\n"
            "    sys.stdin.readline()\n"
            "    real(state_dir, folder)\n"
            "location.point_at = slow\n"
            "with Memory(Settings.resolve(sys.argv[1]), index=False, background_commits=False) as m:\n"
            "    m.reindex(full=True)\n"
            "print('switched', flush=True)\n"
        )
        rebuild = subprocess.Popen(
            [sys.executable, "-c", script, str(vault)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        assert rebuild.stdin is not None and rebuild.stdout is not None
        assert rebuild.stdout.readline() == "built\n"
        failed, written = client.call("memory_append", content="Bisque at cone 04.", kind="reference")
        assert not failed, written
        assert written["slug"] in client.slugs("bisque cone")  # the old index, still in use
        rebuild.stdin.write("go\n")
        rebuild.stdin.flush()
        assert rebuild.stdout.readline() == "switched\n"
        assert rebuild.wait(timeout=60) == 0
        rebuild.stdin.close()
        rebuild.stdout.close()
        assert location.current(state).name != "index"
        assert written["slug"] in client.slugs("bisque cone")  # in the new index too
        assert "kiln" in client.slugs("kiln cone six")
        assert client.health()["index_missing"]["ok"]
    finally:
        assert server.stop() == 0


def _note(n: int) -> NoteRecord:
    return NoteRecord(
        id=f"0190a000-0000-7000-8000-{n:012d}", path=f"notes/n{n}.md", slug=f"n{n}", title=f"Note {n}",
        kind="note", status="active", project=None, tags=(), text=f"note {n}", content_hash=f"h{n}",
        created="2026-12-01T10:00:00+00:00", updated="2026-12-01T10:00:00+00:00",
    )  # fmt: skip


def test_a_read_while_the_switch_is_reconciled_waits_for_it(tmp_path: Path) -> None:
    """The case above failed once on CI: another of the daemon's threads noticed the switch first
    and ran the reconcile, and a search that came meanwhile answered from the new folder before the
    reconcile had queued the note written during the rebuild. Here the reconcile is slow on purpose."""
    state = tmp_path / "state"
    index = NoteIndex(location.current(state), FakeEmbedder(), follow=state)
    try:
        folder, held = location.new_folder(state)  # another process's rebuild, without note 2
        rebuilt = NoteIndex(folder, FakeEmbedder())
        rebuilt.upsert([_note(1)])
        rebuilt.close()
        location.release(held)
        reconciling = threading.Event()

        def reconcile() -> None:  # what the keeper's reconcile does: the note the folder lacks
            reconciling.set()
            time.sleep(0.5)
            index.upsert([_note(2)])
            assert index.get(_note(2).id) is not None  # its own reads pass

        index.on_switch = reconcile
        location.point_at(state, folder)
        time.sleep(location.Follower.CHECK_EVERY_S * 2)
        first = threading.Thread(target=index.count)
        first.start()
        assert reconciling.wait(10)
        assert index.get(_note(2).id) is not None  # None before: the read did not wait
        assert index.get(_note(1).id) is not None
        first.join(10)
    finally:
        index.close()


def test_health_says_so_when_the_index_cannot_be_searched(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13.7: health said ok while every search failed. Here LanceDB's reads fail as they did
    then (its files gone under the daemon), at the seam where the index reads them. A search still
    answers (both legs are in memory since layout 5), but the next write to the table would fail:
    health says so, with the remedy."""
    hand_write(vault, "memory/semantic/kiln.md", f"---\ntitle: kiln\n---\n{NOTES['kiln']}\n")
    broken = {"on": False}
    real = lancedb.query.AsyncQueryBase.to_arrow

    async def to_arrow(query: Any, *args: Any, **kwargs: Any) -> Any:
        if broken["on"]:
            raise RuntimeError("lance error: Not found: notes.lance/data/0b1e.lance")
        return await real(query, *args, **kwargs)

    monkeypatch.setattr(lancedb.query.AsyncQueryBase, "to_arrow", to_arrow)
    with running_daemon(vault, tmp_path / "token") as daemon:
        wire = Wire(daemon)
        assert _checks(wire)["index_usable"]["ok"]
        broken["on"] = True
        hits = structured(wire.call("memory_search", query="kiln cone six"))["results"]
        assert len(hits) == 1 and "kiln fires" in hits[0]["snippet"]
        report = wire.ok("memory_status", action="health", include_details=True)["item"]
        usable = {c["name"]: c for c in report["checks"]}["index_usable"]
        assert report["status"] == "error"
        assert not usable["ok"] and usable["severity"] == "error"
        assert "Not found" in usable["details"][0]["problem"]
        assert "reindex --full" in usable["remediation"]
        broken["on"] = False
        assert _checks(wire)["index_usable"]["ok"]


def _checks(wire: Wire) -> dict[str, dict[str, Any]]:
    report = wire.ok("memory_status", action="health", include_details=True)["item"]
    return {c["name"]: c for c in report["checks"]}
