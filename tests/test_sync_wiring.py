"""The sync round wired into an open vault (issue 17, phase 2): ``Memory.sync()`` runs the round
through the vault's writer, the catalog and the index read what it brought in, and a start finishes
a round a kill interrupted before anything else is committed."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from layers import on_sync_step, parts, sync_path, sync_paths

from tests.conftest import START, git, git_status, hand_write, set_cap
from tests.sync_harness import Cluster, Machine, status, tree
from tests.test_sync_kill import diverge, run_round
from vaultmem.config import Settings
from vaultmem.errors import CapReached
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.memory import Memory, SearchRequest
from vaultmem.notes import frontmatter as fm
from vaultmem.vault import merge_state
from vaultmem.vault.commits import hand_edit_message
from vaultmem.vault.history import GitRepo
from vaultmem.vault.init import init_vault
from vaultmem.vault.merge_state import MARKER
from vaultmem.vault.remote import VaultSync


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster(tmp_path)
    yield made
    made.close()


def opened(machine: Machine, *, index: bool = False) -> Memory:
    """A vault kept open across syncs (as a daemon keeps it), its commits made inline."""
    settings = Settings.resolve(machine.root, durable=False, sync_interval=0, sync_debounce=0)
    memory = Memory(
        settings, clock=machine.clock, index=index, embedder=FakeEmbedder() if index else None,
        background_commits=False,
    )  # fmt: skip
    machine.services.append(memory)
    return memory


def test_an_idempotency_key_used_on_another_machine_holds_right_after_the_sync(cluster: Cluster) -> None:
    laptop, desktop = cluster.first("laptop"), cluster.clone("desktop")
    here, there = opened(laptop), opened(desktop)  # the desktop's catalog predates the laptop's write
    first = here.append("The build cache lives on the NAS.", "reference", idempotency_key="nas-cache")
    assert here.sync().ok
    report = there.sync()
    assert report.ok and any(c.path.endswith(f"{first['slug']}.md") for c in report.incoming)
    again = there.append("The build cache lives on the NAS.", "reference", idempotency_key="nas-cache")
    assert again["deduplicated"] and again["id"] == first["id"]  # no second note on the desktop


def test_the_daily_cap_counts_both_machines_notes_once_they_are_merged(cluster: Cluster) -> None:
    laptop = cluster.first("laptop")
    set_cap(laptop.root, 4)
    assert laptop.sync().pushed_commits == 1
    desktop = cluster.clone("desktop")
    here, there = opened(laptop), opened(desktop)
    for i in range(2):  # each machine under the cap on its own
        here.append(f"Laptop note {i} about the kiln.", "reference")
        there.append(f"Desktop note {i} about the loom.", "reference")
    assert here.sync().ok and there.sync().ok and here.sync().ok
    for memory in (here, there):
        with pytest.raises(CapReached):
            memory.append("One note too many today.", "reference")
    tomorrow = START.replace(day=START.day + 1)
    laptop.clock.set(tomorrow)
    assert here.append("A new day, a new note.", "reference")["deduplicated"] is False


def test_what_a_sync_brings_in_is_searchable_when_the_round_returns(cluster: Cluster) -> None:
    laptop, desktop = cluster.first("laptop"), cluster.clone("desktop")
    here = opened(laptop)
    there = opened(desktop, index=True)
    there.reconcile()
    ids = [here.append(f"Incoming note {i}: the heron migrates north.", "reference")["id"] for i in range(12)]
    assert here.sync().ok
    report = there.sync()  # no watcher runs: only the round can have indexed them
    assert report.ok and len(report.incoming) == 12
    found = there.search(SearchRequest("heron migrates north", limit=20))
    assert {hit["id"] for hit in found["results"]} == set(ids)


def test_a_start_finishes_a_round_a_kill_left_mid_merge_before_committing_what_it_finds(
    cluster: Cluster,
) -> None:
    """git refuses a commit of named paths while a merge is unfinished: the start used to fail
    with "cannot do a partial commit during a merge"."""
    laptop, desktop = diverge(cluster)
    killed = run_round(laptop, "merged")
    assert killed.returncode == -signal.SIGKILL
    git_dir = GitRepo(laptop.root).git_dir
    assert (git_dir / "MERGE_HEAD").exists() and (git_dir / MARKER).exists()
    laptop.write("memory/semantic/typed-meanwhile.md", "Typed while vaultmem was down.\n")
    memory = opened(laptop)  # the start: sweep, recover, then commit what it found
    assert not (git_dir / "MERGE_HEAD").exists() and not (git_dir / MARKER).exists()
    assert status(laptop) == ""
    assert memory.sync().ok and opened(desktop).sync().ok
    assert tree(laptop) == tree(desktop)
    assert b"Typed while" in laptop.read("memory/semantic/typed-meanwhile.md")


def test_a_note_a_merge_moved_to_a_new_name_keeps_its_id_whichever_path_is_read_first(
    cluster: Cluster,
) -> None:
    """Two machines made a note at one path: the merge keeps the older there and gives this machine's
    a new name. A watcher reads the changed paths in sorted order, the new name (``x-tag.md``) before
    the old one (``x.md``): the id used to stay with the old path, the moved note was reported as a
    copy with the same id, and the note now at the old path was never indexed."""
    laptop, desktop = cluster.first("laptop"), cluster.clone("desktop")
    memory = opened(laptop, index=True)
    memory.reconcile()
    # The desktop's note is the older (its UUIDv7 id): it keeps the path, the laptop's moves.
    theirs = opened(desktop).append("Freeze merges first.", "reference", title="Release checklist")
    mine = memory.append("Tag the release first.", "reference", title="Release checklist")
    assert theirs["id"] < mine["id"]
    assert opened(desktop).sync().ok
    repo = GitRepo(laptop.root)
    repo.git("fetch", "-q", "origin")
    repo.git("merge", "-q", "--no-edit", "origin/main")  # a person's `git pull`: the driver merges
    assert VaultSync(repo).recover()  # files the laptop's note by a new name
    moved = next(p for p in tree(laptop) if p.startswith("memory/semantic/release-checklist-"))
    for rel in sorted([moved, "memory/semantic/release-checklist.md"]):  # as the watcher takes them
        sync_path(memory, rel)
    assert parts(memory).catalog.problems == {}
    assert memory.note(mine["id"]).path == moved and memory.note(theirs["id"]).path.endswith("checklist.md")
    found = {h["id"] for h in memory.search(SearchRequest("release first", limit=10))["results"]}
    assert {mine["id"], theirs["id"]} <= found


def test_a_conflict_note_is_reported_until_it_is_forgotten(cluster: Cluster) -> None:
    laptop, desktop = cluster.first("laptop"), cluster.clone("desktop")
    here = opened(laptop)
    note = here.append("Deploys go out on Tuesdays.\nThe release captain signs off.", "reference")
    assert here.sync().ok
    there = opened(desktop)
    assert there.sync().ok
    rel = f"memory/semantic/{note['slug']}.md"
    for machine, who in ((laptop, "laptop"), (desktop, "desktop")):
        text = machine.read(rel).replace(b"The release captain", f"The {who}'s captain".encode())
        machine.write(rel, text)
    assert there.sync().ok
    report = here.sync()
    assert report.ok and len(report.conflict_files) == 1
    copy, original = report.conflict_files[0]
    assert original == rel
    assert Memory.doctor(here.settings).conflict_notes == [copy]
    assert Memory.doctor(here.settings).conflict_copies == []  # not also listed as a client's copy
    here.forget(str(fm.parse(laptop.read(copy).decode("utf-8")).meta["id"]), reason="merged by hand")
    assert Memory.doctor(here.settings).conflict_notes == []
    assert here.sync().ok and there.sync().ok
    assert Memory.doctor(there.settings).conflict_notes == []


def test_a_hand_edit_commit_named_from_what_is_staged_keeps_a_deletion_that_looks_like_a_rename(
    tmp_path: Path,
) -> None:
    """The watcher's message names what still differs once staged; git's rename detection listed only
    the new name of a delete + a similar new file, and the deletion was left staged, uncommitted."""
    root, _ = init_vault(tmp_path / "vault")
    hand_write(root, "memory/semantic/gone.md", "---\ntitle: Espresso\n---\nEighteen grams.\n", commit=True)
    hand_write(root, "memory/semantic/kept.md", "---\ntitle: Kept\n---\nEighteen grams.\n")
    (root / "memory/semantic/gone.md").unlink()
    paths = ["memory/semantic/gone.md", "memory/semantic/kept.md"]
    gone = {"memory/semantic/gone.md"}
    assert GitRepo(root).commit_paths(paths, "-", describe=lambda changed: hand_edit_message(changed, gone))
    assert git_status(root) == ""
    assert git(root, "log", "-1", "--format=%s").strip() == "hand edits: 2 files (1 deleted): gone, kept"


def test_a_second_round_on_one_vault_waits_for_the_one_under_way(cluster: Cluster) -> None:
    """One round at a time per repository (the daemon's and a `vaultmem sync`): the second does not
    fetch and push beside the first."""
    laptop = cluster.first("laptop")
    first, second = opened(laptop), opened(laptop)
    paused, go = threading.Event(), threading.Event()

    def hold(step: str) -> None:
        if step == "fetched":
            paused.set()
            go.wait(timeout=30)

    on_sync_step(first, hold)
    steps: list[str] = []
    on_sync_step(second, steps.append)
    rounds = [threading.Thread(target=first.sync)]
    rounds[0].start()
    assert paused.wait(timeout=30)
    rounds.append(threading.Thread(target=second.sync))
    rounds[1].start()
    rounds[1].join(timeout=1.0)
    assert rounds[1].is_alive() and steps == []  # not even fetched
    go.set()
    for t in rounds:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in rounds) and "fetched" in steps


def test_many_changed_paths_at_once_are_brought_in_as_one_path_at_a_time_would(tmp_path: Path) -> None:
    """The watcher hands a batch (a merge another process made) to the index at once; the catalog,
    the index and what the watcher commits come out as if each path had been taken alone."""
    outcomes = []
    for name, batched in (("alone", False), ("batch", True)):
        root, _ = init_vault(tmp_path / name)
        settings = Settings.resolve(root, durable=False, sync_interval=0, sync_debounce=0)
        with Memory(settings, embedder=FakeEmbedder(), background_commits=False) as memory:
            memory.reconcile()
            own = memory.append("Written by this vault itself.", "reference")
            kept = memory.append("A note a person will edit.", "reference")
            gone = memory.append("A note a person will delete.", "reference")
            edited = f"memory/semantic/{kept['slug']}.md"
            hand_write(root, edited, (root / edited).read_text(encoding="utf-8") + "Edited by hand.\n")
            (root / f"memory/semantic/{gone['slug']}.md").unlink()
            for i in range(20):
                hand_write(root, f"memory/semantic/in-{i}.md", f"---\ntitle: In {i}\n---\nThe otter {i}.\n")
            hand_write(root, "memory/semantic/broken.md", "---\ntitle: [unclosed\n---\nBody.\n")
            hand_write(root, "desk/active_goals.md", "# Goals\n- ship\n")
            rels = sorted(
                [f"memory/semantic/{n['slug']}.md" for n in (own, kept, gone)]
                + [f"memory/semantic/in-{i}.md" for i in range(20)]
                + ["memory/semantic/broken.md", "desk/active_goals.md", "memory/semantic/never-was.md"]
            )
            got = sync_paths(memory, rels) if batched else {r: sync_path(memory, r) for r in rels}
            hits = memory.search(SearchRequest("otter", limit=30))["results"]
            outcomes.append(
                (
                    {r.removeprefix(str(root)): o for r, o in got.items()},
                    sorted(h["slug"] for h in hits),
                    sorted(parts(memory).catalog.problems),
                    Memory.doctor(settings).index_missing,
                )
            )
    assert outcomes[0] == outcomes[1]
    alone = outcomes[0][0]
    assert alone["memory/semantic/in-0.md"] == "indexed" and alone["memory/semantic/broken.md"] == "malformed"
    assert alone["desk/active_goals.md"] == "changed" and alone["memory/semantic/never-was.md"] == "removed"
    assert len(outcomes[0][1]) == 20 and outcomes[0][3] == []


def test_a_key_both_machines_used_before_they_met_names_one_note_on_both_and_survives_a_deletion(
    cluster: Cluster,
) -> None:
    """Each machine wrote a note under one idempotency key before they met; after the merge the laptop
    answered the key with its note and the desktop with its own (the one each catalog read first), and
    when the note a catalog answered was deleted, its key went with it there: a retry wrote a third."""
    laptop, desktop = cluster.first("laptop"), cluster.clone("desktop")
    here, there = opened(laptop), opened(desktop)
    mine = here.append("Alpha: the build cache lives on the NAS.", "reference", idempotency_key="nas-cache")
    theirs = there.append("Bravo: the build cache is on the NAS.", "reference", idempotency_key="nas-cache")
    assert here.sync().ok and there.sync().ok and here.sync().ok
    again_here = here.append("The build cache lives on the NAS.", "reference", idempotency_key="nas-cache")
    again_there = there.append("The build cache lives on the NAS.", "reference", idempotency_key="nas-cache")
    assert again_here["deduplicated"] and again_there["deduplicated"]
    assert again_here["id"] == again_there["id"] == mine["id"]  # the first by path, on both
    (desktop.root / f"memory/semantic/{mine['slug']}.md").unlink()  # a person deletes the duplicate
    assert there.sync().ok and here.sync().ok
    retry = here.append("The build cache lives on the NAS.", "reference", idempotency_key="nas-cache")
    assert retry["deduplicated"] and retry["id"] == theirs["id"]  # the key still names a note here


def test_a_fault_while_a_merge_is_finished_undoes_it_and_the_vault_keeps_committing(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fault in the note merge (here injected; reliability row 35 was a real one) left git's merge
    open: every commit after it failed with "cannot do a partial commit during a merge" (agents'
    writes acknowledged and never committed), and every round and start failed the same way."""
    laptop, desktop = diverge(cluster)
    here = opened(laptop)

    def broken(*args: object) -> object:
        raise ValueError("a fault in the note merge")

    monkeypatch.setattr(merge_state, "merge_file", broken)
    report = here.sync()
    assert not report.ok and "the merge was undone" in report.errors[-1]
    assert not (laptop.repo.git_dir / "MERGE_HEAD").exists() and not (laptop.repo.git_dir / MARKER).exists()
    written = here.append("Written while the merge cannot be finished.", "reference")
    assert git_status(laptop.root) == ""  # committed, the hand edit the round found too
    monkeypatch.undo()
    assert here.sync().ok
    cluster.settle()
    assert tree(laptop) == tree(desktop) and status(desktop) == ""
    assert any(written["slug"] in rel for rel in tree(desktop))


def test_a_copy_made_by_hand_never_answers_its_originals_key(cluster: Cluster) -> None:
    """The guard of the rule above: Obsidian's "Make a copy" (``<name> 1.md``, sorting first) carries
    the original's id and key; the key keeps naming the original."""
    laptop = cluster.first("laptop")
    here = opened(laptop)
    first = here.append("The build cache lives on the NAS.", "reference", idempotency_key="nas-cache")
    here.close()
    rel = f"memory/semantic/{first['slug']}.md"
    hand_write(laptop.root, f"memory/semantic/{first['slug']} 1.md", (laptop.root / rel).read_bytes())
    again = opened(laptop).append(
        "The build cache lives on the NAS.", "reference", idempotency_key="nas-cache"
    )
    assert again["deduplicated"] and again["slug"] == first["slug"] and again["id"] == first["id"]


def test_a_process_started_with_another_state_dir_never_finishes_a_round_that_is_still_merging(
    cluster: Cluster, tmp_path: Path
) -> None:
    """A start finishes a round a kill interrupted (its marker, git's open merge). A process whose
    state directory is not the daemon's (a shell without the daemon's VAULTMEM_STATE_DIR) holds
    another write lock, so its start took the daemon's merge, paused between git's merge and its
    conclusion, for one a kill interrupted, and concluded it under the running round. The commit gate
    in the git directory, which every round holds while it merges, keeps such a start waiting."""
    laptop, desktop = diverge(cluster)
    here = opened(laptop)
    paused, go = threading.Event(), threading.Event()

    def hold(step: str) -> None:
        if step == "merged":
            paused.set()
            go.wait(timeout=30)

    on_sync_step(here, hold)
    reports = []
    rounds = threading.Thread(target=lambda: reports.append(here.sync()))
    rounds.start()
    assert paused.wait(timeout=30)
    merging = git(laptop.root, "rev-parse", "HEAD").strip()
    other = Settings.resolve(laptop.root, tmp_path / "elsewhere", durable=False)
    opening = threading.Thread(target=lambda: Memory(other, index=False, background_commits=False).close())
    opening.start()
    opening.join(timeout=2.0)
    try:
        assert git(laptop.root, "rev-parse", "HEAD").strip() == merging  # the round's merge is its own
        assert (laptop.repo.git_dir / "MERGE_HEAD").exists()
    finally:
        go.set()
        rounds.join(timeout=60)
        opening.join(timeout=60)
    assert reports and reports[0].ok and not opening.is_alive()
    cluster.settle()
    assert tree(laptop) == tree(desktop) and git_status(laptop.root) == ""


# ``as_of`` on a machine whose sync round fast-forwarded onto the other machine's merge of its own
# commits (issue 17 with issue 18, item 3), through the facade a daemon serves: ``Memory.sync()`` and
# ``memory_search`` with ``as_of`` on an open vault with its index.
#
# The desk made the merge, so the merge's first parent is the desk's commit; the laptop's next round
# fast-forwards to it. Read down the first-parent chain, the laptop's own write left its past and the
# desk's memory took its place (and the laptop's store was read again from git at every such round).


def found(memory: Memory, as_of: str) -> set[str]:
    return {hit["id"] for hit in memory.search(SearchRequest("deploy", as_of=as_of))["results"]}


def test_a_fast_forward_onto_the_other_machines_merge_keeps_this_machines_own_past(cluster: Cluster) -> None:
    laptop, desk = cluster.first("laptop"), cluster.clone("desk")
    here, there = opened(laptop, index=True), opened(desk)
    desk_id = there.append("The desk deploy runs on Fridays.", "reference")["id"]
    desk_commit = git(desk.root, "rev-parse", "HEAD").strip()
    laptop_id = here.append("The laptop deploy key rotates monthly.", "reference")["id"]
    own = git(laptop.root, "rev-parse", "HEAD").strip()  # the laptop's write, as the laptop held it
    assert found(here, own) == {laptop_id}  # read before the sync: the store is kept current after
    assert here.sync().ok  # pushes the laptop's write
    assert there.sync().merge_commit  # the desk merges it: first parent the desk's own commit
    report = here.sync()
    assert report.ok and report.fast_forward and report.merge_commit is None

    # The laptop's own commit is the laptop's memory then: its note, not the desk's, which it had not
    # seen (down the first-parent chain the commit was off the line, and the desk's note was found).
    assert found(here, own) == {laptop_id}
    # The desk's commit came in with the fast-forward: as of it, the vault once it had arrived.
    assert found(here, desk_commit) == {laptop_id, desk_id}
    assert found(here, git(laptop.root, "rev-parse", "HEAD").strip()) == {laptop_id, desk_id}
    # A process started afresh reads the same line from git.
    here.close()
    again = opened(laptop, index=True)
    assert found(again, own) == {laptop_id}
    assert found(again, desk_commit) == {laptop_id, desk_id}
