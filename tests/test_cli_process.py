"""The CLI as a person runs it: real processes with the real embedding model, their exit statuses,
and what a run leaves on the machine outside the vault (issue 13, items 8 and 11)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.model
VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))


def vaultmem(vault: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [VAULTMEM, "--vault", str(vault), *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=120,
    )


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def test_every_cli_command_on_an_indexed_vault_exits_with_its_own_status_never_an_abort(
    vault: Path,
) -> None:
    """Issue 13, item 8: `vaultmem doctor` exited 134 ("terminate called without an active
    exception") after its report once an index existed: the model was still loading on a thread
    when the interpreter exited. Every command, quick or not, must exit with its own status."""
    added = vaultmem(vault, "append", "--kind", "reference", "--json", "The kettle is blue.")
    assert added.returncode == 0, added.stderr
    note_id = json.loads(added.stdout)["id"]
    # The commands that open the index (and so start loading the model), each quick to finish.
    commands: list[tuple[list[str], int]] = [
        (["doctor"], 0),  # no index yet
        (["reindex"], 0),  # builds it
        (["doctor"], 0),
        (["doctor", "--json"], 0),
        (["search", note_id], 0),  # an id lookup: no query to embed
        (["mcp"], 0),  # standard input at EOF: the stdio server ends at once
        (["reindex", "--full"], 0),
    ]
    outcomes = []
    for argv, expected in commands:
        done = vaultmem(vault, *argv)
        outcomes.append((argv, done.returncode, expected, done.stderr[-300:]))
    wrong = [o for o in outcomes if o[1] != o[2] or "terminate called" in o[3]]
    assert not wrong, wrong


def test_the_embedding_model_writes_nothing_under_home(vault: Path, isolated_home: Path) -> None:
    """Issue 13, item 11: onnxruntime's official builds created
    ~/.cache/Microsoft/DeveloperTools/.onnxruntime/ (a persistent device id and an event database)
    the first time the model loaded. A search that embeds, run with HOME pointed at an empty folder,
    leaves that folder empty."""
    assert files_under(isolated_home) == []
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "ORT_DISABLE_TELEMETRY")}
    assert env["HOME"] == str(isolated_home)  # the default cache folder is ~/.cache, inside it
    added = vaultmem(vault, "append", "--kind", "reference", "The espresso grinder is set to 14.")
    assert added.returncode == 0, added.stderr
    found = subprocess.run(
        [VAULTMEM, "--vault", str(vault), "search", "--json", "grinder setting"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["results"]
    assert hits and hits[0]["slug"].startswith("the-espresso-grinder")  # the model really ran
    assert files_under(isolated_home) == []


def test_the_cli_finds_the_default_vault_from_any_folder(isolated_home: Path, tmp_path: Path) -> None:
    """The vault `make serve` creates (~/vaultmem-vault) is the one every command uses when no
    --vault or $VAULTMEM_VAULT names another, whatever folder the command runs in."""
    elsewhere = tmp_path / "some" / "project"
    elsewhere.mkdir(parents=True)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [VAULTMEM, *args], cwd=elsewhere, capture_output=True, text=True, timeout=120, input=""
        )

    made = run("init")
    assert made.returncode == 0, made.stderr
    assert (isolated_home / "vaultmem-vault" / ".git").exists()
    added = run("append", "--kind", "reference", "The default vault holds the kettle note.")
    assert added.returncode == 0, added.stderr
    found = run("search", "--json", "kettle note")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"], found.stdout
    assert not (elsewhere / "vault").exists()


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout


def test_a_folder_inside_another_git_repository_is_not_taken_for_a_vault(tmp_path: Path) -> None:
    """Notes kept in a project's repository: `vaultmem append --vault project/notes` must not commit
    into the project's repository, and `vaultmem init project/notes` must not commit the project's
    own pending changes (`git add -A` there took the whole repository)."""
    project = tmp_path / "project"
    (project / "notes").mkdir(parents=True)
    _git(project, "init", "-q")
    (project / "main.py").write_text("print('hi')\n", encoding="utf-8")
    _git(project, "add", "main.py")
    _git(project, "-c", "user.name=p", "-c", "user.email=p@example.invalid", "commit", "-qm", "start")
    (project / "main.py").write_text("print('work in progress')\n", encoding="utf-8")
    (project / "notes" / "idea.md").write_text("An idea of mine.\n", encoding="utf-8")
    before = _git(project, "status", "--porcelain"), _git(project, "log", "--oneline")

    refused = vaultmem(project / "notes", "append", "--kind", "reference", "The kettle is blue.")
    assert refused.returncode != 0
    assert "vaultmem init" in refused.stderr and "repository of its own" in refused.stderr
    assert (_git(project, "status", "--porcelain"), _git(project, "log", "--oneline")) == before

    made = vaultmem(tmp_path, "init", str(project / "notes"))
    assert made.returncode == 0, made.stderr
    assert (project / "notes" / ".git").is_dir()  # a repository of the vault's own
    assert _git(project, "log", "--oneline") == before[1]
    assert " M main.py" in _git(project, "status", "--porcelain")  # the person's change, untouched
    assert (project / "notes" / "idea.md").read_text(encoding="utf-8") == "An idea of mine.\n"
    assert _git(project / "notes", "log", "--format=%s")  # the vault's first commit is its own


def _snippet_of(vault: Path, query: str, slug: str) -> str:
    """The snippet `vaultmem search` shows for the note ``slug`` (what the index holds of it)."""
    found = vaultmem(vault, "search", "--json", query)
    assert found.returncode == 0, found.stderr
    return next(hit["snippet"] for hit in json.loads(found.stdout)["results"] if hit["slug"] == slug)


def _commit_by_hand(vault: Path) -> None:
    """What a person's git client does: the vault's changes committed, outside vaultmem."""
    who = ["-c", "user.name=Person", "-c", "user.email=person@example.org"]
    done = subprocess.run(["git", "-C", str(vault), *who, "commit", "-qam", "by hand"], capture_output=True)
    assert done.returncode == 0, done.stderr


def test_a_note_edited_while_nothing_ran_is_found_whatever_the_catalog_cache_holds(vault: Path) -> None:
    """Each start reuses the catalog cache (``catalog.cache``, marshal behind a checksum) for the
    files unchanged since it was saved: a file edited since is read again (even one the person
    committed, which `git status` no longer lists), and a damaged cache is refused, the vault
    parsed and the cache written anew."""
    added = vaultmem(vault, "append", "--kind", "reference", "--title", "Weir birds", "--json",
                     "A heron nests by the weir.")  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert "heron" in _snippet_of(vault, "heron nests weir", "weir-birds")
    cache = vault / ".vaultmem" / "catalog.cache"
    assert cache.is_file()
    note = next(vault.rglob("weir-birds.md"))
    note.write_text(note.read_text(encoding="utf-8").replace("heron", "kingfisher"), encoding="utf-8")
    _commit_by_hand(vault)  # so `git status` at start lists nothing: only the cache's check sees it
    assert "kingfisher" in _snippet_of(vault, "kingfisher weir", "weir-birds")
    raw = cache.read_bytes()
    cache.write_bytes(raw[:-40] + bytes(b ^ 0x5A for b in raw[-40:]))  # damaged at its end
    note.write_text(note.read_text(encoding="utf-8").replace("kingfisher", "otter"), encoding="utf-8")
    assert "otter" in _snippet_of(vault, "otter weir", "weir-birds")
    assert cache.read_bytes() != raw and cache.read_bytes()[:16] == raw[:16]  # rebuilt, same format
    assert "otter" in _snippet_of(vault, "otter weir", "weir-birds")


def test_a_command_that_changes_nothing_leaves_the_catalog_cache_as_it_was(vault: Path) -> None:
    """Every command saved the catalog cache at its close, changed or not (0.36 s at 100k notes);
    now only a command whose catalog changed writes it, and one whose cache was deleted while it
    ran (the state directory is derived) writes it again."""
    added = vaultmem(vault, "append", "--kind", "reference", "--title", "Lock keeper", "--json",
                     "The lock keeper opens the gates at six.")  # fmt: skip
    assert added.returncode == 0, added.stderr
    cache = vault / ".vaultmem" / "catalog.cache"
    before = cache.stat()
    assert "gates" in _snippet_of(vault, "lock keeper gates", "lock-keeper")
    assert vaultmem(vault, "doctor").returncode == 0
    after = cache.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # not rewritten
    again = vaultmem(vault, "append", "--kind", "reference", "--title", "Weir keeper", "--json",
                     "The weir keeper clears the grid on Mondays.")  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert cache.stat().st_ino != before.st_ino  # a write changes the catalog: saved (atomically)
    cache.unlink()
    assert "grid" in _snippet_of(vault, "weir keeper grid", "weir-keeper")
    assert cache.is_file()  # the scan found no cache, read the vault, and saved it
