"""``vault/gone.py``: the ids a person's notes had before a rename (derived state)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vaultmem.notes.ids import derived_id
from vaultmem.vault import gone
from vaultmem.vault.entry import Entry
from vaultmem.vault.gone import GoneNotes

BASE = Entry(
    path="Kettle.md", id=None, title="Kettle", kind="reference", status="active", project=None, tags=(),
    created=None, updated=None, fingerprint="fp-kettle", content_hash="h-kettle", source_id=None,
    source_url=None, always_load=False, links=(), mtime_ns=1, size=200,
)  # fmt: skip


def note(path: str, **changes: object) -> Entry:
    return BASE._replace(path=path, **changes)  # type: ignore[arg-type]


def test_a_gone_note_answers_the_one_note_of_its_bytes_under_another_name(tmp_path: Path) -> None:
    notes = GoneNotes(tmp_path / "gone-ids")
    notes.went(note("Kettle.md"))
    notes.went(note("Appliances/Kettle.md"))  # moved twice: both old ids find the note
    now = note("Kitchen/Kettle.md")
    for old in ("Kettle.md", "Appliances/Kettle.md"):
        assert notes.successor(derived_id(old), lambda fp: [now] if fp == "fp-kettle" else []) == now
    edited = note("Kitchen/Kettle.md", content_hash="h-edited")  # same words once normalised, other bytes
    assert notes.successor(derived_id("Kettle.md"), lambda _fp: [edited]) is None
    copy = note("Spare kettle.md", mtime_ns=2)  # the same bytes, written at another time
    assert notes.successor(derived_id("Kettle.md"), lambda _fp: [now, copy]) == now
    assert notes.successor(derived_id("Kettle.md"), lambda _fp: [copy]) is None  # a twin, not the note
    twin = note("Spare kettle.md")  # `cp -p`: bytes and time alike
    assert notes.successor(derived_id("Kettle.md"), lambda _fp: [now, twin]) is None  # no guessing
    with_id = note("Kitchen/Kettle.md", id="01a2b3c4-0000-7000-8000-000000000000")
    assert notes.successor(derived_id("Kettle.md"), lambda _fp: [with_id]) is None  # vaultmem's own
    assert notes.successor(derived_id("Other.md"), lambda _fp: [now]) is None  # never gone


def test_only_a_persons_notes_of_some_size_are_remembered_and_the_newest_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = GoneNotes(tmp_path / "gone-ids")
    notes.went(note("Empty.md", size=gone.MIN_SIZE - 1))
    notes.went(note("Mine.md", id="01a2b3c4-0000-7000-8000-000000000000"))
    notes.went(None)
    assert notes.successor(derived_id("Empty.md"), lambda _fp: [note("New.md")]) is None
    assert notes.successor(derived_id("Mine.md"), lambda _fp: [note("New.md")]) is None
    monkeypatch.setattr(gone, "KEPT", 3)
    for i in range(5):
        notes.went(note(f"n{i}.md"))
    found = [i for i in range(5) if notes.successor(derived_id(f"n{i}.md"), lambda _fp: [note("x.md")])]
    assert found == [2, 3, 4]


def test_the_record_survives_a_restart_and_a_damaged_file_is_begun_afresh(tmp_path: Path) -> None:
    file = tmp_path / "gone-ids"
    notes = GoneNotes(file)
    notes.went(note("Kettle.md"))
    notes.save()
    now = note("Kitchen/Kettle.md")
    assert GoneNotes(file).successor(derived_id("Kettle.md"), lambda _fp: [now]) == now
    file.write_bytes(file.read_bytes()[:-5])
    assert GoneNotes(file).successor(derived_id("Kettle.md"), lambda _fp: [now]) is None


def test_the_record_follows_the_edits_of_the_note_it_names_but_not_of_one_of_two_twins(
    tmp_path: Path,
) -> None:
    notes = GoneNotes(tmp_path / "gone-ids")
    notes.went(note("Kettle.md"))
    moved = note("Appliances/Kettle.md")
    edited = moved._replace(fingerprint="fp-edited", content_hash="h-edited", mtime_ns=5)
    notes.edited(moved, edited, lambda _fp: [])  # the person writes on at the new name
    assert notes.successor(derived_id("Kettle.md"), lambda _fp: [edited]) == edited
    notes.went(note("Review.md"))
    twin = note("Review copy.md")  # another file of those bytes and that time still there
    notes.edited(
        moved._replace(path="Review old.md"), edited._replace(path="Review old.md"), lambda _fp: [twin]
    )
    assert (
        notes.successor(derived_id("Review.md"), lambda _fp: [edited._replace(path="Review old.md")]) is None
    )
    assert notes.successor(derived_id("Review.md"), lambda _fp: [twin]) == twin  # unchanged: as before


def test_a_note_moved_onto_a_renamed_notes_name_is_no_edit_of_it(tmp_path: Path) -> None:
    notes = GoneNotes(tmp_path / "gone-ids")
    notes.went(note("Kettle.md"))
    moved = note("Old kettle.md")  # Kettle.md renamed
    toaster = moved._replace(fingerprint="fp-toaster", content_hash="h-toaster", mtime_ns=7)
    notes.went(toaster._replace(path="Toaster.md"))  # then moved onto that name, its file gone
    notes.edited(moved, toaster, lambda _fp: [])
    assert notes.successor(derived_id("Kettle.md"), lambda _fp: [toaster]) is None
    notes = GoneNotes(tmp_path / "other")
    notes.went(note("Kettle.md"))
    still_there = toaster._replace(path="Toaster.md")  # the toaster's file not seen gone yet
    notes.edited(moved, toaster, lambda _fp: [toaster, still_there])
    assert notes.successor(derived_id("Kettle.md"), lambda _fp: [toaster]) is None


def test_two_processes_saving_one_file_keep_each_others_records_the_newer_state_winning(
    tmp_path: Path,
) -> None:
    file = tmp_path / "gone-ids"
    daemon, cli = GoneNotes(file), GoneNotes(file)
    cli.went(note("Kettle.md"))
    followed = note("Appliances/Kettle.md", mtime_ns=9)  # the CLI's merge wrote it anew
    cli.edited(note("Kettle.md"), followed, lambda _fp: [])
    cli.save()
    daemon.went(note("Kettle.md"))  # its watcher saw the deletion only
    daemon.went(note("Teapot.md", fingerprint="fp-teapot", content_hash="h-teapot"))
    daemon.save()
    again = GoneNotes(file)
    assert again.successor(derived_id("Kettle.md"), lambda _fp: [followed]) == followed
    teapot = note("Pots/Teapot.md", fingerprint="fp-teapot", content_hash="h-teapot")
    assert again.successor(derived_id("Teapot.md"), lambda _fp: [teapot]) == teapot
