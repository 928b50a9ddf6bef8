"""What vaultmem commits of a person's files that are not notes, and how big ``.git`` grows for it.

A person's Obsidian vault kept on several machines: a plugin rewrites its megabytes of ``data.json``
as they work, and the vault holds a video and a note a tool keeps appending to. Through the real
surfaces: the CLI as a subprocess (``init``, commands, ``doctor``) and ``vaultmem serve``'s watcher.
Big files are made sparse (``truncate``), never written for real.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

from _support import ServeProcess, cli, git, persons_vault
from mcp_harness import wait_for

from vaultmem.vault.hidden_commits import STAMP

MIB = 2**20
PLUGIN = ".obsidian/plugins/dataview-cache/data.json"


def plugin_data(version: int) -> bytes:
    """A plugin's data file of ~1 MB that changes a little at each save (as a cache does)."""
    rng = random.Random(0)
    items = [{"id": f"item{k:05d}", "title": f"note {rng.random():.12f}", "n": 0} for k in range(20000)]
    for k in range(version * 50):
        items[k % len(items)]["n"] = version
    return json.dumps({"items": items}).encode()


def sparse(path: Path, size: int, head: bytes = b"") -> None:
    """A file of ``size`` bytes that takes no disk (``truncate``), starting with ``head``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        f.write(head)
        f.truncate(size)


def git_bytes(vault: Path) -> int:
    return sum(p.stat().st_size for p in (vault / ".git").rglob("*") if p.is_file())


def commits_of(vault: Path, rel: str) -> int:
    return len(git(vault, "log", "--format=%H", "--", rel).split())


def stamp(vault: Path) -> Path:
    return vault / "Memory" / ".vaultmem" / STAMP


def test_a_plugins_data_rewritten_between_cli_commands_is_committed_once_per_interval(tmp_path: Path) -> None:
    # Hidden folders were committed at every start of any vaultmem process, and every CLI command
    # is one: a plugin's data.json changed between five commands went into git five times (an 8 MB
    # one grew .git by 7.4 MB), unpacked. Now a start commits them once per hidden_commit_interval
    # (10 min; a stamp in the state directory): the settings still reach git, within that time.
    config = tmp_path / "config"
    vault = persons_vault(tmp_path, {PLUGIN: plugin_data(0), "Garden.md": b"Beds and paths.\n"})
    assert commits_of(vault, PLUGIN) == 1  # init's first commit: the vault as it was
    before = git_bytes(vault)
    for version in range(1, 6):
        (vault / PLUGIN).write_bytes(plugin_data(version))
        search = cli(config, "search", "--vault", str(vault), "garden")
        assert search.returncode == 0, search.stderr
    assert commits_of(vault, PLUGIN) <= 2, git(vault, "log", "--format=%s", "--", PLUGIN)
    growth = git_bytes(vault) - before
    assert growth < 2 * len(plugin_data(5)), growth
    doctor = json.loads(cli(config, "doctor", "--json", "--vault", str(vault)).stdout)
    assert doctor["committed_at_start"] == [PLUGIN]  # listed as waiting, not failing
    # Ten minutes later (the stamp set back), the next command commits the last version.
    past = time.time() - 601
    os.utime(stamp(vault), (past, past))
    assert cli(config, "search", "--vault", str(vault), "garden").returncode == 0
    assert git(vault, "status", "--porcelain", "--", ".obsidian").strip() == ""
    assert git(vault, "show", f"HEAD:{PLUGIN}", check=True).encode() == plugin_data(5)


def test_a_daemon_commits_changed_settings_on_its_rescan_and_when_it_stops(tmp_path: Path) -> None:
    # A daemon runs for weeks: the settings a person changes must reach git (and their other
    # machines) without a restart, within hidden_commit_interval and a rescan, and at its stop.
    config = tmp_path / "config"
    vault = persons_vault(tmp_path, {PLUGIN: plugin_data(0), "Garden.md": b"Beds.\n"})
    (vault / "Memory/vaultmem.yaml").write_text(
        "hidden_commit_interval: 1\nrescan_interval: 1\n", encoding="utf-8"
    )
    server = ServeProcess(vault, config)
    try:
        (vault / PLUGIN).write_bytes(plugin_data(1))
        wait_for(
            lambda: git(vault, "status", "--porcelain", "--", ".obsidian").strip() == "",
            timeout=30,
            interval=0.2,
        )
        assert git(vault, "show", f"HEAD:{PLUGIN}").encode() == plugin_data(1)
        assert git(vault, "log", "-1", "--format=%an", "--", PLUGIN) != "vaultmem"  # the person's
        (vault / ".obsidian/app.json").write_bytes(b'{"promptDelete": false}')
    finally:
        assert server.stop() == 0
    assert git(vault, "status", "--porcelain", "--", ".obsidian").strip() == ""


def test_init_commits_no_video_and_says_so_and_a_big_note_is_committed_with_a_warning(tmp_path: Path) -> None:
    # `vaultmem init` committed a 50 MB video and a 269 MB note without a word, and every start
    # and the watcher would commit the next such file the same way. A file above max_commit_file_mb
    # (25 MiB) that is not a note is now never committed by vaultmem, and said so: init's output,
    # a log line, doctor with what to do. A note above it is the person's knowledge: committed all
    # the same (history never loses a note silently), and init and doctor warn of it.
    config = tmp_path / "config"
    vault = tmp_path / "notes"
    sparse(vault / "attachments/holiday.mp4", 50 * MIB, b"\x00\x00\x00\x18ftypmp42")
    sparse(vault / "Logs/Build log.md", 30 * MIB, b"# Build log\n\nstep one passed\n")
    (vault / "attachments/sketch.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    (vault / ".obsidian").mkdir()
    init = cli(config, "init", str(vault))
    assert init.returncode == 0, init.stderr
    tracked = git(vault, "ls-files").split("\n")
    assert "attachments/holiday.mp4" not in tracked
    assert "Logs/Build log.md" in tracked and "attachments/sketch.png" in tracked
    assert "not committed: attachments/holiday.mp4 (50.0 MiB)" in init.stdout, init.stdout
    assert ".gitignore" in init.stdout and "max_commit_file_mb" in init.stdout
    assert "warning: the note Logs/Build log.md (30.0 MiB)" in init.stdout, init.stdout
    assert "holiday.mp4" in init.stderr  # the log line

    # A CLI command's start does not commit it either; doctor names it, with the advice, and fails.
    sparse(vault / "attachments/talk.mkv", 40 * MIB)
    assert cli(config, "search", "--vault", str(vault), "build").returncode == 0
    assert "attachments/talk.mkv" not in git(vault, "ls-files")
    doctor = cli(config, "doctor", "--json", "--vault", str(vault))
    report = json.loads(doctor.stdout)
    assert report["too_big_to_commit"] == [
        "attachments/holiday.mp4 (50.0 MiB)",
        "attachments/talk.mkv (40.0 MiB)",
    ]
    assert report["big_notes"] == ["Logs/Build log.md (30.0 MiB)"]
    assert report["uncommitted"] == [] and doctor.returncode == 1
    text = cli(config, "doctor", "--vault", str(vault)).stdout
    assert "too big for git" in text and "add them to .gitignore" in text and "Logs/Build log.md" in text
    # The person's answer: ignore them. Doctor is satisfied (vaultmem commits their .gitignore).
    with (vault / ".gitignore").open("a", encoding="utf-8") as f:
        f.write("*.mp4\n*.mkv\n")
    report = json.loads(cli(config, "doctor", "--json", "--vault", str(vault)).stdout)
    assert report["too_big_to_commit"] == [] and report["big_notes"] == ["Logs/Build log.md (30.0 MiB)"]


def test_the_watcher_commits_a_pasted_image_but_not_a_video_dropped_beside_it(tmp_path: Path) -> None:
    config = tmp_path / "config"
    vault = persons_vault(tmp_path, {"Garden.md": b"Beds.\n"})
    server = ServeProcess(vault, config)
    try:
        sparse(vault / "attachments/clip.mov", 30 * MIB, b"\x00\x00\x00\x14ftypqt  ")
        (vault / "attachments/Pasted image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
        wait_for(lambda: "attachments/Pasted image.png" in git(vault, "ls-files"), timeout=30, interval=0.2)
        server.output.until(r"attachments/clip\.mov \(30\.0 MiB\) is above the 25 MiB limit")
        assert "attachments/clip.mov" not in git(vault, "ls-files")
    finally:
        assert server.stop() == 0
    assert "attachments/clip.mov" not in git(vault, "ls-files")
    assert (vault / "attachments/clip.mov").stat().st_size == 30 * MIB  # the person's file, as it was


def test_loose_versions_of_a_churning_file_are_packed_once_they_pass_the_threshold(tmp_path: Path) -> None:
    # git's own gc --auto counts loose objects (6,700), not bytes: a few big versions of a plugin's
    # data stayed loose, each whole. After a commit of hidden folders they are packed past 32 MiB.
    from vaultmem.vault.hidden_commits import pack_loose_objects
    from vaultmem.vault.history import GitRepo

    repo = GitRepo.init(tmp_path / "v")
    for version in range(4):
        (tmp_path / "v/data.json").write_bytes(plugin_data(version))
        repo.commit_paths(["data.json"], f"v{version}")
    loose = git(tmp_path / "v", "count-objects", "-v")
    assert "size: 0" not in loose
    assert not pack_loose_objects(repo, threshold=64 * MIB)  # below it: nothing runs
    assert pack_loose_objects(repo, threshold=1024)
    counted = dict(line.split(": ") for line in git(tmp_path / "v", "count-objects", "-v").splitlines())
    assert counted["count"] == "0" and counted["packs"] == "1"
    assert git(tmp_path / "v", "show", "HEAD:data.json").encode() == plugin_data(3)
