"""`vaultmem clone` and `vaultmem sync` as a person runs them (subprocesses): what they print, their
exit statuses, and the errors a person can act on (no remote, offline, refused)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sync_daemons import Machine, bare_remote, closed_port_url, settle, tree, vaultmem

from tests.conftest import git


@pytest.fixture
def refusing_server() -> Iterator[str]:
    """An HTTP git server that asks for a password on every request (no credentials are set up)."""

    class Refuse(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="vault"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/vault.git"
    finally:
        server.shutdown()
        server.server_close()


def test_clone_makes_a_vault_with_the_note_merge_driver_and_sync_reports_what_went_out(
    tmp_path: Path,
) -> None:
    remote = bare_remote(tmp_path / "remote.git")
    done = vaultmem("clone", str(remote), str(tmp_path / "laptop"), "--git-dir", str(tmp_path / "laptop.git"))
    assert done.returncode == 0, done.stderr
    assert "cloned" in done.stdout and "vaultmem serve --vault" in done.stdout
    root = tmp_path / "laptop"
    assert (root / ".git").is_file() and (tmp_path / "laptop.git" / "HEAD").is_file()
    assert "*.md merge=vaultmem-note" in (root / ".gitattributes").read_text(encoding="utf-8")
    assert "vaultmem.vault.merge_driver" in git(root, "config", "--get", "merge.vaultmem-note.driver")
    (root / "memory/semantic/first.md").write_text("The first note, by hand.\n", encoding="utf-8")
    human = vaultmem("--vault", str(root), "sync")
    assert human.returncode == 0, human.stderr
    # The template's commit and the hand edit (committed as every command's start commits what it finds).
    assert human.stdout.startswith("synced with origin/main: 0 paths came in, 2 commits went out")
    assert "memory/semantic/first.md" in git(remote, "log", "--format=%B", "-1", "main")
    again = json.loads(vaultmem("--vault", str(root), "sync", "--json").stdout)
    assert again["ok"] and again["pushed_commits"] == 0 and again["incoming"] == [] and again["ahead"] == 0


def test_clone_reads_a_relative_remote_path_from_where_it_is_run(tmp_path: Path) -> None:
    bare_remote(tmp_path / "remote.git")
    done = vaultmem("clone", "remote.git", str(tmp_path / "machines" / "laptop"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    url = git(tmp_path / "machines" / "laptop", "remote", "get-url", "origin").strip()
    assert url == str((tmp_path / "remote.git").resolve())


def test_clone_refuses_a_folder_that_has_files_and_changes_nothing(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path / "remote.git")
    target = tmp_path / "notes"
    target.mkdir()
    (target / "mine.md").write_text("Mine.\n", encoding="utf-8")
    done = vaultmem("clone", str(remote), str(target))
    assert done.returncode == 1 and "is not an empty folder" in done.stderr
    assert sorted(p.name for p in target.iterdir()) == ["mine.md"]


def test_init_registers_the_note_merge_driver(tmp_path: Path) -> None:
    done = vaultmem("init", str(tmp_path / "vault"))
    assert done.returncode == 0, done.stderr
    root = tmp_path / "vault"
    assert "*.md merge=vaultmem-note" in (root / ".gitattributes").read_text(encoding="utf-8")
    assert git(root, "config", "--get", "merge.vaultmem-note.driver").strip()
    assert git(root, "status", "--porcelain") == ""  # committed with the vault


def test_sync_without_a_remote_says_how_to_add_one(tmp_path: Path) -> None:
    assert vaultmem("init", str(tmp_path / "vault")).returncode == 0
    done = vaultmem("--vault", str(tmp_path / "vault"), "sync", "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["error_kind"] == "no_remote" and "git remote add origin" in report["errors"][0]
    assert "git remote add origin" in done.stderr


def test_an_offline_machine_is_told_so_keeps_working_and_sends_its_notes_when_back(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path / "remote.git")
    laptop = Machine(remote, tmp_path / "laptop")
    git(laptop.root, "remote", "set-url", "origin", closed_port_url())
    added = laptop.cli("append", "--kind", "reference", "--json", "Written on the train, offline.")
    assert added.returncode == 0, added.stderr
    done = laptop.cli("sync", "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["error_kind"] == "offline" and "keeps working here" in report["errors"][0]
    assert "cannot reach the remote 'origin'" in done.stderr
    assert laptop.cli("append", "--kind", "reference", "Still writing offline.").returncode == 0
    git(laptop.root, "remote", "set-url", "origin", str(remote))  # back online
    assert laptop.sync()["pushed_commits"] >= 2
    desktop = Machine(remote, tmp_path / "desktop")
    assert settle(remote, laptop, desktop) >= 2 and tree(laptop) == tree(desktop)
    assert json.loads(added.stdout)["id"] in (
        desktop.root / f"memory/semantic/{json.loads(added.stdout)['slug']}.md"
    ).read_text(encoding="utf-8")


def test_a_remote_that_refuses_access_is_reported_as_such_with_what_to_check(
    tmp_path: Path, refusing_server: str
) -> None:
    assert vaultmem("init", str(tmp_path / "vault")).returncode == 0
    root = tmp_path / "vault"
    git(root, "remote", "add", "origin", refusing_server)
    before = git(root, "rev-parse", "HEAD")
    done = vaultmem("--vault", str(root), "sync", "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["error_kind"] == "auth", report
    assert "refused access" in report["errors"][0] and "stores no credentials" in report["errors"][0]
    assert git(root, "rev-parse", "HEAD") == before and git(root, "status", "--porcelain") == ""


def test_a_vault_adopted_in_place_merges_vaultmems_notes_with_the_driver_and_leaves_the_root_alone(
    tmp_path: Path,
) -> None:
    """Issue 16 puts vaultmem's files in Memory/ among a person's notes: the driver's attributes go
    there too (a person's own `git pull` merges their notes as git always has)."""
    root = tmp_path / "obsidian"
    root.mkdir()
    (root / "Daily.md").write_text("My own note.\n", encoding="utf-8")
    assert vaultmem("init", str(root)).returncode == 0
    assert "*.md merge=vaultmem-note" in (root / "Memory/.gitattributes").read_text(encoding="utf-8")
    assert not (root / ".gitattributes").exists()
    remote = bare_remote(tmp_path / "remote.git")
    git(root, "remote", "add", "origin", str(remote))
    done = vaultmem("--vault", str(root), "sync", "--json")
    assert done.returncode == 0, done.stderr
    assert not (root / ".gitattributes").exists() and git(root, "status", "--porcelain") == ""
    other = Machine(remote, tmp_path / "other")
    assert (other.root / "Memory/.gitattributes").is_file() and (other.root / "Daily.md").is_file()


def test_a_remote_that_is_another_machines_vault_is_refused_with_what_to_do(tmp_path: Path) -> None:
    """docs/sync.md said "one of the machines themselves" works as the remote; a vault cloned from the
    laptop's vault could never push (git refuses a push into a checked-out branch), and each round
    ended on git's twenty-line refusal, filed as a problem with the address or access."""
    remote = bare_remote(tmp_path / "remote.git")
    laptop = Machine(remote, tmp_path / "laptop")
    laptop.sync()
    desk = Machine(laptop.root, tmp_path / "desk")  # its remote: the laptop's vault itself
    (desk.root / "memory/semantic/desk.md").write_text("A note on the desk.\n", encoding="utf-8")
    done = desk.cli("sync", "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["error_kind"] == "remote"
    assert "is a vault itself" in report["errors"][-1] and "git init --bare" in report["errors"][-1]
    assert "git init --bare" in done.stderr
