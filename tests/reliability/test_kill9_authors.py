"""An agent's write acknowledged before a ``kill -9`` and committed at the next start is committed
as the normal commit would have been: under the agent's name, with the tool's message (before,
vaultmem's generic "record changes found at start", since whose a pending file was was not kept)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
from _support import ServeProcess, assert_git_clean_and_sound, git, notes_by_id
from mcp_harness import mcp_client, structured, wait_for


def append(served: ServeProcess, content: str) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        async with mcp_client(served.url, served.token) as client:
            result = await client.call_tool("memory_append", {"content": content, "kind": "reference"})
            return structured(result)

    return anyio.run(run)


def last_commit(vault: Path, rel: str) -> tuple[str, str, str]:
    """(author name, author email, message) of the last commit of ``rel``."""
    name, email, message = git(vault, "log", "-1", "--format=%an%x00%ae%x00%B", "--", rel).split("\0", 2)
    return name, email, message.strip()


def test_a_write_pending_at_a_kill_9_is_committed_at_the_next_start_as_the_agents(
    vault: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config"
    served = ServeProcess(vault, config)
    try:
        first = append(served, "The boiler is serviced every October by the same engineer.")
        rel = notes_by_id(vault)[first["id"]][0]
        wait_for(lambda: git(vault, "status", "--porcelain") == "")
        normal = last_commit(vault, rel)
        assert normal[2].startswith("memory_append:"), normal
        # a person's git holds the index (kept open: a live lock), so the next commit waits
        lock = vault / ".git" / "index.lock"
        handle = lock.open("x", encoding="utf-8")
        try:
            second = append(served, "The water softener takes a bag of salt each month.")
            rel2 = notes_by_id(vault)[second["id"]][0]
            assert git(vault, "status", "--porcelain", "--", rel2).startswith(
                "??"
            )  # acknowledged, not committed
            served.kill()
        finally:
            handle.close()
            os.unlink(lock)
        served = ServeProcess(vault, config)
        served.stop()
    finally:
        served.kill()
    assert git(vault, "status", "--porcelain") == ""
    name, email, message = last_commit(vault, rel2)
    assert (name, email) == normal[:2]
    subject, _, body = message.partition("\n")
    assert subject.startswith("memory_append:") and "record changes found at start" not in message
    assert f"id: {second['id']}" in body and f"path: {rel2}" in body
    assert_git_clean_and_sound(vault)


def test_a_pending_write_the_person_edited_before_the_next_start_is_not_committed_as_the_agents_alone(
    vault: Path, tmp_path: Path
) -> None:
    """The journal names the bytes each write left: a file the person changed after the kill (in
    Obsidian, before vaultmem ran again) holds their words too, and is committed as a change found
    at start, not under the agent's name and the tool's message; the one left as written still is."""
    config = tmp_path / "config"
    served = ServeProcess(vault, config)
    try:
        append(served, "The boiler is serviced every October by the same engineer.")
        wait_for(lambda: git(vault, "status", "--porcelain") == "")
        lock = vault / ".git" / "index.lock"
        handle = lock.open("x", encoding="utf-8")
        try:
            ids = [append(served, text)["id"] for text in ("Softener: salt.", "Gutters: November.")]
            served.kill()
            edited, kept = (notes_by_id(vault)[i][0] for i in ids)
        finally:
            handle.close()
            os.unlink(lock)
        with (vault / edited).open("a", encoding="utf-8") as f:
            f.write("\nMy own line: the blue bag, not the white one.\n")
        served = ServeProcess(vault, config)
        served.stop()
    finally:
        served.kill()
    assert git(vault, "status", "--porcelain") == ""
    message = last_commit(vault, edited)[2]
    assert not message.startswith("memory_append:") and "record changes found at start" in message, message
    assert "My own line" in git(vault, "show", f"HEAD:{edited}")
    assert last_commit(vault, kept)[2].startswith("memory_append:")
    assert_git_clean_and_sound(vault)
