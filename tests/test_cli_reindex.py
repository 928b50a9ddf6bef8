"""``vaultmem reindex`` as a person runs it, with the real model: a progress bar of notes and chunks
on a terminal, and a reindex that embeds only the windows whose text changed (issue 15 Deliver 3,
issue 16 item 5)."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import hand_write

from vaultmem.index.chunking import chunk_texts

pytestmark = pytest.mark.model
VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))


def _page(n: int, words: int) -> str:
    return " ".join(f"page{n} paragraph word{k % 97} about topic{k % 13}." for k in range(words // 4))


PAGES = {f"pages/page-{n}.md": (f"Page {n}", _page(n, 500 + 150 * n)) for n in range(3)}
SHORT = {"pages/short-a.md": ("Short a", "A short note."), "pages/short-b.md": ("Short b", "Another one.")}


def _note(title: str, body: str) -> str:
    return f"---\ntitle: {title}\n---\n{body}\n"


def _windows(notes: dict[str, tuple[str, str]]) -> set[str]:
    return {c.text for title, body in notes.values() for c in chunk_texts(title, body)}


def reindex(vault: Path, *args: str) -> tuple[str, str]:
    """Run ``vaultmem reindex`` with standard error on a terminal; (stdout, what the terminal got)."""
    return on_a_terminal(vault, "reindex", *args)


def on_a_terminal(vault: Path, *args: str) -> tuple[str, str]:
    """Run ``vaultmem ARGS`` with standard error on a terminal; (stdout, what the terminal got)."""
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [VAULTMEM, "--vault", str(vault), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=follower,
            text=True,
            timeout=300,
        )
        os.close(follower)
        follower = -1
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed once the process and our end let go
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    assert done.returncode == 0, (done.stdout, shown)
    return done.stdout, shown.decode("utf-8", "replace")


def test_reindex_shows_notes_and_chunks_and_embeds_only_the_windows_an_edit_changed(vault: Path) -> None:
    notes = {**PAGES, **SHORT}
    for rel, (title, body) in notes.items():
        hand_write(vault, rel, _note(title, body), commit=True)
    windows = _windows(notes)
    assert len(windows) > len(notes)  # the pages are longer than one window

    out, terminal = reindex(vault)
    assert f"5/5 notes, {len(windows)} chunks embedded" in terminal, terminal
    assert re.search(r"\[#+\]", terminal)
    assert out.rstrip().endswith(f"; {len(windows)} chunks embedded"), out

    # A person adds a sentence at the end of a long page: only the windows it changed are embedded.
    rel = "pages/page-2.md"
    title, body = PAGES[rel]
    edited = {**notes, rel: (title, body + " One more closing sentence about the harbour lights.")}
    hand_write(vault, rel, _note(*edited[rel]), commit=True)
    changed = len(_windows(edited) - windows)
    assert 0 < changed < len(chunk_texts(*edited[rel]))
    out, terminal = reindex(vault)
    assert "(1 indexed" in out and out.rstrip().endswith(f"; {changed} chunks embedded"), out
    assert f"1/1 notes, {changed} chunks embedded" in terminal, terminal

    # A full rebuild starts a new index folder from the current one's embedding cache.
    out, _ = reindex(vault, "--full")
    assert out.rstrip().endswith("; 0 chunks embedded"), out


def test_doctor_shows_the_notes_it_checks_and_how_many_it_had_to_read(vault: Path) -> None:
    """The first `vaultmem doctor` of a state directory reads every note (~50 s at 100k notes):
    it shows a bar of the notes checked and read; the next reads none of them again."""
    for rel, (title, body) in SHORT.items():
        hand_write(vault, rel, _note(title, body), commit=True)
    _out, terminal = on_a_terminal(vault, "doctor")
    total = len(SHORT)
    assert re.search(rf"checking \[#+\] {total}/{total} notes, {total} read", terminal), terminal
    _out, terminal = on_a_terminal(vault, "doctor")
    assert f"{total}/{total} notes, 0 read" in terminal, terminal
