"""Many machines, one memory, through the real surface (issue 17, "Must show"): a bare remote on
this machine, two vaults made from it by `vaultmem clone`, each served by its own `vaultmem serve`
with the real embedding model and written through a real MCP client over HTTP, and by hand;
`vaultmem sync` rounds beside the daemons until quiet."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_harness import wait_for
from reliability._support import notes_by_id
from sync_daemons import MANUAL, Machine, bare_remote, call, fsck, notes_with_markers, settle, status, tree

from vaultmem.notes import frontmatter as fm

pytestmark = pytest.mark.model

SHARED = "Deploys go out on Tuesdays.\nThe release captain signs off.\nRollbacks take ten minutes."


def body(machine: Machine, rel: str) -> str:
    return fm.parse((machine.root / rel).read_text(encoding="utf-8")).body


def meta(machine: Machine, rel: str) -> dict[str, Any]:
    return dict(fm.parse((machine.root / rel).read_text(encoding="utf-8")).meta)


def two_machines(tmp_path: Path) -> tuple[Path, Machine, Machine]:
    """The remote, the laptop (the first clone: it publishes the vault) and the desktop (its git
    directory outside the vault, as for a Dropbox vault), automatic rounds off."""
    remote = bare_remote(tmp_path / "remote.git")
    laptop = Machine(remote, tmp_path / "laptop")
    (laptop.root / "vaultmem.yaml").write_text(MANUAL, encoding="utf-8")
    assert laptop.sync()["pushed_commits"] >= 1
    desktop = Machine(remote, tmp_path / "desktop", git_dir=tmp_path / "desktop.git")
    assert (desktop.root / ".git").is_file() and (desktop.root / "vaultmem.yaml").is_file()
    return remote, laptop, desktop


def serve_both(*machines: Machine) -> None:
    """Start the daemons side by side (each loads the model)."""
    errors: list[BaseException] = []

    def start(machine: Machine) -> None:
        try:
            machine.serve()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(m,)) for m in machines]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def at_once(*work: tuple[Machine, Any]) -> list[Any]:
    """Run each machine's session at the same time (a thread, an MCP client each)."""
    results: list[Any] = [None] * len(work)
    errors: list[BaseException] = []
    start = threading.Barrier(len(work))

    def run(i: int, machine: Machine, session: Any) -> None:
        async def go(client: Client) -> Any:
            start.wait(timeout=30)
            return await session(client)

        try:
            results[i] = machine.session(go)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i, m, s)) for i, (m, s) in enumerate(work)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    if errors:
        raise errors[0]
    return results


def test_two_daemons_writing_at_once_converge_through_vaultmem_sync_with_nothing_lost(tmp_path: Path) -> None:
    remote, laptop, desktop = two_machines(tmp_path)
    serve_both(laptop, desktop)
    try:
        # The shared starting point, written on the laptop and synced to the desktop.
        async def start(client: Client) -> dict[str, dict[str, Any]]:
            return {
                name: await call(client, "memory_append", content=content, kind="reference", title=name)
                for name, content in (
                    ("forgotten", "The staging database resets every Sunday."),
                    ("shared", SHARED),
                    ("linked", "Product pages cache for five minutes."),
                    ("fielded", "Oncall rotates weekly among four people."),
                    ("handled", "The VPN gateway is vpn-gw-3."),
                )
            }

        base = laptop.session(start)
        rel = {name: f"memory/semantic/{note['slug']}.md" for name, note in base.items()}
        settle(remote, laptop, desktop)
        shared_id = base["shared"]["id"]
        wait_for(lambda: shared_id in desktop.search_ids("release captain Tuesdays"), timeout=30)

        # Both machines at once, each through its own daemon.
        async def write(client: Client, side: str, noun: str, checklist: str) -> list[dict[str, Any]]:
            made = [
                await call(
                    client, "memory_append", content=f"{side} finding {i}: the {noun}.", kind="reference"
                )
                for i in range(3)
            ]
            made.append(
                await call(
                    client, "memory_append", content=checklist, kind="reference", title="Release checklist"
                )
            )
            captain = SHARED.replace("The release captain", f"The {side}'s captain")
            await call(client, "memory_store", action="update", thought_id=shared_id, content=captain)
            return made

        async def on_laptop(client: Client) -> list[dict[str, Any]]:
            made = await write(client, "laptop", "quokka cache", "Tag the release first.")
            await call(client, "memory_forget", id=base["forgotten"]["id"], reason="not true any more")
            fielded = base["fielded"]["id"]
            await call(
                client, "memory_store", action="update", thought_id=fielded, tags=["rota"], tags_mode="add"
            )
            link = {"source_id": base["linked"]["id"], "target_id": fielded, "edge_type": "supports"}
            await call(client, "memory_store", action="link", **link)
            return made

        async def on_desktop(client: Client) -> list[dict[str, Any]]:
            made = await write(client, "desktop", "axolotl queue", "Freeze merges first.")
            again = await call(
                client, "memory_append", content="The staging database resets every Sunday.", kind="reference"
            )
            assert again["deduplicated"] and again["id"] == base["forgotten"]["id"]  # a reinforce
            five = "Oncall rotates weekly among five people."
            await call(
                client, "memory_store", action="update", thought_id=base["fielded"]["id"], content=five
            )
            link = {"source_id": base["linked"]["id"], "target_id": shared_id, "edge_type": "related"}
            await call(client, "memory_store", action="link", **link)
            return made

        mine, theirs = at_once((laptop, on_laptop), (desktop, on_desktop))
        assert mine[-1]["slug"] == theirs[-1]["slug"]  # the same new path on both machines
        # Hand edits on both: a new note each, and one note's body here, its frontmatter there.
        hand = "---\ntitle: {0} by hand\n---\nThe {1} on floor two is called {2}.\n"
        (laptop.root / "memory/semantic/laptop-by-hand.md").write_text(
            hand.format("Laptop", "printer", "Marmot")
        )
        (desktop.root / "memory/semantic/desktop-by-hand.md").write_text(
            hand.format("Desktop", "kettle", "Wombat")
        )
        edit(laptop, rel["handled"], lambda text: text + "Its backup is vpn-gw-4.\n")
        edit(desktop, rel["handled"], lambda text: text.replace("---\n", "---\naliases: [gateway]\n", 1))

        settle(remote, laptop, desktop)

        # Both working trees identical, clean, no conflict marker anywhere; all three repositories sound.
        assert tree(laptop) == tree(desktop)
        assert notes_with_markers(laptop) == [] and status(laptop) == "" and status(desktop) == ""
        for repo in (remote, laptop.root, desktop.root):
            assert fsck(repo) == ""
        # Every acknowledged id is on both machines, and each daemon finds every note.
        acknowledged = {n["id"] for n in [*base.values(), *mine, *theirs]}
        assert len(acknowledged) == 13
        for machine in (laptop, desktop):
            assert acknowledged <= set(notes_by_id(machine.root))
            wait_for(lambda m=machine: found_by_search(m, acknowledged), timeout=30)
        # The same body lines changed on both sides: one side in the note, the other beside it.
        stem = rel["shared"].removesuffix(".md")
        copies = sorted(p for p in tree(laptop) if p.startswith(stem + ".conflict-"))
        assert len(copies) == 1
        kept, aside = body(laptop, rel["shared"]), body(laptop, copies[0])
        sides = ("The laptop's captain signs off.", "The desktop's captain signs off.")
        assert {s in kept for s in sides} == {True, False} and all((s in kept) != (s in aside) for s in sides)
        assert meta(laptop, copies[0])["conflict_of"] == f"[[{stem}]]"
        # A forget on one side and a reinforce on the other: deleted, the reinforce counted.
        forgot = meta(laptop, rel["forgotten"])
        assert forgot["status"] == "deleted" and forgot["occurrences"] == 2
        # One note edited in different fields on each side, a link added on each side: all kept.
        assert "rota" in meta(laptop, rel["fielded"])["tags"] and "five people" in body(
            laptop, rel["fielded"]
        )
        links = meta(laptop, rel["linked"])
        assert links["supports"] == [f"[[{base['fielded']['slug']}]]"]
        assert links["related"] == [f"[[{base['shared']['slug']}]]"]
        handled = (laptop.root / rel["handled"]).read_text(encoding="utf-8")
        assert "aliases: [gateway]" in handled and "vpn-gw-4" in handled
        # memory_status health on both daemons, and `vaultmem doctor`, name the conflict note.
        for machine in (laptop, desktop):
            health = machine.health()
            check = next(c for c in health["checks"] if c["name"] == "sync_conflict_notes")
            assert check["count"] == 1 and check["details"] == [{"path": copies[0]}]
            sync = health["sync"]
            assert sync["configured"] and sync["last_ok"] and (sync["ahead"], sync["behind"]) == (0, 0)
        doctor = desktop.cli("doctor", "--json")
        assert json.loads(doctor.stdout)["conflict_notes"] == copies
    finally:
        laptop.stop()
        desktop.stop()


def edit(machine: Machine, rel: str, change: Any) -> None:
    """A person's edit in their editor."""
    path = machine.root / rel
    path.write_text(change(path.read_text(encoding="utf-8")), encoding="utf-8")


def found_by_search(machine: Machine, ids: set[str]) -> bool:
    """Every id found by ``memory_search`` on this machine's daemon, and the two hand-written notes by
    their words (one MCP session)."""

    async def look(client: Client) -> bool:
        for note_id in ids:
            hits = await call(client, "memory_search", query=note_id, include_deleted=True)
            if [h["id"] for h in hits["results"]] != [note_id]:
                return False
        for words, slug in (("printer Marmot", "laptop-by-hand"), ("kettle Wombat", "desktop-by-hand")):
            hits = await call(client, "memory_search", query=words)
            if not hits["results"] or hits["results"][0]["slug"] != slug:
                return False
        return True

    return machine.session(look)
