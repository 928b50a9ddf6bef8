"""`vaultmem init` on a folder that already holds a person's notes (issue 16, item 1): one folder of
vaultmem's own, found again from the vault itself; git history kept; the person's notes searched,
linked and never changed. A fresh folder keeps the layout vaultmem always made."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from conftest import FakeClock, git, hand_write
from mcp_harness import stdio_env, structured
from upkeep_wire import LocalWire, local_runtime

from vaultmem.config import Settings
from vaultmem.vault.init import init_vault

VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))


def run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [VAULTMEM, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=stdio_env(XDG_CONFIG_HOME=str(home)),
    )


def hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "-c", "user.name=p", "-c", "user.email=p@p", "commit", "-q", "-m", message)


def test_init_reuses_the_vaults_repository_keeps_its_history_and_commits_only_its_own_folder(
    tmp_path: Path,
) -> None:
    vault = tmp_path / "notes"
    hand_write(vault, "Ideas.md", "first\n")
    git(vault, "init", "-q", "-b", "main")
    commit_all(vault, "my first note")
    hand_write(vault, "Ideas.md", "first\nsecond\n")
    commit_all(vault, "my second edit")
    old_head = git(vault, "rev-parse", "HEAD").strip()
    hand_write(vault, "Ideas.md", "first\nsecond\nnot committed yet\n")  # the person's work in progress
    hand_write(vault, "Staged.md", "staged by the person\n")
    git(vault, "add", "Staged.md")
    before = hashes(vault)

    made = run("init", str(vault), home=tmp_path)
    assert made.returncode == 0, made.stderr

    assert git(vault, "rev-parse", "HEAD~1").strip() == old_head  # history kept, one commit on top
    assert git(vault, "log", "--format=%s", "-3").splitlines() == [
        "vaultmem init: add its folder Memory/",
        "my second edit",
        "my first note",
    ]
    changed = git(vault, "show", "--name-only", "--format=", "HEAD").split()
    assert ".gitignore" in changed and all(p == ".gitignore" or p.startswith("Memory/") for p in changed)
    status = git(vault, "status", "--porcelain").splitlines()
    assert " M Ideas.md" in status and "A  Staged.md" in status  # still the person's to commit
    assert {rel: h for rel, h in hashes(vault).items() if rel in before} == before
    assert sorted(p.name for p in vault.iterdir()) == [
        ".git",
        ".gitignore",
        "Ideas.md",
        "Memory",
        "Staged.md",
    ]


def test_a_fresh_folder_gets_the_layout_vaultmem_always_made(tmp_path: Path) -> None:
    for vault in (tmp_path / "new", tmp_path / "empty-repo"):
        if vault.name == "empty-repo":
            vault.mkdir()
            git(vault, "init", "-q")
        init_vault(vault)
        assert (vault / "filing.yaml").is_file() and (vault / "memory" / "semantic").is_dir()
        assert not (vault / "Memory").exists()
        assert Settings.resolve(vault).home == ""


def test_a_vault_of_an_earlier_version_keeps_its_layout_even_without_its_contract(tmp_path: Path) -> None:
    """Earlier versions put filing.yaml, desk/ and the class folders at the root; a person may have
    deleted filing.yaml since. init (and `serve --init`) must not then adopt it as a person's vault."""
    vault, _ = init_vault(tmp_path / "old")
    (vault / "filing.yaml").unlink()
    hand_write(vault, "memory/semantic/fact.md", "A fact written long ago.\n")
    git(vault, "add", "-A")
    git(vault, "-c", "user.name=p", "-c", "user.email=p@p", "commit", "-q", "-m", "tidy")
    init_vault(vault)
    assert not (vault / "Memory").exists()
    assert (vault / "filing.yaml").is_file()  # completed, in its own layout
    assert Settings.resolve(vault).home == ""


def test_the_folder_is_named_at_init_and_a_persons_folder_of_that_name_is_never_taken(tmp_path: Path) -> None:
    vault = tmp_path / "notes"
    hand_write(vault, "Memory/My childhood.md", "The summer of the big storm.\n")
    before = hashes(vault)
    refused = run("init", str(vault), home=tmp_path)
    assert refused.returncode == 1
    assert "already exists and holds your files" in refused.stderr and "--folder NAME" in refused.stderr
    assert hashes(vault) == before and not (vault / ".git").exists()

    made = run("init", "--folder", "Agents", str(vault), home=tmp_path)
    assert made.returncode == 0, made.stderr
    assert (vault / "Agents" / "filing.yaml").is_file() and (vault / "Agents" / "vaultmem.yaml").is_file()
    added = run("append", "--vault", str(vault), "--kind", "reference", "Tea at five.", home=tmp_path)
    assert added.returncode == 0, added.stderr
    assert list((vault / "Agents" / "memory" / "semantic").glob("*.md"))
    assert sorted(p.name for p in (vault / "Memory").iterdir()) == ["My childhood.md"]


def test_another_machine_reads_the_layout_from_the_vault_itself(tmp_path: Path) -> None:
    """A clone (the same vault opened elsewhere) files under Memory/ too: the layout is in the vault."""
    vault = tmp_path / "here"
    hand_write(vault, "Journal/Today.md", "Sunny.\n")
    assert run("init", str(vault), home=tmp_path).returncode == 0
    clone = tmp_path / "elsewhere"
    subprocess.run(["git", "clone", "-q", str(vault), str(clone)], check=True, capture_output=True)
    added = run(
        "append", "--vault", str(clone), "--kind", "preference", "Prefers green tea.", "--json", home=tmp_path
    )
    assert added.returncode == 0, added.stderr
    assert list((clone / "Memory" / "memory" / "semantic").glob("*.md"))
    assert not (clone / "memory").exists() and not (clone / ".vaultmem").exists()
    doctor = json.loads(run("doctor", "--vault", str(clone), "--json", home=tmp_path).stdout)
    assert doctor["layout"]["home"] == "Memory" and doctor["layout"]["person_notes"] == 1


def test_vaultmem_never_changes_a_persons_note_and_says_what_to_do_instead(tmp_path: Path) -> None:
    vault = tmp_path / "notes"
    hand_write(
        vault, "Recipes/Bread.md", "---\nid: 01a20000-0000-7000-8000-0000000000b1\n---\nFlour, water, salt.\n"
    )
    assert run("init", str(vault), home=tmp_path).returncode == 0
    before = hashes(vault)["Recipes/Bread.md"]

    forgot = run("forget", "--vault", str(vault), "01a20000-0000-7000-8000-0000000000b1", home=tmp_path)
    assert forgot.returncode == 1
    assert "Recipes/Bread.md is the person's own note, outside vaultmem's folder Memory/" in forgot.stderr
    # The same words as the person's note: a new memory in Memory/, not a reinforce of theirs.
    added = run(
        "append", "--vault", str(vault), "--kind", "reference", "Flour, water, salt.", "--json", home=tmp_path
    )
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["deduplicated"] is False
    assert hashes(vault)["Recipes/Bread.md"] == before


def test_doctor_explains_the_layout_it_found(tmp_path: Path) -> None:
    own, _ = init_vault(tmp_path / "own")
    told = run("doctor", "--vault", str(own), home=tmp_path)
    assert "vaultmem's own vault" in told.stdout, told.stdout + told.stderr

    adopted = tmp_path / "adopted"
    hand_write(adopted, "Note.md", "mine\n")
    init_vault(adopted)
    told = run("doctor", "--vault", str(adopted), home=tmp_path)
    assert "adopted in place: vaultmem keeps its files in Memory/" in told.stdout
    assert "The 1 notes outside it are the person's" in told.stdout

    hand_write(adopted, "Other/vaultmem.yaml", "# not vaultmem's folder\n")  # two folders claim it
    report = json.loads(run("doctor", "--vault", str(adopted), "--json", home=tmp_path).stdout)
    assert report["ok"] is False and report["layout"]["claimed_by"] == [
        "Memory/vaultmem.yaml",
        "Other/vaultmem.yaml",
    ]


def test_the_filing_contracts_routing_holds_in_vaultmems_own_folder(tmp_path: Path, clock: FakeClock) -> None:
    """Kinds, project spaces (desk/projects and Projects/<name>), the project registry and the slots
    all land under Memory/, by the same contract; vaultmem's own files there are never notes."""
    vault = tmp_path / "notes"
    hand_write(vault, "Projects/Kitchen.md", "The person's own Projects folder: not vaultmem's.\n")
    init_vault(vault)
    code = tmp_path / "code" / "rocket"
    code.mkdir(parents=True)
    with local_runtime(vault, clock) as memory:
        wire = LocalWire(memory)
        wire.ok("memory_manage", action="create", name="Rocket", local_path=str(code))
        (vault / "Memory" / "Projects" / "Rocket").mkdir()
        wire.ok("memory_reflect", action="reflect", summary="Fuelled.", goals_add=["Launch"], cwd=str(code))
        wire.ok("memory_reflect", action="reflect", summary="A global note.")
        stored = wire.store(action="create", content="Countdown from ten.", cwd=str(code))["item"]
        fact = structured(wire.call("memory_append", content="Water boils at 100 C.", kind="reference"))
        captured = structured(wire.call("memory_capture", content="Maybe paint it red."))
        paths = {t["id"]: t["path"] for t in wire.recall(action="list", status="all", compact=False)["items"]}
    assert (vault / "Memory" / "desk" / "projects" / "rocket" / "project.yaml").is_file()
    assert (vault / "Memory" / "desk" / "projects" / "rocket" / "project_context.md").is_file()
    assert (vault / "Memory" / "desk" / "projects" / "rocket" / "active_goals.md").is_file()
    assert (vault / "Memory" / "desk" / "project_context.md").is_file()
    assert paths[stored["id"]].startswith("Memory/Projects/Rocket/")
    assert paths[fact["id"]].startswith("Memory/memory/semantic/")
    assert paths[captured["id"]].startswith("Memory/memory/episodic/")
    assert set(paths.values()) == {
        "Projects/Kitchen.md",
        paths[stored["id"]],
        paths[fact["id"]],
        paths[captured["id"]],
    }  # slots, project.yaml and Memory/README.md are no notes; the person's note is one
    assert sorted(p.name for p in (vault / "Projects").iterdir()) == ["Kitchen.md"]


def test_archive_and_merge_previews_say_a_persons_note_cannot_be_changed(
    tmp_path: Path, clock: FakeClock
) -> None:
    """The previews promised `would_archive` / `would_merge` for a person's note, with a token the
    model was told to confirm; the confirmed call was then refused (and an archive_batch with one
    such note among others wrote nothing at all)."""
    vault = tmp_path / "notes"
    hand_write(vault, "Recipes/Bread.md", "# Bread\n\nFlour, water, salt.\n")
    init_vault(vault)
    before = hashes(vault)["Recipes/Bread.md"]
    with local_runtime(vault, clock) as memory:
        wire = LocalWire(memory)
        mine = structured(wire.call("memory_append", content="Bake at 250 C.", kind="reference"))["id"]
        theirs = structured(wire.call("memory_search", query="Flour water salt"))["results"][0]["id"]

        archive = wire.supersede(action="archive", thought_id=theirs)["item"]
        assert archive["outcome"] == "ineligible" and "preview_token" not in archive
        assert "Recipes/Bread.md is the person's own note" in archive["reason"]
        for source, target in ((theirs, mine), (mine, theirs)):
            merge = wire.supersede(action="merge", source_id=source, target_id=target)["item"]
            assert merge["outcome"] == "ineligible" and "preview_token" not in merge
            assert "Recipes/Bread.md is the person's own note" in merge["reason"]

        batch = wire.supersede(action="archive_batch", thought_ids=[theirs, mine])
        assert [row["outcome"] for row in batch["items"]] == ["ineligible", "would_archive"]
        done = wire.confirm("memory_supersede", action="archive_batch", thought_ids=[theirs, mine])
        assert [row["status"] for row in done["items"]] == ["failed", "archived"]
        assert "person's own note" in done["items"][0]["error"]
    assert hashes(vault)["Recipes/Bread.md"] == before


def test_init_in_place_says_it_adopted_the_folder_not_that_it_created_it(tmp_path: Path) -> None:
    """`vaultmem init ~/Obsidian` printed "created ~/Obsidian" for a folder of the person's notes."""
    vault = tmp_path / "Obsidian"
    hand_write(vault, "Home.md", "# Home\n")
    told = run("init", str(vault), home=tmp_path)
    assert told.returncode == 0, told.stderr
    assert told.stdout.splitlines()[:2] == [
        f"adopted {vault}",
        f"vaultmem keeps its files in {vault / 'Memory'}; your notes elsewhere are indexed, never changed",
    ]
    assert "created" not in told.stdout
    fresh = run("init", str(tmp_path / "new"), home=tmp_path)
    assert fresh.stdout.splitlines()[0] == f"created {tmp_path / 'new'}"


def test_an_adopted_vaults_trash_and_finder_files_stay_out_of_git(tmp_path: Path) -> None:
    """The template's .gitignore has `.trash/` and `.DS_Store`, the lines added to an adopted vault's
    had neither: Obsidian's trash (never committed) showed as untracked in `git status` for good,
    and macOS's `.DS_Store` went into the first commit."""
    vault = tmp_path / "Obsidian"
    hand_write(vault, "Home.md", "# Home\n")
    hand_write(vault, ".trash/Old idea.md", "deleted in Obsidian\n")
    hand_write(vault, ".DS_Store", "Finder's\n")
    hand_write(vault, "Areas/.DS_Store", "Finder's\n")
    before = hashes(vault)
    assert run("init", str(vault), home=tmp_path).returncode == 0
    assert git(vault, "status", "--porcelain", "--untracked-files=all") == ""
    assert "DS_Store" not in git(vault, "ls-files") and "Home.md" in git(vault, "ls-files")
    assert {k: v for k, v in hashes(vault).items() if k in before} == before


def test_a_merge_leaves_a_link_in_a_persons_properties_where_it_is(tmp_path: Path, clock: FakeClock) -> None:
    """A person's note declaring `related: "[[deploy-gate]]"` in its properties: merging that agent
    note into another was refused whole ("... is the person's own note"), because the merge set out
    to rewrite the person's link onto the target. Their link stays; the rest of the merge runs."""
    vault = tmp_path / "notes"
    hand_write(vault, "Home.md", "# Home\n")
    init_vault(vault)
    with local_runtime(vault, clock) as memory:
        wire = LocalWire(memory)
        gate = wire.call("memory_append", content="Run the checklist.", kind="decision", title="Gate")
        old = structured(gate)
        new = structured(wire.call("memory_append", content="Checklist, then a canary.", kind="decision"))
        hand_write(vault, "Plans/Deploys.md", '---\nrelated: "[[gate]]"\n---\nHow we deploy.\n')
        memory.reconcile()
        before = hashes(vault)["Plans/Deploys.md"]
        preview = wire.supersede(action="merge", source_id=old["id"], target_id=new["id"])["item"]
        assert preview["outcome"] == "would_merge" and preview["source"]["edges"] == []
        done = wire.confirm("memory_supersede", action="merge", source_id=old["id"], target_id=new["id"])
        assert done["item"]["status"] == "executed"
        assert structured(wire.call("memory_search", query=old["id"]))["results"][0]["status"] == "archived"
    assert hashes(vault)["Plans/Deploys.md"] == before


def test_log_of_a_persons_note_names_the_id_it_answers_to(tmp_path: Path) -> None:
    """`vaultmem log` of a person's note without an `id:` key printed `(None)` (and `"id": null`
    with --json), though search, blame and every tool give it the id derived from its path."""
    vault = tmp_path / "notes"
    hand_write(vault, "Recipes/Bread.md", "# Bread\n\nFlour, water, salt.\n")
    assert run("init", str(vault), home=tmp_path).returncode == 0
    found = run("search", "--vault", str(vault), "Flour water salt", "--json", home=tmp_path)
    derived = json.loads(found.stdout)["results"][0]["id"]
    told = run("log", "--vault", str(vault), derived, home=tmp_path)
    assert told.returncode == 0, told.stderr
    assert told.stdout.splitlines()[0] == f"Recipes/Bread.md  ({derived})"
    as_json = json.loads(run("log", "--vault", str(vault), derived, "--json", home=tmp_path).stdout)
    assert as_json["id"] == derived


def test_a_persons_edits_made_while_vaultmem_was_stopped_are_committed_as_theirs(tmp_path: Path) -> None:
    """The watcher commits a hand edit under the person's git identity; the same edit made while no
    vaultmem ran was committed at the next start as `vaultmem <vaultmem@localhost>` ("record
    changes found at start"), so `git log --author` and `vaultmem blame` gave their words to vaultmem."""
    vault = tmp_path / "notes"
    hand_write(vault, "Recipes/Bread.md", "# Bread\n\nFlour, water, salt.\n")
    hand_write(vault, "Recipes/Cake.md", "# Cake\n")
    assert run("init", str(vault), home=tmp_path).returncode == 0
    git(vault, "config", "user.name", "Ann")
    git(vault, "config", "user.email", "ann@example.org")
    hand_write(vault, "Recipes/Bread.md", "# Bread\n\nFlour, water, salt, time.\n")
    (vault / "Recipes" / "Cake.md").rename(vault / "Recipes" / "Birthday cake.md")
    added = run("append", "--vault", str(vault), "--kind", "fix", "Preheat the oven first.", home=tmp_path)
    assert added.returncode == 0, added.stderr
    assert git(vault, "status", "--porcelain", "--untracked-files=all") == ""
    mine = git(vault, "log", "--author=Ann", "--format=%an <%ae>%n%B")
    assert mine.startswith("Ann <ann@example.org>\nhand edits: 2 files (1 renamed): Birthday cake, Bread")
    assert "- renamed Recipes/Cake.md -> Recipes/Birthday cake.md" in mine
