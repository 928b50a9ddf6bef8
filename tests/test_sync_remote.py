"""Sync rounds through a real bare remote (issue 17, Deliver 1, 2 and 4): two machines write at the
same time, sync until quiet, and end with identical trees, no conflict markers, no lost side."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import git
from tests.sync_harness import Cluster, Machine, fsck, notes_with_markers, status, tree
from vaultmem.config import Settings
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.memory import Memory, NewThought
from vaultmem.notes import frontmatter as fm
from vaultmem.notes.links import LinkTarget, add_link
from vaultmem.notes.model import note_from_text
from vaultmem.vault.history import GitRepo
from vaultmem.vault.merge_driver import ATTRIBUTES_LINE, DRIVER, configure
from vaultmem.vault.remote import VaultSync, clone_vault


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster(tmp_path)
    yield made
    made.close()


def edit_body(machine: Machine, rel: str, old: str, new: str) -> None:
    """A person's edit of a note's body in their editor."""
    doc = fm.parse(machine.read(rel).decode("utf-8"))
    assert old in doc.body
    machine.write(rel, fm.with_body(doc, doc.body.replace(old, new, 1)).to_bytes())


def edit_frontmatter(machine: Machine, rel: str, old: str, new: str) -> None:
    data = machine.read(rel)
    assert old.encode() in data
    machine.write(rel, data.replace(old.encode(), new.encode(), 1))


def link(machine: Machine, rel: str, edge_type: str, target: dict[str, Any], when: str) -> None:
    """A typed link to ``target`` (a memory_append result), as vaultmem writes one."""
    doc = fm.parse(machine.read(rel).decode("utf-8"))
    machine.write(rel, add_link(doc, edge_type, LinkTarget(target["slug"], target["id"]), when).to_bytes())


def meta(machine: Machine, rel: str) -> dict[str, object]:
    return fm.parse(machine.read(rel).decode("utf-8")).meta


def test_two_machines_writing_at_once_converge_with_no_markers_and_no_lost_side(cluster: Cluster) -> None:
    laptop = cluster.first("laptop")
    desktop = cluster.clone("desktop")
    forgotten = laptop.append("The staging database is reset every Sunday night.")
    shared = laptop.append(
        "Deploys go out on Tuesdays.\nThe release captain signs off.\nRollbacks take ten minutes."
    )
    linked = laptop.append("The cache TTL is five minutes for product pages.")
    fielded = laptop.append("Oncall rotates weekly between four engineers.")
    laptop.close()
    cluster.settle()
    rel = {
        "forgotten": f"memory/semantic/{forgotten['slug']}.md",
        "shared": f"memory/semantic/{shared['slug']}.md",
        "linked": f"memory/semantic/{linked['slug']}.md",
        "fielded": f"memory/semantic/{fielded['slug']}.md",
    }
    assert all((desktop.root / p).is_file() for p in rel.values())

    # Both machines work offline at the same time.
    laptop.clock.advance(hours=1)
    desktop.clock.advance(hours=2)
    laptop.service().forget(forgotten["id"], reason="no longer true")
    desktop.service()
    desktop.append("The staging database is reset every Sunday night.")  # a reinforce
    edit_body(laptop, rel["shared"], "The release captain signs off.", "The laptop's captain signs off.")
    edit_body(desktop, rel["shared"], "The release captain signs off.", "The desktop's captain signs off.")
    link(laptop, rel["linked"], "supports", fielded, "2026-03-14T10:30:00Z")
    link(desktop, rel["linked"], "related", shared, "2026-03-14T11:30:00Z")
    edit_frontmatter(laptop, rel["fielded"], "---\n", "---\naliases: [rota]\n")
    edit_body(desktop, rel["fielded"], "between four engineers.", "between five engineers.")
    mine = laptop.append("Checklist from the laptop: tag the release first.", title="Release checklist")
    theirs = desktop.append("Checklist from the desktop: freeze merges first.", title="Release checklist")
    assert mine["slug"] == theirs["slug"]  # the same path on both machines: an add/add
    laptop.close()
    desktop.close()

    cluster.settle()

    assert tree(laptop) == tree(desktop)
    assert notes_with_markers(laptop) == [] and status(laptop) == "" and status(desktop) == ""
    # A forget on one side and a reinforce on the other: deleted, and the reinforce counted.
    forgot = meta(laptop, rel["forgotten"])
    assert forgot["status"] == "deleted" and forgot["occurrences"] == 2
    # The same body lines changed on both sides (hand edits, so no newer `updated`: the larger bytes
    # win on both machines alike): one side in the note, the other in a flagged conflict note beside it.
    copies = [p for p in tree(laptop) if p.startswith(rel["shared"].removesuffix(".md") + ".conflict-")]
    assert len(copies) == 1
    copy = note_from_text(laptop.read(copies[0]).decode("utf-8"), copies[0])
    kept = fm.parse(laptop.read(rel["shared"]).decode("utf-8")).body
    sides = ("The laptop's captain signs off.", "The desktop's captain signs off.")
    assert {side in kept for side in sides} == {True, False}
    assert all((side in kept) != (side in copy.body) for side in sides)
    assert "sync-conflict" in copy.tags and copy.status == "unfiled"
    assert meta(laptop, copies[0])["conflict_of"] == f"[[{rel['shared'].removesuffix('.md')}]]"
    # Links added on each side are both there, with their times.
    linked_meta = meta(laptop, rel["linked"])
    assert linked_meta["supports"] == [f"[[{fielded['slug']}]]"] and linked_meta["related"] == [
        f"[[{shared['slug']}]]"
    ]
    assert set(linked_meta["link_created"]) == {f"supports/{fielded['slug']}", f"related/{shared['slug']}"}  # type: ignore[arg-type]
    assert linked_meta["link_targets"] == {
        f"supports/{fielded['slug']}": fielded["id"], f"related/{shared['slug']}": shared["id"],
    }  # fmt: skip
    # Different fields of one note: both edits.
    fielded_text = laptop.read(rel["fielded"])
    assert b"aliases: [rota]\n" in fielded_text and b"five engineers" in fielded_text
    # Two notes created at one path: both kept, each with its own id, under two names.
    by_id = {}
    for path, data in tree(laptop).items():
        if path.startswith("memory/") and path.endswith(".md"):
            note = note_from_text(data.decode("utf-8"), path)
            by_id[note.id] = note
    for written in (forgotten, shared, linked, fielded, mine, theirs):
        assert written["id"] in by_id
    assert "tag the release first" in by_id[mine["id"]].body and "freeze merges" in by_id[theirs["id"]].body
    older, newer = sorted((mine, theirs), key=lambda w: str(w["id"]))
    assert by_id[older["id"]].path == f"memory/semantic/{older['slug']}.md"  # the older id keeps the path
    renamed = by_id[newer["id"]].path  # the other grows by its own words (the collision rule)
    assert renamed.startswith(f"memory/semantic/{newer['slug']}-") and renamed.endswith(".md")
    for repo in (cluster.remote, laptop.root, desktop.root):
        assert fsck(repo) == ""


def test_a_push_the_remote_rejects_because_it_moved_is_merged_and_pushed_again(cluster: Cluster) -> None:
    laptop = cluster.first("laptop")
    desktop = cluster.clone("desktop")
    laptop.write("memory/semantic/from-laptop.md", "A note the laptop wrote.\n")
    desktop.write("memory/semantic/from-desktop.md", "A note the desktop wrote.\n")
    moved = []

    def desktop_pushes_first(step: str) -> None:
        if step == "pushing" and not moved:
            moved.append(desktop.sync())

    report = laptop.sync(checkpoint=desktop_pushes_first)
    assert report.attempts == 2 and report.pushed_commits >= 1
    assert "memory/semantic/from-desktop.md" in {c.path for c in report.incoming}
    cluster.settle()
    assert tree(laptop) == tree(desktop)
    assert "memory/semantic/from-laptop.md" in tree(desktop)


def test_pending_edits_are_committed_before_the_merge_and_reported(cluster: Cluster) -> None:
    laptop = cluster.first("laptop")
    desktop = cluster.clone("desktop")
    laptop.write("memory/semantic/hand.md", "Typed in Obsidian, never committed.\n")
    report = laptop.sync()
    assert report.committed == ["memory/semantic/hand.md"] and report.outgoing == ["memory/semantic/hand.md"]
    incoming = desktop.sync()
    assert [(c.path, c.change) for c in incoming.incoming] == [("memory/semantic/hand.md", "added")]
    assert incoming.fast_forward and incoming.ahead == 0 and incoming.behind == 0
    assert desktop.read("memory/semantic/hand.md") == b"Typed in Obsidian, never committed.\n"


def test_the_report_of_an_incoming_batch_names_exactly_the_changed_notes(cluster: Cluster) -> None:
    laptop = cluster.first("laptop")
    desktop = cluster.clone("desktop")
    for i in range(30):
        laptop.write(f"memory/semantic/batch-{i:02d}.md", f"Batch note {i}.\n")
    desktop.write("memory/semantic/local.md", "Only on the desktop.\n")
    laptop.sync()
    report = desktop.sync()
    assert sorted(c.path for c in report.incoming) == [f"memory/semantic/batch-{i:02d}.md" for i in range(30)]
    assert report.merge_commit is not None and not report.fast_forward
    parents = GitRepo(desktop.root).git("rev-list", "--parents", "-n", "1", report.merge_commit).split()
    assert len(parents) == 3  # a merge commit: nothing rebased, nothing rewritten


def test_a_machine_without_the_network_reports_the_error_and_keeps_its_work(cluster: Cluster) -> None:
    laptop = cluster.first("laptop")
    laptop.write("memory/semantic/offline.md", "Written offline.\n")
    cluster.remote.rename(cluster.remote.with_name("gone.git"))
    report = VaultSync(laptop.repo).sync()
    assert not report.ok and "could not fetch" in report.errors[0]
    assert laptop.read("memory/semantic/offline.md") == b"Written offline.\n"
    cluster.remote.with_name("gone.git").rename(cluster.remote)
    assert laptop.sync().pushed_commits == 1


def test_a_vault_without_a_remote_is_told_how_to_add_one(tmp_path: Path) -> None:
    from vaultmem.vault.init import init_vault

    root, _ = init_vault(tmp_path / "solo")
    report = VaultSync(GitRepo(root)).sync()
    assert not report.ok and "git remote add origin" in report.errors[0]


def test_clone_of_an_empty_remote_starts_a_vault_that_the_first_sync_publishes(tmp_path: Path) -> None:
    remote = tmp_path / "empty.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    repo = clone_vault(str(remote), tmp_path / "vault", git_dir=tmp_path / "vault.git")
    assert (repo.work_tree / "filing.yaml").is_file() and (repo.work_tree / ".git").is_file()
    assert ATTRIBUTES_LINE in (repo.work_tree / ".gitattributes").read_text(encoding="utf-8")
    report = VaultSync(repo).sync()
    assert report.ok and report.pushed_commits == 1  # the template, .gitattributes with it
    assert ".gitattributes" in report.outgoing
    heads = subprocess.run(["git", "branch", "--list"], cwd=remote, capture_output=True, text=True).stdout
    assert "main" in heads


def test_clone_refuses_a_folder_that_is_not_empty(tmp_path: Path, cluster: Cluster) -> None:
    cluster.first("laptop")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x.md").write_text("mine\n", encoding="utf-8")
    with pytest.raises(Exception, match="not an empty folder"):
        clone_vault(str(cluster.remote), tmp_path / "busy")
    assert (tmp_path / "busy" / "x.md").read_text(encoding="utf-8") == "mine\n"


def test_a_persons_own_git_pull_merges_notes_with_the_driver_and_the_next_sync_files_the_lost_side(
    cluster: Cluster,
) -> None:
    laptop = cluster.first("laptop")
    desktop = cluster.clone("desktop", separate_git_dir=False)
    rel = "memory/semantic/plan.md"
    laptop.write(rel, "---\ntitle: Plan\nupdated: '2026-03-01T00:00:00Z'\n---\nStep one.\n")
    laptop.sync()
    desktop.sync()
    laptop.write(rel, "---\ntitle: Plan\nupdated: '2026-03-02T00:00:00Z'\n---\nStep one, laptop.\n")
    desktop.write(rel, "---\ntitle: Plan\nupdated: '2026-03-03T00:00:00Z'\n---\nStep one, desktop.\n")
    laptop.sync()
    GitRepo(desktop.root).commit_paths([rel], "hand commit")
    person = ["git", "-c", "user.name=p", "-c", "user.email=p@p"]
    pulled = subprocess.run(
        [*person, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
        cwd=desktop.root, capture_output=True, text=True,
    )  # fmt: skip
    assert pulled.returncode == 0, pulled.stderr
    assert desktop.read(rel).endswith(b"Step one, desktop.\n") and notes_with_markers(desktop) == []
    report = desktop.sync()
    copies = [p for p in tree(desktop) if ".conflict-" in p]
    assert len(copies) == 1 and b"Step one, laptop." in desktop.read(copies[0])
    assert report.recovery == [f"kept {copies[0]}"]
    cluster.settle()
    assert tree(laptop) == tree(desktop)


def test_configuring_the_driver_keeps_a_persons_gitattributes_and_names_this_python(tmp_path: Path) -> None:
    from vaultmem.vault.init import init_vault

    root, _ = init_vault(tmp_path / "v")
    (root / ".gitattributes").write_bytes(b"*.png binary\r\n# mine")
    repo = GitRepo(root)
    assert configure(repo) is True
    assert (root / ".gitattributes").read_bytes().startswith(b"*.png binary\r\n# mine\n")
    assert configure(repo) is False  # already there: nothing written twice
    driver = repo.git("config", "--get", f"merge.{DRIVER}.driver").strip()
    assert driver.startswith(sys.executable) and driver.endswith("%O %A %B %P")
    assert repo.git("check-attr", "merge", "--", "memory/x.md").strip().endswith(f"merge: {DRIVER}")


def test_the_driver_git_runs_for_a_virtual_merge_base_merges_without_a_record(tmp_path: Path) -> None:
    from vaultmem.vault.init import init_vault
    from vaultmem.vault.merge_driver import RECORDS_FILE, driver_command

    root, _ = init_vault(tmp_path / "v")
    sides = []
    for name, text in (
        ("o", "---\ntags: [a]\n---\nx\n"),
        ("a", "---\ntags: [a, b]\n---\nx\n"),
        ("b", "---\ntags: [c]\n---\nx\n"),
    ):
        (tmp_path / name).write_text(text, encoding="utf-8")
        sides.append(str(tmp_path / name))
    for virtual, records in ((True, False), (False, True)):
        (tmp_path / "a").write_text("---\ntags: [a, b]\n---\nx\n", encoding="utf-8")
        command = driver_command(sys.executable, virtual_base=virtual).replace(
            "%O %A %B %P", " ".join([*sides, "n.md"])
        )
        subprocess.run(command, shell=True, cwd=root, check=True)
        assert fm.parse((tmp_path / "a").read_text(encoding="utf-8")).meta["tags"] == ["b", "c"]
        assert (GitRepo(root).git_dir / RECORDS_FILE).exists() == records


def test_a_project_file_both_machines_changed_in_one_line_is_kept_whole_with_a_conflict_copy(
    cluster: Cluster,
) -> None:
    laptop = cluster.first("laptop")
    desktop = cluster.clone("desktop")
    rel = "desk/projects/site/project.yaml"
    laptop.write(rel, "name: site\ndescription: the web site\n")
    laptop.sync()
    desktop.sync()
    laptop.write(rel, "name: site\ndescription: the public web site\n")
    desktop.write(rel, "name: site\ndescription: the marketing site\n")
    laptop.sync()
    report = desktop.sync()
    cluster.settle()
    assert tree(laptop) == tree(desktop)
    copies = [p for p in tree(desktop) if p.startswith("desk/projects/site/project.conflict-")]
    assert len(copies) == 1 and copies[0].endswith(".yaml")
    assert (copies[0], rel) in report.conflict_files and any(line.startswith(rel) for line in report.merged)
    kept, other = desktop.read(rel), desktop.read(copies[0])
    assert {kept, other} == {
        b"name: site\ndescription: the public web site\n",
        b"name: site\ndescription: the marketing site\n",
    }


def test_a_note_renamed_on_one_machine_and_reinforced_on_the_other_keeps_both_changes(
    cluster: Cluster,
) -> None:
    laptop = cluster.first("laptop")
    desktop = cluster.clone("desktop")
    note = laptop.append("Backups run nightly at two and are kept for thirty days on the NAS.")
    laptop.close()
    cluster.settle()
    old = f"memory/semantic/{note['slug']}.md"
    (laptop.root / old).rename(laptop.root / "memory/semantic/backups.md")  # renamed in Obsidian
    desktop.clock.advance(hours=1)
    desktop.service()
    assert desktop.append("Backups run nightly at two and are kept for thirty days on the NAS.")[
        "deduplicated"
    ]
    desktop.close()
    cluster.settle()
    assert tree(laptop) == tree(desktop) and not (laptop.root / old).exists()
    renamed = meta(laptop, "memory/semantic/backups.md")
    assert renamed["id"] == note["id"] and renamed["occurrences"] == 2


def test_a_note_deleted_on_one_machine_and_changed_on_the_other_is_kept_changed(cluster: Cluster) -> None:
    laptop = cluster.first("laptop")
    desktop = cluster.clone("desktop")
    rel = "memory/semantic/keep-me.md"
    laptop.write(rel, "---\ntitle: Keep me\nupdated: '2026-03-01T00:00:00Z'\n---\nFirst line.\n")
    laptop.sync()
    desktop.sync()
    (laptop.root / rel).unlink()  # a person deleted it by hand
    desktop.write(
        rel, "---\ntitle: Keep me\nupdated: '2026-03-02T00:00:00Z'\n---\nFirst line.\nSecond line.\n"
    )
    laptop.sync()
    desktop.sync()
    cluster.settle()
    assert tree(laptop) == tree(desktop)
    assert laptop.read(rel).endswith(b"Second line.\n")  # nothing the other machine wrote is lost


def test_a_note_renamed_by_hand_on_both_machines_to_different_names_merges_to_one_and_the_vault_keeps_working(
    cluster: Cluster,
) -> None:
    """git leaves the old path with its base version only (gone on both sides) and one new name
    unmerged; the round used to fail on it part-way, leaving git's merge open: every later commit (an
    agent's write, a hand edit) failed with "cannot do a partial commit during a merge", every round
    too, and a restart's recovery failed the same way."""
    laptop = cluster.first("laptop")
    desktop = cluster.clone("desktop")
    note = laptop.append("The router's admin page is on port 8443 behind the VPN.")
    laptop.close()
    cluster.settle()
    rel = f"memory/semantic/{note['slug']}.md"
    old = laptop.root / rel
    old.rename(laptop.root / "memory/semantic/Router admin.md")  # renamed in Obsidian, here
    (desktop.root / rel).rename(desktop.root / "memory/semantic/VPN router.md")  # and there
    laptop.sync()
    report = desktop.sync()
    assert report.merge_commit and status(desktop) == ""
    assert not (GitRepo(desktop.root).git_dir / "MERGE_HEAD").exists()
    cluster.settle()
    assert tree(laptop) == tree(desktop) and not old.exists()
    # One note, one file on every machine: the first name by path (the other had the same bytes).
    # Both names stayed, one id in two files, each machine answering it with its own rename.
    assert "memory/semantic/Router admin.md" in tree(desktop)
    assert "memory/semantic/VPN router.md" not in tree(desktop)
    assert "renamed on both machines" in git(desktop.root, "log", "-1", "--format=%B", report.merge_commit)
    desktop.service()
    assert desktop.append("A write after the merge is committed as usual.")["deduplicated"] is False
    desktop.close()
    assert status(desktop) == "" and desktop.sync().pushed_commits == 1
    assert fsck(desktop.repo.git_dir) == ""


def test_the_side_of_a_setting_a_merge_could_not_keep_is_listed_by_doctor_and_health(
    cluster: Cluster,
) -> None:
    """Both machines raised the daily cap in filing.yaml: one value stays, the other is kept whole as
    ``filing.conflict-<8 hex>.yaml``. Only the merge commit's message said so; doctor and health
    listed conflict notes, never such a file, so a daemon's round lost one machine's setting silently."""
    laptop = cluster.first("laptop")
    desktop = cluster.clone("desktop")
    cap = "daily_write_cap: 200"
    edit_frontmatter(laptop, "filing.yaml", cap, "daily_write_cap: 500")
    edit_frontmatter(desktop, "filing.yaml", cap, "daily_write_cap: 900")
    laptop.sync()
    desktop.sync()
    cluster.settle()
    (side,) = [p for p in tree(desktop) if p.startswith("filing.conflict-")]
    for machine in (laptop, desktop):
        report = Memory.doctor(Settings.resolve(machine.root, durable=False))
        assert side in report.conflict_copies and not report.ok
        memory = Memory(Settings.resolve(machine.root, durable=False), embedder=FakeEmbedder())
        try:
            health = memory.health(include_details=True).item
        finally:
            memory.close()
        assert health is not None
        check = {c["name"]: c for c in health["checks"]}["sync_conflict_copies"]
        assert not check["ok"] and {"path": side} in check["details"]


def test_one_pair_linked_with_two_types_on_two_machines_keeps_one_edge_after_the_merge(
    cluster: Cluster,
) -> None:
    """A pair carries one edge (the graph document's `link`: a `related` placeholder is upgraded to
    the specific type). The rule was checked per write, so a pair linked `related` on one machine and
    `supports` on the other kept both edges after the merge. Of two specific types the one linked
    last stays and the other goes to a conflict note, on both machines alike."""
    laptop = cluster.first("laptop")
    desktop = cluster.clone("desktop")
    source = laptop.append("The cache TTL is five minutes for product pages.")
    placeholder = laptop.append("Product pages are rendered at the edge.")
    contested = laptop.append("The CDN purges on every deploy.")
    laptop.close()
    cluster.settle()
    laptop.clock.advance(hours=1)
    desktop.clock.advance(hours=2)  # the desktop's links are made last
    for machine, types in ((laptop, ("related", "supports")), (desktop, ("supports", "contradicts"))):
        service = machine.service()
        for target, edge_type in zip((placeholder, contested), types, strict=True):
            service.link(source["id"], target["id"], edge_type)
        machine.close()
    cluster.settle()

    assert tree(laptop) == tree(desktop)
    rel = f"memory/semantic/{source['slug']}.md"
    merged = meta(laptop, rel)
    assert "related" not in merged  # upgraded in place, as `link` does
    assert merged["supports"] == [f"[[{placeholder['slug']}]]"]
    assert merged["contradicts"] == [f"[[{contested['slug']}]]"]
    assert set(merged["link_targets"]) == {  # type: ignore[arg-type]
        f"supports/{placeholder['slug']}", f"contradicts/{contested['slug']}",
    }  # fmt: skip
    copies = [p for p in tree(laptop) if p.startswith(rel.removesuffix(".md") + ".conflict-")]
    assert len(copies) == 1
    conflict = meta(laptop, copies[0])["conflict"]
    assert conflict["lost_fields"] == {"supports": [f"[[{contested['slug']}]]"]}  # type: ignore[index]


def test_a_project_both_machines_created_before_they_met_answers_both_machines_folders(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Each machine registered its checkout of one project (`memory_manage create`) before they
    met: one name, so one folder and one project.yaml, with each machine's own id and code path.
    Merged as lines, one side was kept whole and the other became a conflict copy: the other
    machine's folder matched no project, and its agents' writes landed without one. Now the file
    is merged key by key: both folders, the older id, the other id still accepted."""
    laptop = cluster.first("laptop")
    desktop = cluster.clone("desktop")
    here, there = tmp_path / "code" / "shop", tmp_path / "src" / "shop"
    made = {}
    for machine, folder in ((laptop, here), (desktop, there)):
        folder.mkdir(parents=True)
        service = machine.service()
        made[machine.name] = service.create_project("shop", str(folder)).item["id"]  # type: ignore[index]
        machine.close()
    laptop.sync()
    desktop.sync()
    cluster.settle()
    assert tree(laptop) == tree(desktop)
    assert not [p for p in tree(desktop) if ".conflict-" in p]
    for machine, folder in ((laptop, here), (desktop, there)):
        service = machine.service()
        (project,) = service.list_projects().items
        assert project["id"] == min(made.values())  # type: ignore[index]
        assert sorted(project["code_paths"]) == sorted([str(here), str(there)])  # type: ignore[index]
        assert service.resolve_project(str(folder / "src")).item["name"] == "shop"  # type: ignore[index]
        written = service.create_thought(NewThought(content="Deploys go out on Tuesdays."), cwd=str(folder))
        assert written.item.project == "shop" and not written.scope.warnings  # type: ignore[union-attr]
        for project_id in made.values():  # either machine's id names the one project
            service.update_project(project_id, description=f"the shop, from {machine.name}")
        machine.close()
    laptop.sync()
    desktop.sync()
    cluster.settle()
    assert tree(laptop) == tree(desktop)


def test_a_project_file_merged_key_by_key_keeps_the_comments_and_layout_both_machines_wrote(
    cluster: Cluster,
) -> None:
    """Both machines changed project.yaml, different keys: merged key by key, the file was written
    anew by the YAML dumper and a person's comments in it were gone from both machines."""
    laptop = cluster.first("laptop")
    desktop = cluster.clone("desktop")
    rel = "desk/projects/shop/project.yaml"
    laptop.write(
        rel,
        "# the shop: ask Ann before renaming it\nname: shop\nid: 0190a000-0000-7000-8000-000000000001\n"
        "code_paths:\n- ~/code/shop  # the laptop\ndescription: the shop\n",
    )
    laptop.sync()
    desktop.sync()
    laptop.write(
        rel,
        "# the shop: ask Ann before renaming it\nname: shop\nid: 0190a000-0000-7000-8000-000000000001\n"
        "code_paths:\n- ~/code/shop  # the laptop\ndescription: the web shop  # since June\n",
    )
    desktop.write(
        rel,
        "# the shop: ask Ann before renaming it\nname: shop\nid: 0190a000-0000-7000-8000-000000000001\n"
        "code_paths:\n- ~/code/shop  # the laptop\n- /srv/shop  # the desktop\ndescription: the shop\n",
    )
    laptop.sync()
    desktop.sync()
    cluster.settle()
    assert tree(laptop) == tree(desktop)
    assert not [p for p in tree(desktop) if ".conflict-" in p]
    merged = desktop.read(rel).decode("utf-8")
    assert "# the shop: ask Ann before renaming it" in merged
    assert "# since June" in merged and "# the desktop" in merged
    assert "description: the web shop" in merged and "- /srv/shop" in merged
