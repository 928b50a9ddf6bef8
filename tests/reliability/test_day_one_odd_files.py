"""The files a real vault holds besides notes (issue 13, items 1, 2 and 5): a name that is not UTF-8,
a named pipe or a socket called ``*.md``, a hand edit that breaks a note's YAML. Each is reported
(doctor, ``memory_status health``), never blocks a read, and everything else keeps working; what the
person did is committed to git like any other hand edit."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from _support import ServeProcess
from conftest import git, hand_write
from graph_wire import Wire
from layers import watcher
from mcp_harness import mcp_client, running_daemon, stdio_env, structured, wait_for

from vaultmem.errors import MalformedNote
from vaultmem.server.daemon import Daemon
from vaultmem.vault.layout import VaultLayout
from vaultmem.vault.note_files import read_note

VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))
#: ``memory/semantic/café.md`` with the é in Latin-1: a name that is not valid UTF-8.
LATIN1_NAME = os.fsdecode(b"caf\xe9.md")
LATIN1_SHOWN = "memory/semantic/caf\\xe9.md"
NOTE = "---\ntitle: Espresso ratio\nkind: preference\n---\nOne to two, eighteen grams in.\n"


def cli(vault: Path, config: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``vaultmem ARGS --vault VAULT`` as a person runs it (fake embedder: no model load)."""
    env = stdio_env(XDG_CONFIG_HOME=str(config), VAULTMEM_EMBEDDER="fake")
    return subprocess.run(
        [VAULTMEM, *args, "--vault", str(vault)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def daemon(vault: Path, tmp_path: Path) -> Iterator[Daemon]:
    with running_daemon(vault, tmp_path / "token", commit_quiet_period=0.2, rescan_interval=0.5) as running:
        yield running


def health(wire: Wire) -> dict[str, Any]:
    report = wire.ok("memory_status", action="health", include_details=True)["item"]
    return {c["name"]: c for c in report["checks"]} | {"status": report["status"]}


def search_slugs(wire: Wire, query: str) -> list[str]:
    result = wire.call("memory_search", query=query)
    return [hit["slug"] for hit in structured(result)["results"]]


# -- item 1: a file name that is not valid UTF-8 ------------------------------------------------------


def test_a_file_name_that_is_not_utf8_is_reported_by_doctor_and_the_cli_keeps_working(
    vault: Path, tmp_path: Path
) -> None:
    """Issue 13.1: `search`, `append` and `doctor` used to exit 1 with UnicodeEncodeError."""
    hand_write(vault, f"memory/semantic/{LATIN1_NAME}", "hi\n")
    config = tmp_path / "config"
    appended = cli(vault, config, "append", "The kiln fires at 1240 degrees.", "--kind", "reference")
    assert appended.returncode == 0, appended.stderr
    found = cli(vault, config, "search", "kiln degrees", "--json")
    assert found.returncode == 0, found.stderr
    assert [h["slug"] for h in json.loads(found.stdout)["results"]][:1] == ["the-kiln-fires-at-1240-degrees"]
    doctor = cli(vault, config, "doctor", "--json")
    assert doctor.returncode == 1, doctor.stderr  # not ok: there is something to report
    report = json.loads(doctor.stdout)
    assert list(report["skipped"]) == [LATIN1_SHOWN]
    assert "not valid UTF-8" in report["skipped"][LATIN1_SHOWN]
    human = cli(vault, config, "doctor")
    assert LATIN1_SHOWN in human.stdout and "rename" in human.stdout
    for run in (appended, found, doctor, human):
        assert "Traceback" not in run.stderr
    # git is the audit trail of the person's file too: committed at start, under its own bytes.
    tracked = subprocess.run(
        ["git", "-c", "core.quotepath=off", "ls-files", "-z"], cwd=vault, capture_output=True, check=True
    ).stdout
    assert b"memory/semantic/caf\xe9.md" in tracked.split(b"\0")


def test_a_daemon_keeps_watching_after_a_file_whose_name_is_not_utf8_appears(daemon: Daemon) -> None:
    """Issue 13.1: a running daemon's watcher died; health now lists the file, the rest goes on."""
    wire = Wire(daemon)
    vault = daemon.settings.vault
    hand_write(vault, f"memory/semantic/{LATIN1_NAME}", "hi\n")
    wait_for(lambda: health(wire)["skipped_files"]["count"] == 1)
    check = health(wire)["skipped_files"]
    assert check["details"][0]["path"] == LATIN1_SHOWN and check["severity"] == "warning"
    hand_write(vault, "memory/semantic/espresso-ratio.md", NOTE)  # the watcher still indexes
    wait_for(lambda: "espresso-ratio" in search_slugs(wire, "espresso ratio grams"))
    note = structured(wire.call("memory_append", content="Glaze at cone six.", kind="reference"))
    assert note["deduplicated"] is False
    wait_for(lambda: b"caf\xe9.md" in _git_bytes(vault, "log", "--name-only", "--format=%s"))
    assert "hand edit" in git(vault, "log", "--format=%s")


def _git_bytes(vault: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", "-c", "core.quotepath=off", *args], cwd=vault, capture_output=True, check=True
    ).stdout


# -- item 2: a named pipe, a socket, a symlink to a pipe ------------------------------------------------


def test_a_named_pipe_called_md_does_not_stop_serve_from_starting(vault: Path, tmp_path: Path) -> None:
    """Issue 13.2: `serve` blocked at start (never answered /health) on a FIFO named like a note."""
    os.mkfifo(vault / "memory" / "semantic" / "pipe.md")
    server = ServeProcess(vault, tmp_path / "config")
    try:

        async def session() -> dict[str, Any]:
            with anyio.fail_after(30):
                async with mcp_client(server.url, server.token) as client:
                    structured(
                        await client.call_tool(
                            "memory_append", {"content": "Pipes stay pipes.", "kind": "reference"}
                        )
                    )
                    result = await client.call_tool(
                        "memory_status", {"action": "health", "include_details": True}
                    )
                    assert result.structured_content is not None
                    return dict(result.structured_content["result"]["item"])

        report = anyio.run(session)
        skipped = next(c for c in report["checks"] if c["name"] == "skipped_files")
        assert skipped["details"][0]["path"] == "memory/semantic/pipe.md"
        assert "named pipe" in skipped["details"][0]["problem"]
    finally:
        assert server.stop() == 0


def test_a_pipe_appearing_while_the_daemon_runs_blocks_neither_the_rescan_nor_writes(
    daemon: Daemon,
) -> None:
    """Issue 13.2: at the next periodic rescan `memory_append` and health hung behind the pipe."""
    wire = Wire(daemon)
    vault = daemon.settings.vault
    watching = watcher(daemon.memory) if daemon.memory else None
    assert watching is not None
    os.mkfifo(vault / "memory" / "semantic" / "pipe.md")
    rescans = watching.rescans
    wait_for(lambda: watching.rescans >= rescans + 2)  # two periodic rescans walked past the pipe

    async def session() -> None:
        with anyio.fail_after(20):  # a blocked read would hold the write lock: this would time out
            async with mcp_client(daemon.url, daemon.token()) as client:
                structured(
                    await client.call_tool(
                        "memory_append", {"content": "Still writing.", "kind": "reference"}
                    )
                )

    anyio.run(session)
    assert health(wire)["skipped_files"]["details"][0]["path"] == "memory/semantic/pipe.md"
    assert "pipe.md" not in git(vault, "log", "--name-only", "--format=")  # nothing git could record


def test_sockets_and_symlinks_to_pipes_are_skipped_and_reported_by_doctor(
    vault: Path, tmp_path: Path
) -> None:
    semantic = vault / "memory" / "semantic"
    os.mkfifo(semantic / "pipe.md")
    os.symlink("pipe.md", semantic / "via-link.md")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(semantic / "sock.md"))
    try:
        hand_write(vault, "memory/semantic/espresso-ratio.md", NOTE)
        doctor = cli(vault, tmp_path / "config", "doctor", "--json", timeout=30)
    finally:
        listener.close()
    report = json.loads(doctor.stdout)
    assert report["notes"] == 1
    kinds = {path: why for path, why in report["skipped"].items()}
    assert "named pipe" in kinds["memory/semantic/pipe.md"]
    assert "named pipe" in kinds["memory/semantic/via-link.md"]
    assert "socket" in kinds["memory/semantic/sock.md"]


def test_reading_a_pipe_named_like_a_note_returns_at_once(vault: Path) -> None:
    """No read of the vault may block: a pipe swapped in after the walk is refused, not opened."""
    os.mkfifo(vault / "memory" / "semantic" / "pipe.md")
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            read_note(VaultLayout(vault), "memory/semantic/pipe.md")
            outcome.append(None)
        except BaseException as exc:  # recorded for the assertion below
            outcome.append(exc)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(timeout=5)
    assert outcome, "reading the pipe blocked"
    assert isinstance(outcome[0], MalformedNote) and "named pipe" in str(outcome[0])


def test_a_pipe_in_place_of_a_slot_file_is_an_error_not_a_hang(daemon: Daemon) -> None:
    wire = Wire(daemon)
    os.mkfifo(daemon.settings.vault / "desk" / "active_goals.md")

    async def session() -> str:
        with anyio.fail_after(20):
            async with mcp_client(daemon.url, daemon.token()) as client:
                result = await client.call_tool("memory_status", {"action": "slots"})
                return " ".join(getattr(b, "text", "") for b in result.content)

    assert "named pipe" in anyio.run(session)
    assert health(wire)["status"] in ("ok", "warning", "error")  # the daemon still answers


# -- item 5: a malformed hand edit ---------------------------------------------------------------------


def test_a_hand_edit_that_breaks_a_notes_yaml_is_committed_by_the_watcher(daemon: Daemon) -> None:
    """Issue 13.5: a malformed hand edit was committed only at the next start. It is committed by
    the watcher now, stays out of the index and is reported."""
    wire = Wire(daemon)
    vault = daemon.settings.vault
    rel = "memory/semantic/espresso-ratio.md"
    hand_write(vault, rel, NOTE)
    wait_for(lambda: "espresso-ratio" in search_slugs(wire, "espresso ratio grams"))
    wait_for(lambda: rel in git(vault, "log", "--name-only", "--format="))
    broken = "---\ntitle: [unclosed\n---\nOne to two, eighteen grams in.\n"
    hand_write(vault, rel, broken)
    new_rel = "memory/semantic/half-typed.md"
    hand_write(vault, new_rel, "---\nkind: : :\n---\nhalf a thought\n")
    wait_for(lambda: git(vault, "status", "--porcelain", "--untracked-files=all").strip() == "")
    assert git(vault, "show", f"HEAD:{rel}") == broken
    assert git(vault, "show", f"HEAD:{new_rel}") == "---\nkind: : :\n---\nhalf a thought\n"
    assert "espresso-ratio" not in search_slugs(wire, "espresso ratio grams")
    malformed = health(wire)["malformed_notes"]
    assert {d["path"] for d in malformed["details"]} == {rel, new_rel}
