"""Many machines, one memory, through the real surface (issue 17, "Must show"): a bare remote on
this machine, two vaults made from it by `vaultmem clone`, each served by its own `vaultmem serve`
with the real embedding model and written through a real MCP client over HTTP, and by hand;
`vaultmem sync` rounds beside the daemons until quiet."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_harness import error_text, wait_for
from reliability._support import notes_by_id
from sync_daemons import (
    MANUAL,
    Machine,
    bare_remote,
    call,
    closed_port_url,
    fsck,
    notes_with_markers,
    settle,
    status,
    tree,
)

from tests.conftest import git, set_cap
from vaultmem.notes import frontmatter as fm
from vaultmem.vault.merge_state import MARKER

pytestmark = pytest.mark.model

SHARED = "Deploys go out on Tuesdays.\nThe release captain signs off.\nRollbacks take ten minutes."


def body(machine: Machine, rel: str) -> str:
    return fm.parse((machine.root / rel).read_text(encoding="utf-8")).body


def meta(machine: Machine, rel: str) -> dict[str, Any]:
    return dict(fm.parse((machine.root / rel).read_text(encoding="utf-8")).meta)


def two_machines(tmp_path: Path, settings: str = MANUAL) -> tuple[Path, Machine, Machine]:
    """The remote, the laptop (the first clone: it publishes the vault) and the desktop (its git
    directory outside the vault, as for a Dropbox vault); ``settings`` is their ``vaultmem.yaml``
    (by default automatic rounds off)."""
    remote = bare_remote(tmp_path / "remote.git")
    laptop = Machine(remote, tmp_path / "laptop")
    (laptop.root / "vaultmem.yaml").write_text(settings, encoding="utf-8")
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


def note_text(i: int, line: str, first: str) -> str:
    return f"---\nid: 0190a1b2-{i:04x}-7000-8000-000000000000\ntitle: Shared {i}\n---\n{first}\n\n{line}\n"


def write_shared(machine: Machine, count: int, line: str, first: str = "First line.") -> None:
    for i in range(count):
        text = note_text(i, line, first)
        (machine.root / f"memory/semantic/shared-{i}.md").write_text(text, encoding="utf-8")


def test_the_daemons_sync_on_their_own_after_a_write_and_find_each_others_notes(tmp_path: Path) -> None:
    _remote, laptop, desktop = two_machines(tmp_path, "sync_interval: 1\nsync_debounce: 0.3\n")
    laptop.serve(fake_embedder=True)
    desktop.serve(fake_embedder=True)
    try:
        written = laptop.call("memory_append", content="The heron nests by the north pier.", kind="reference")
        wait_for(lambda: written["id"] in desktop.search_ids("heron north pier"), timeout=60)
        answer = desktop.call("memory_append", content="The egret nests by the south pier.", kind="reference")
        wait_for(lambda: answer["id"] in laptop.search_ids("egret south pier"), timeout=60)
        sync = wait_for(lambda: (h := laptop.health()["sync"])["last_incoming"] and h, timeout=30)
        assert sync["configured"] and sync["last_ok"] and sync["last_sync"] is not None
    finally:
        laptop.stop()
        desktop.stop()
    assert tree(laptop) == tree(desktop)


def test_a_daemon_offline_keeps_serving_reports_the_error_and_syncs_once_back(tmp_path: Path) -> None:
    remote, laptop, _desktop = two_machines(tmp_path, "sync_interval: 0.5\nsync_debounce: 0.2\n")
    git(laptop.root, "remote", "set-url", "origin", closed_port_url())
    laptop.serve(fake_embedder=True)
    try:
        failed = wait_for(
            lambda: next(c for c in laptop.health()["checks"] if c["name"] == "sync_failed")["count"]
        )
        assert failed == 1
        health = laptop.health()
        assert health["sync"]["last_ok"] is False and health["sync"]["last_error_kind"] == "offline"
        written = laptop.call(
            "memory_append", content="Written while the network was down.", kind="reference"
        )
        assert laptop.search_ids("network was down") == [written["id"]]
        git(laptop.root, "remote", "set-url", "origin", str(remote))
        wait_for(lambda: laptop.health()["sync"]["last_ok"], timeout=60)
        wait_for(lambda: written["id"] in git(remote, "log", "--format=%B", "main"), timeout=30)
    finally:
        laptop.stop()


PAUSED_ROUND = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from layers import on_sync_step
from vaultmem.config import Settings
from vaultmem.memory import Memory

root, flag = Path(sys.argv[1]), Path(sys.argv[2])

def pause(step):
    if step == "merged":  # git's merge is done, the round has not committed it yet
        flag.write_text("merging", encoding="utf-8")
        deadline = time.monotonic() + 60
        while not flag.with_suffix(".go").exists() and time.monotonic() < deadline:
            time.sleep(0.01)

# Opened as `vaultmem sync` opens it: no index, commits inline.
with Memory(Settings.resolve(root), index=False, background_commits=False) as memory:
    on_sync_step(memory, pause)
    print(memory.sync().ok)
"""


def test_a_cli_sync_beside_the_daemon_holds_its_writes_and_commits_until_the_merge_is_committed(
    tmp_path: Path,
) -> None:
    """While the round's merge is open, a write the daemon is asked for waits, and a hand edit the
    daemon's watcher sees is not committed (its `git add` would stage into the merge, or resolve a
    note the round left unmerged); both land after the merge commit."""
    remote, laptop, desktop = two_machines(tmp_path, MANUAL + "commit_quiet_period: 0.3\n")
    write_shared(laptop, 5, "Second line.")
    settle(remote, laptop, desktop)
    write_shared(desktop, 5, "Second line, from the desktop.")
    desktop.sync()
    write_shared(laptop, 5, "Second line.", first="First line, from the laptop.")  # committed at start
    laptop.serve(fake_embedder=True)
    try:
        flag = tmp_path / "merging.flag"
        child = subprocess.Popen(
            [sys.executable, "-c", PAUSED_ROUND, str(laptop.root), str(flag), str(Path(__file__).parent)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        wait_for(flag.exists, timeout=60)
        before = git(laptop.root, "rev-parse", "HEAD")
        answered: list[dict[str, Any]] = []
        writer = threading.Thread(
            target=lambda: answered.append(
                laptop.call("memory_append", content="Asked for during the merge.", kind="reference")
            )
        )
        writer.start()
        (laptop.root / "memory/semantic/typed-during-merge.md").write_text(
            "Typed meanwhile.\n", encoding="utf-8"
        )
        writer.join(timeout=1.5)  # the watcher's quiet period (0.3 s) has long passed
        assert writer.is_alive() and not answered  # the write waits for the merge
        assert git(laptop.root, "rev-parse", "HEAD") == before  # nothing committed into the merge
        assert "typed-during-merge" not in git(laptop.root, "diff", "--cached", "--name-only")
        flag.with_suffix(".go").write_text("", encoding="utf-8")
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0 and out.strip() == "True", err
        writer.join(timeout=60)
        assert answered, "the write waited, then went through"
        wait_for(lambda: status(laptop) == "", timeout=30)
        merge = git(laptop.root, "log", "--merges", "--format=%H", "-1").strip()
        in_merge = git(laptop.root, "show", "--name-only", "--format=", merge)
        assert "typed-during-merge" not in in_merge and answered[0]["slug"] not in in_merge
        later = git(laptop.root, "log", "--format=%s", f"{merge}..HEAD")
        assert f"memory_append: add {answered[0]['slug']}" in later
        assert "hand edit: memory/semantic/typed-during-merge.md" in later
        for i in range(5):  # the notes both changed were merged by the round, not resolved by an add
            merged = (laptop.root / f"memory/semantic/shared-{i}.md").read_text(encoding="utf-8")
            copies = list((laptop.root / "memory/semantic").glob(f"shared-{i}.conflict-*.md"))
            both = merged + "".join(c.read_text(encoding="utf-8") for c in copies)
            assert "from the laptop" in both and "from the desktop" in both
    finally:
        laptop.stop()
    assert settle(remote, laptop, desktop) and tree(laptop) == tree(desktop)
    for repo in (remote, laptop.root, desktop.root):
        assert fsck(repo) == ""


def test_a_daemon_killed_during_its_sync_loses_nothing_and_the_next_sync_converges(tmp_path: Path) -> None:
    shared = 120
    remote, laptop, desktop = two_machines(tmp_path, "sync_interval: 0\nsync_debounce: 0.2\n")
    write_shared(laptop, shared, "Second line.")
    settle(remote, laptop, desktop)
    write_shared(desktop, shared, "Second line, from the desktop.")
    desktop.sync()
    write_shared(laptop, shared, "Second line, from the laptop.")  # committed by the daemon's start
    git_dir = Path(git(laptop.root, "rev-parse", "--absolute-git-dir").strip())
    laptop.serve(fake_embedder=True)
    daemon = laptop.daemon
    assert daemon is not None
    acked = [laptop.call("memory_append", content="Acknowledged before the kill.", kind="reference")]
    # That commit starts the daemon's round 0.2 s later: kill -9 it while the round merges.
    wait_for(lambda: (git_dir / MARKER).exists(), timeout=60, interval=0.001)
    laptop.kill()
    assert (git_dir / MARKER).exists() or (git_dir / "MERGE_HEAD").exists()  # interrupted mid-round
    laptop.serve(fake_embedder=True)  # the restart finishes or rolls back the round first
    try:
        assert not (git_dir / "MERGE_HEAD").exists()
        wait_for(lambda: status(laptop) == "", timeout=30)
        acked.append(
            laptop.call("memory_append", content="Acknowledged after the restart.", kind="reference")
        )
        settle(remote, laptop, desktop)
        assert tree(laptop) == tree(desktop) and notes_with_markers(laptop) == []
        for note in acked:
            assert laptop.search_ids(note["id"]) == [note["id"]]
            assert (desktop.root / f"memory/semantic/{note['slug']}.md").is_file()
        files = tree(laptop)
        for i in range(shared):  # both sides of every note both machines changed
            sides = files[f"memory/semantic/shared-{i}.md"] + b"".join(
                data
                for path, data in files.items()
                if path.startswith(f"memory/semantic/shared-{i}.conflict-")
            )
            assert b"from the desktop" in sides and b"from the laptop" in sides
        for repo in (remote, laptop.root, desktop.root):
            assert fsck(repo) == ""
    finally:
        laptop.stop()


def test_an_idempotency_key_and_the_daily_cap_hold_across_the_daemons_after_a_merge(tmp_path: Path) -> None:
    """memory_append over MCP on each machine: a key used on the laptop is known to the desktop's
    daemon once synced (no second note), and the day's notes of both machines count for the cap."""
    remote = bare_remote(tmp_path / "remote.git")
    laptop = Machine(remote, tmp_path / "laptop")
    (laptop.root / "vaultmem.yaml").write_text(MANUAL, encoding="utf-8")
    set_cap(laptop.root, 4)  # committed: both machines get it
    laptop.sync()
    desktop = Machine(remote, tmp_path / "desktop")
    laptop.serve(fake_embedder=True)
    desktop.serve(fake_embedder=True)
    try:
        first = laptop.call("memory_append", content="The NAS keeps the build cache.", kind="reference",
                            idempotency_key="nas-cache")  # fmt: skip
        laptop.call("memory_append", content="The laptop's second note today.", kind="reference")
        for i in range(2):
            desktop.call("memory_append", content=f"Desktop note {i} of the day.", kind="reference")
        settle(remote, laptop, desktop)
        again = desktop.call("memory_append", content="The NAS keeps the build cache.", kind="reference",
                             idempotency_key="nas-cache")  # fmt: skip
        assert again["deduplicated"] and again["id"] == first["id"]

        async def one_too_many(client: Client) -> str:
            result = await client.call_tool(
                "memory_append", {"content": "A fifth note today.", "kind": "reference"}
            )
            return error_text(result)

        for machine in (laptop, desktop):  # each wrote two: four in all, the cap
            assert "daily" in machine.session(one_too_many).lower()
    finally:
        laptop.stop()
        desktop.stop()
