"""A person's edits made while nothing runs, as the next command's reconcile sees them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_an_id_edited_by_hand_leaves_no_row_under_the_old_id(tmp_path: Path) -> None:
    """The whole-vault reconcile (a CLI search after the edit) drops the row of the old id: a
    search used to answer with both, the old id a ghost no tool could open."""
    env = {**os.environ, "VAULTMEM_EMBEDDER": "fake", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    vault = tmp_path / "vault"
    cli = [sys.executable, "-m", "vaultmem.cli"]

    def run(*args: str) -> str:
        done = subprocess.run([*cli, *args], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    run("init", str(vault))
    old = json.loads(
        run("append", "--vault", str(vault), "--kind", "reference", "--json", "the kiln fires at noon")
    )
    assert [
        r["id"] for r in json.loads(run("search", "--vault", str(vault), "--json", "kiln"))["results"]
    ] == [old["id"]]
    note = next(vault.rglob("the-kiln-fires-at-noon.md"))
    new_id = "0190b000-0000-7000-8000-00000000beef"
    text = note.read_text(encoding="utf-8")
    assert f"id: {old['id']}" in text
    note.write_text(text.replace(f"id: {old['id']}", f"id: {new_id}"), encoding="utf-8")
    found = json.loads(run("search", "--vault", str(vault), "--json", "kiln"))["results"]
    assert [r["id"] for r in found] == [new_id]
    # A search by the old id's prefix finds no row under it (the one note may still answer, under
    # its new id: with one note the fake embedder's vectors can pass the relevance gate by chance).
    by_prefix = json.loads(run("search", "--vault", str(vault), "--json", old["id"][:13]))["results"]
    assert [r["id"] for r in by_prefix if r["id"] != new_id] == []


def test_copies_made_by_hand_while_nothing_runs_never_take_the_originals_id(tmp_path: Path) -> None:
    """Copies of a note made with its id while nothing ran, whatever the folder's listing order:
    the original, unchanged since it was read, keeps its id (the watcher's rule), and each copy is
    reported and searchable under an id of its own."""
    env = {**os.environ, "VAULTMEM_EMBEDDER": "fake", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    vault = tmp_path / "vault"
    cli = [sys.executable, "-m", "vaultmem.cli"]

    def run(*args: str, ok: bool = True) -> str:
        done = subprocess.run([*cli, *args], env=env, capture_output=True, text=True, timeout=120)
        assert not ok or done.returncode == 0, done.stderr
        return done.stdout

    run("init", str(vault))
    note = json.loads(
        run("append", "--vault", str(vault), "--kind", "reference", "--json", "the kiln fires at noon")
    )
    run("search", "--vault", str(vault), "kiln")  # the catalog and the index know the original
    original = next(vault.rglob("the-kiln-fires-at-noon.md"))
    for name in ("a-copy", "b-copy", "zz-copy", "kiln-copy", "0-copy", "the-kiln-copy"):
        (original.parent / f"{name}.md").write_bytes(original.read_bytes())
    found = json.loads(run("search", "--vault", str(vault), "--json", note["id"]))["results"]
    assert [(r["id"], r["slug"]) for r in found] == [(note["id"], "the-kiln-fires-at-noon")]
    hits = json.loads(run("search", "--vault", str(vault), "--json", "--limit", "20", "kiln fires noon"))[
        "results"
    ]
    assert len(hits) == 7 and len({r["id"] for r in hits}) == 7  # every copy searchable, none under the id
    report = json.loads(run("doctor", "--vault", str(vault), "--json", ok=False))
    assert original.name not in " ".join(report["malformed"])  # the copies are the ones reported
    assert report["index_missing"] == []


def test_a_copy_whose_original_was_deleted_while_nothing_ran_takes_its_id(tmp_path: Path) -> None:
    """The copy was indexed under an id of its own; the original is deleted while nothing runs. The
    next start's catalog gives the copy the id (no other file holds it), and its row moves there,
    though its content did not change: no row is left under the copy's old id."""
    env = {**os.environ, "VAULTMEM_EMBEDDER": "fake", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    vault = tmp_path / "vault"
    cli = [sys.executable, "-m", "vaultmem.cli"]

    def search(query: str) -> list[tuple[str, str]]:
        done = subprocess.run(
            [*cli, "search", "--vault", str(vault), "--json", query], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return [(r["slug"], r["id"]) for r in json.loads(done.stdout)["results"]]

    subprocess.run([*cli, "init", str(vault)], env=env, check=True, capture_output=True)
    appended = subprocess.run(
        [*cli, "append", "--vault", str(vault), "--kind", "reference", "--json", "the kiln fires at noon"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    note_id = json.loads(appended.stdout)["id"]
    original = next(vault.rglob("the-kiln-fires-at-noon.md"))
    copy = original.with_name("kiln-copy.md")
    copy.write_bytes(original.read_bytes())
    found = dict(search("kiln fires noon"))
    assert found["the-kiln-fires-at-noon"] == note_id and found["kiln-copy"] != note_id
    copy_id = found["kiln-copy"]
    original.unlink()
    assert search("kiln fires noon") == [("kiln-copy", note_id)]
    assert search(copy_id) == []  # nothing answers to the copy's old id
