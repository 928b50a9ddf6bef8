"""A person renames or moves their notes (found by the lead playing a person tidying an adopted vault
in Obsidian, 2026-12-04).

A note without an ``id`` key is answered under an id derived from its path, so a rename gave it a
new id, and every id a tool had answered before named nothing: `get`, `update` and `link` of it were
404s, whatever an agent had kept. Now the id it was answered under still finds it, while the daemon
runs, after a restart, and for a rename made while nothing ran. A rename keeps the file's bytes and
its modification time, which is how the renamed note is told from a twin of the same bytes (a note
of one template): a deleted note's twin never takes its id.

Through `vaultmem serve` and an MCP client, the files renamed on disk as Obsidian and a file manager do.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from _support import ServeProcess, cli, persons_vault
from mcp_harness import mcp_client

KETTLE = b"# Kettle\n\nkettlemarker: descale it monthly with citric acid.\n"
TOASTER = b"# Toaster\n\ntoastermarker: crumbs tray out every Sunday.\n"
TEMPLATE = b"# Weekly review\n\ntemplatemarker: what went well, what did not.\n"
FILES = {
    "Kettle.md": KETTLE,
    "Journal/Boiling.md": b"Boiled water in the [[Kettle]].\n",
    "Templates/Review A.md": TEMPLATE,
    "Templates/Review B.md": TEMPLATE,
}


class Session:
    def __init__(self, client: Any) -> None:
        self.client = client

    async def answer(self, tool: str, **arguments: Any) -> tuple[bool, dict[str, Any]]:
        result = await self.client.call_tool(tool, arguments)
        got = dict(result.structured_content or {})
        return bool(result.is_error), got.get("result", got)

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        failed, got = await self.answer(tool, **arguments)
        assert not failed, got
        return got

    async def id_of(self, marker: str) -> list[str]:
        found = await self.call("memory_search", query=marker, limit=5)
        return [hit["id"] for hit in found["results"]]

    async def by_slug(self, marker: str) -> dict[str, str]:
        found = await self.call("memory_search", query=marker, limit=5)
        return {hit["slug"]: hit["id"] for hit in found["results"]}


def serve(server: ServeProcess, session: Any) -> None:
    async def run() -> None:
        async with mcp_client(server.url, server.token) as client:
            await session(Session(client))

    try:
        asyncio.run(run())
    finally:
        server.stop()


def test_the_id_a_persons_note_was_answered_under_finds_it_after_a_rename(tmp_path: Path) -> None:
    vault = persons_vault(tmp_path, FILES)
    os.utime(vault / "Templates/Review B.md", ns=(10**18, 10**18))  # the two reviews saved apart
    config = tmp_path / "config"
    ids: dict[str, str] = {}

    async def while_running(s: Session) -> None:
        (ids["kettle"],) = await s.id_of("kettlemarker")
        reviews = await s.by_slug("templatemarker")
        ids["review a"], ids["review b"] = reviews["Review A"], reviews["Review B"]
        (vault / "Appliances").mkdir()
        os.rename(vault / "Kettle.md", vault / "Appliances" / "Kettle.md")  # a move in Obsidian
        os.rename(vault / "Templates/Review A.md", vault / "Templates/Review old.md")

        async def moved() -> bool:
            reviews = await s.by_slug("templatemarker")
            kettles = await s.id_of("kettlemarker")  # the old row and the new one, for a moment
            return (
                len(kettles) == 1
                and kettles != [ids["kettle"]]
                and set(reviews) == {"Review old", "Review B"}
            )

        deadline = asyncio.get_running_loop().time() + 20
        while not await moved():
            assert asyncio.get_running_loop().time() < deadline, "the watcher never saw the move"
            await asyncio.sleep(0.1)
        (ids["kettle now"],) = await s.id_of("kettlemarker")
        got = await s.call("memory_recall", action="get", thought_id=ids["kettle"])
        assert got["item"]["id"] == ids["kettle now"]  # the note, under the id it has now
        assert "descale it monthly" in got["item"]["content"]
        made = await s.call("memory_store", action="create", content="The office kettle needs a filter")
        linked = await s.call(
            "memory_store", action="link", source_id=made["item"]["id"], target_id=ids["kettle"]
        )
        assert linked["item"]["target_id"] == ids["kettle now"]
        # two files hold those bytes: the renamed one is told from its twin by its time
        renamed = await s.call("memory_recall", action="get", thought_id=ids["review a"])
        assert renamed["item"]["id"] == (await s.by_slug("templatemarker"))["Review old"]
        # and a deleted note's twin never takes its id
        (vault / "Templates/Review B.md").unlink()
        deadline = asyncio.get_running_loop().time() + 20
        while "Review B" in await s.by_slug("templatemarker"):
            assert asyncio.get_running_loop().time() < deadline, "the watcher never saw the deletion"
            await asyncio.sleep(0.1)
        failed, refused = await s.answer("memory_recall", action="get", thought_id=ids["review b"])
        assert failed and "no thought has id" in str(refused), refused

    serve(ServeProcess(vault, config), while_running)
    # moved again while nothing ran (a file manager, a sync client), then a start
    (vault / "Kitchen").mkdir()
    os.rename(vault / "Appliances" / "Kettle.md", vault / "Kitchen" / "Kettle.md")

    async def after_restart(s: Session) -> None:
        (now,) = await s.id_of("kettlemarker")
        assert now not in (ids["kettle"], ids["kettle now"])
        for old in (ids["kettle"], ids["kettle now"]):
            got = await s.call("memory_recall", action="get", thought_id=old, include_edges=True)
            assert got["item"]["id"] == now
            assert [d["edge"]["type"] for d in got["item"]["downstream"]].count("related") == 1

    serve(ServeProcess(vault, config), after_restart)
    assert (vault / "Kitchen" / "Kettle.md").read_bytes() == KETTLE  # the person's files untouched
    assert (vault / "Templates/Review old.md").read_bytes() == TEMPLATE
    assert (vault / "Journal/Boiling.md").read_bytes() == FILES["Journal/Boiling.md"]


def test_the_id_a_persons_note_had_before_a_rename_still_finds_it_after_the_note_is_edited(
    tmp_path: Path,
) -> None:
    vault = persons_vault(tmp_path, {"Kettle.md": KETTLE})
    config = tmp_path / "config"
    ids: dict[str, str] = {}

    async def while_running(s: Session) -> None:
        (old,) = await s.id_of("kettlemarker")
        (vault / "Appliances").mkdir()
        os.rename(vault / "Kettle.md", vault / "Appliances" / "Kettle.md")
        deadline = asyncio.get_running_loop().time() + 20
        while len(kettles := await s.id_of("kettlemarker")) != 1 or kettles == [old]:  # both, a moment
            assert asyncio.get_running_loop().time() < deadline, "the watcher never saw the move"
            await asyncio.sleep(0.1)
        (now,) = kettles
        assert (await s.call("memory_recall", action="get", thought_id=old))["item"]["id"] == now
        # the person goes on writing the note at its new name, a minute later
        with open(vault / "Appliances" / "Kettle.md", "ab") as f:
            f.write(b"\nfiltermarker: change the filter every spring.\n")
        deadline = asyncio.get_running_loop().time() + 20
        while not await s.id_of("filtermarker"):
            assert asyncio.get_running_loop().time() < deadline, "the watcher never saw the edit"
            await asyncio.sleep(0.1)
        got = await s.call("memory_recall", action="get", thought_id=old)
        assert got["item"]["id"] == now and "filtermarker" in got["item"]["content"]
        ids.update(old=old, now=now)

    serve(ServeProcess(vault, config), while_running)
    with open(vault / "Appliances" / "Kettle.md", "ab") as f:  # and again while nothing ran
        f.write(b"\nlidmarker: the lid sticks.\n")

    async def after_restart(s: Session) -> None:
        got = await s.call("memory_recall", action="get", thought_id=ids["old"])
        assert got["item"]["id"] == ids["now"] and "lidmarker" in got["item"]["content"]

    serve(ServeProcess(vault, config), after_restart)


def test_a_note_moved_onto_the_name_of_a_renamed_note_does_not_take_the_ids_that_note_had(
    tmp_path: Path,
) -> None:
    vault = persons_vault(tmp_path, {"Kettle.md": KETTLE, "Toaster.md": TOASTER})
    config = tmp_path / "config"
    ids: dict[str, str] = {}

    async def first(s: Session) -> None:
        (ids["kettle"],) = await s.id_of("kettlemarker")
        (ids["toaster"],) = await s.id_of("toastermarker")

    serve(ServeProcess(vault, config), first)
    os.rename(vault / "Kettle.md", vault / "Old kettle.md")  # while nothing ran

    async def second(s: Session) -> None:
        got = await s.call("memory_recall", action="get", thought_id=ids["kettle"])
        assert "descale it monthly" in got["item"]["content"]

    serve(ServeProcess(vault, config), second)
    # the old kettle thrown out, the toaster moved onto its name (a file manager's "replace")
    os.replace(vault / "Toaster.md", vault / "Old kettle.md")

    async def third(s: Session) -> None:
        got = await s.call("memory_recall", action="get", thought_id=ids["toaster"])
        assert "toastermarker" in got["item"]["content"]
        failed, refused = await s.answer("memory_recall", action="get", thought_id=ids["kettle"])
        assert failed and "no thought has id" in str(refused), refused  # the kettle is gone

    serve(ServeProcess(vault, config), third)


def test_an_agents_update_through_the_old_id_of_a_renamed_note_leaves_that_id_answering(
    tmp_path: Path,
) -> None:
    """In vaultmem's own vault an agent may update a note written by hand without an ``id`` key,
    through the id it had before a rename; the next call with that id was a 404."""
    vault, config = tmp_path / "vault", tmp_path / "config"
    assert cli(config, "init", str(vault)).returncode == 0
    (vault / "Kettle.md").write_bytes(KETTLE)

    async def while_running(s: Session) -> None:
        (old,) = await s.id_of("kettlemarker")
        os.rename(vault / "Kettle.md", vault / "Old kettle.md")
        deadline = asyncio.get_running_loop().time() + 20
        while len(kettles := await s.id_of("kettlemarker")) != 1 or kettles == [old]:
            assert asyncio.get_running_loop().time() < deadline, "the watcher never saw the move"
            await asyncio.sleep(0.1)
        await s.call("memory_store", action="update", thought_id=old, content="descalemarker: weekly now")
        got = await s.call("memory_recall", action="get", thought_id=old)
        assert got["item"]["id"] == kettles[0] and "weekly now" in got["item"]["content"]

    serve(ServeProcess(vault, config), while_running)
