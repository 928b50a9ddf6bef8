"""The index's snapshot: an open after a clean close reads no LanceDB (vaultmem/index/snapshot.py).

What a user sees is a faster start and the same answers; what must never happen is an open that
adopts a snapshot the table moved on from (a crash after a write, another process's write, a
damaged file, another model) and so answers from a stale or wrong set of notes.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from vaultmem.index import snapshot
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.index.mirror import NoteMirror
from vaultmem.index.note_index import NoteIndex
from vaultmem.index.records import NoteRecord, SearchFilters

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "vaultmem.cli"]
WORDS = ["billing", "port", "staging", "deploy", "friday", "cache", "tea", "rain", "ledger", "queue"]


def record(n: int, rng: random.Random, text: str | None = None) -> NoteRecord:
    return NoteRecord(
        id=f"0190a000-0000-7000-8000-{n:012d}",
        path=f"notes/n{n}.md",
        slug=f"n{n}",
        title=f"Note {n}",
        kind=rng.choice(["note", "reference"]),
        status=rng.choice(["active", "active", "archived"]),
        project=rng.choice([None, "alpha", "beta"]),
        tags=tuple(t for t in ("x", "y") if rng.random() < 0.4),
        text=text or " ".join(rng.choice(WORDS) for _ in range(8)),
        content_hash=f"h{n}",
        created=f"2025-01-01T10:{n % 60:02d}:00+00:00",
        updated="2025-01-01T10:00:00+00:00",
        session=rng.choice([None, "s1", "s2"]),
    )


def cli(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``vaultmem ARGS`` as a subprocess (``check``: it must succeed)."""
    done = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=120)
    assert not check or done.returncode == 0, done.stdout + done.stderr
    return done


def cli_vault(tmp_path: Path, *texts: str, search: str | None = None) -> tuple[Path, dict[str, str]]:
    """A vault made through the CLI (fake embedder, home under ``tmp_path``): ``init``, an append
    per text, then, with ``search``, one search (which builds the index and saves its snapshot)."""
    env = {**os.environ, "VAULTMEM_EMBEDDER": "fake", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    vault = tmp_path / "vault"
    cli(env, "init", str(vault))
    for text in texts:
        cli(env, "append", "--vault", str(vault), "--kind", "reference", text)
    if search is not None:
        cli(env, "search", "--vault", str(vault), search)
    return vault, env


def answers(index: NoteIndex, query: str = "billing port staging") -> list[tuple[str, float]]:
    return [
        (h.record.id, round(h.score, 6)) for h in index.search(query, SearchFilters(statuses=None), k=20).hits
    ]


def built(folder: Path, n: int = 60) -> tuple[list[NoteRecord], list[tuple[str, float]]]:
    """An index of ``n`` notes under ``folder``, closed cleanly; its notes and a search's answers."""
    rng = random.Random(3)
    records = [record(i, rng) for i in range(n)]
    index = NoteIndex(folder, FakeEmbedder())
    index.upsert(records)
    index.delete_ids([records[5].id])
    index.wait_for_writes()
    found = answers(index)
    index.close()
    return [r for r in records if r.id != records[5].id], found


def test_an_open_after_a_clean_close_adopts_the_snapshot_and_answers_the_same(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    records, found = built(folder)
    assert (folder / snapshot.FILE).exists()
    index = NoteIndex(folder, FakeEmbedder())
    try:
        assert not index.tables_open  # nothing read from LanceDB
        assert answers(index) == found
        assert {r.id for r in index.iter_records()} == {r.id for r in records}
        assert index.get(records[0].id) == records[0]
        assert index.probe(tables=False) is None
        assert not index.tables_open
    finally:
        index.close()


def test_a_write_after_adopting_opens_the_tables_and_the_next_snapshot_holds_it(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    records, _ = built(folder)
    rng = random.Random(9)
    fresh = record(500, rng, text="the billing port in staging is 8443")
    index = NoteIndex(folder, FakeEmbedder())
    index.upsert([fresh])
    index.delete_ids([records[0].id])
    index.wait_for_writes()
    assert index.tables_open
    index.close()
    again = NoteIndex(folder, FakeEmbedder())
    try:
        assert not again.tables_open
        ids = {r.id for r in again.iter_records()}
        assert fresh.id in ids and records[0].id not in ids
    finally:
        again.close()
    snapshot.discard(folder)  # the table itself holds the same
    table = NoteIndex(folder, FakeEmbedder())
    try:
        assert table.tables_open
        assert {r.id for r in table.iter_records()} == ids
    finally:
        table.close()


def test_the_adopted_vectors_are_a_private_mapping_a_delete_never_writes_through(tmp_path: Path) -> None:
    """The matrix is the snapshot file mapped copy-on-write (no anonymous copy of it at a start):
    a delete, which moves the last row into the hole in place, must change this process's rows and
    never the file another start will read."""
    folder = tmp_path / "state"
    records, found = built(folder)
    before = (folder / snapshot.FILE).read_bytes()
    index = NoteIndex(folder, FakeEmbedder())
    try:
        assert not index.tables_open
        maps = Path("/proc/self/maps").read_text().splitlines()
        mapped = [m for m in maps if m.endswith(str(folder / snapshot.FILE))]
        assert mapped, "the snapshot's arrays are read into fresh memory, not mapped"
        gone = found[0][0]
        index.delete_ids([gone])
        index.wait_for_writes()
        kept = answers(index)
        assert gone not in {h for h, _ in kept}
        assert (folder / snapshot.FILE).read_bytes() == before  # nothing written through the mapping
    finally:
        index.close()
    again = NoteIndex(folder, FakeEmbedder())
    try:
        assert gone not in {r.id for r in again.iter_records()}
        assert len(list(again.iter_records())) == len(records) - 1
        assert answers(again) == kept
    finally:
        again.close()


def test_a_process_killed_after_a_write_leaves_a_snapshot_the_next_open_refuses(tmp_path: Path) -> None:
    """A supervisor's SIGKILL after a write: the table moved on, the old snapshot must not be used."""
    folder = tmp_path / "state"
    built(folder)
    script = textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        from vaultmem.index.embedder import FakeEmbedder
        from vaultmem.index.note_index import NoteIndex
        from vaultmem.index.records import NoteRecord
        index = NoteIndex(Path({str(folder)!r}), FakeEmbedder())
        assert not index.tables_open
        index.upsert([NoteRecord("0190a000-0000-7000-8000-000000000999", "notes/late.md", "late", "Late",
            "note", "active", None, (), "written just before the crash", "hlate",
            "2025-02-01T00:00:00+00:00", "2025-02-01T00:00:00+00:00")])
        index.wait_for_writes()
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == -9, done.stderr
    index = NoteIndex(folder, FakeEmbedder())
    try:
        assert index.tables_open  # the snapshot was refused: the table was read
        assert index.get("0190a000-0000-7000-8000-000000000999") is not None
    finally:
        index.close()


def test_writes_then_a_quiet_spell_save_a_snapshot_that_a_kill_keeps(tmp_path: Path) -> None:
    """Maintenance saves the snapshot once writes have paused: a process killed after that starts
    from the snapshot again, with the note it wrote."""
    folder = tmp_path / "state"
    built(folder)
    script = textwrap.dedent(
        f"""
        import os, signal, time
        from pathlib import Path
        from vaultmem.index import snapshot
        from vaultmem.index.embedder import FakeEmbedder
        from vaultmem.index.note_index import NoteIndex
        from vaultmem.index.records import NoteRecord
        folder = Path({str(folder)!r})
        index = NoteIndex(folder, FakeEmbedder(), quiet_snapshot_s=0.3)
        index.upsert([NoteRecord("0190a000-0000-7000-8000-000000000998", "notes/quiet.md", "quiet", "Quiet",
            "note", "active", None, (), "saved in a quiet spell", "hquiet",
            "2025-02-01T00:00:00+00:00", "2025-02-01T00:00:00+00:00")])
        index.wait_for_writes()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            saved = snapshot.load(folder, snapshot.table_key(folder), "fake-bow-64", 64)
            if saved is not None and any(r.slug == "quiet" for r in saved.records):
                print("saved", flush=True)
                break
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == -9 and done.stdout.strip() == "saved", done.stderr
    index = NoteIndex(folder, FakeEmbedder())
    try:
        assert not index.tables_open  # the snapshot of the quiet spell, not the table
        assert index.get("0190a000-0000-7000-8000-000000000998") is not None
    finally:
        index.close()


def test_another_process_writing_meanwhile_keeps_a_stale_mirror_out_of_the_snapshot(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    records, _ = built(folder)
    rng = random.Random(11)
    first = NoteIndex(folder, FakeEmbedder())  # adopts the snapshot
    second = NoteIndex(folder, FakeEmbedder())
    theirs = record(700, rng)
    second.upsert([theirs])
    second.wait_for_writes()
    second.close()  # its snapshot holds its note
    mine = record(701, rng)
    first.upsert([mine])  # the first has not seen the second's note
    first.wait_for_writes()
    assert first.get(theirs.id) is None
    first.close()  # the table's rows outnumber its mirror: no snapshot of it
    index = NoteIndex(folder, FakeEmbedder())
    try:
        assert index.tables_open
        ids = {r.id for r in index.iter_records()}
        assert {theirs.id, mine.id} <= ids and len(ids) == len(records) + 2
    finally:
        index.close()


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "flipped header", "flipped vector"])
def test_a_damaged_snapshot_is_ignored_and_the_table_read(tmp_path: Path, damage: str) -> None:
    folder = tmp_path / "state"
    records, found = built(folder)
    path = folder / snapshot.FILE
    raw = bytearray(path.read_bytes())
    if damage == "truncated":
        raw = raw[: len(raw) - 100]
    elif damage == "garbage":
        raw = bytearray(os.urandom(len(raw)))
    elif damage == "empty":
        raw = bytearray()
    elif damage == "flipped vector":  # the vectors are the file's last bytes (no long notes here)
        raw[-10] ^= 0x40
    else:
        raw[60] ^= 0xFF
    path.write_bytes(bytes(raw))
    index = NoteIndex(folder, FakeEmbedder())
    try:
        assert index.tables_open
        assert answers(index) == found
        assert len(list(index.iter_records())) == len(records)
    finally:
        index.close()
    assert path.read_bytes() != bytes(raw)  # replaced by a good one at close


def test_a_snapshot_of_another_model_is_not_adopted(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    built(folder)
    index = NoteIndex(folder, FakeEmbedder(dim=32))
    try:
        assert index.tables_open and index.needs_rebuild()
        assert index.rebuild() > 0
        assert len(answers(index)) > 0
    finally:
        index.close()
    again = NoteIndex(folder, FakeEmbedder(dim=32))
    try:
        assert not again.tables_open and not again.needs_rebuild()
    finally:
        again.close()


def test_save_and_load_keep_records_vectors_and_long_notes_chunks(tmp_path: Path) -> None:
    rng = random.Random(5)
    dim = 8
    records = [record(i, rng) for i in range(30)]
    vectors = np.random.default_rng(1).random((30, dim), dtype=np.float32)
    chunks = [(np.zeros((0, 2), np.int32), np.zeros((0, dim), np.float32)) for _ in records]
    chunks[3] = (np.array([[10, 90], [80, 160]], np.int32), np.ones((2, dim), np.float32))
    chunks[17] = (np.array([[5, 50]], np.int32), np.full((1, dim), 0.5, np.float32))
    mirror = NoteMirror(dim)
    mirror.replace(records, vectors.copy(), chunks)
    mirror.remove([records[0].id])  # the last row moves into the hole
    key = ("meta", (("a", 1, 2),))
    kept, matrix, exported = mirror.export()
    assert snapshot.save(tmp_path, key, "model", kept, matrix, exported, unindexed=4)
    loaded = snapshot.load(tmp_path, key, "model", dim)
    assert loaded is not None and loaded.unindexed == 4
    assert loaded.records == kept
    assert np.array_equal(loaded.vectors, matrix) and loaded.vectors.flags.writeable
    by_id = {r.id: c for r, c in zip(loaded.records, loaded.chunks, strict=True)}
    assert np.array_equal(by_id[records[3].id][0], chunks[3][0])
    assert np.array_equal(by_id[records[17].id][1], chunks[17][1])
    assert sum(len(c[0]) for c in loaded.chunks) == 3
    assert snapshot.load(tmp_path, ("meta", ()), "model", dim) is None  # another table
    assert snapshot.load(tmp_path, key, "other model", dim) is None
    assert snapshot.load(tmp_path, key, "model", dim + 1) is None


def test_the_key_changes_with_every_commit(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    built(folder)
    before = snapshot.table_key(folder)
    index = NoteIndex(folder, FakeEmbedder())
    index.upsert([record(900, random.Random(1))])
    index.wait_for_writes()
    assert snapshot.table_key(folder) != before
    index.close()
    assert snapshot.table_key(tmp_path / "nowhere") is None


def test_a_cli_search_after_a_clean_close_never_imports_lancedb(tmp_path: Path) -> None:
    """The CLI as a user runs it, twice: the second search answers the same without LanceDB."""
    vault, env = cli_vault(
        tmp_path, "the billing port in staging is 8443", "deploys happen on friday", "tea at four"
    )
    probe = textwrap.dedent(
        """
        import json, sys
        from vaultmem.cli import main
        code = main(sys.argv[1:])
        print(json.dumps({"lancedb": "lancedb" in sys.modules, "pyarrow": "pyarrow" in sys.modules}))
        sys.exit(code)
        """
    )
    args = ["search", "--vault", str(vault), "--json", "billing port"]
    runs = [
        subprocess.run(
            [sys.executable, "-c", probe, *args], env=env, capture_output=True, text=True, timeout=120
        )
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
    *first_answer, first_modules = runs[0].stdout.strip().splitlines()
    *second_answer, second_modules = runs[1].stdout.strip().splitlines()
    assert json.loads(first_modules)["lancedb"]  # the first search builds the index
    assert json.loads(second_modules) == {"lancedb": False, "pyarrow": False}
    assert second_answer == first_answer and "8443" in "".join(second_answer)


def test_doctor_reads_the_tables_and_writes_nothing_to_the_index(tmp_path: Path) -> None:
    """``vaultmem doctor`` reads only: its probe opens the tables, but its close neither folds rows
    nor saves a snapshot (a CLI subprocess, as a person runs it)."""
    from vaultmem.config import Settings
    from vaultmem.index import location

    vault, env = cli_vault(tmp_path, "the ledger queue drains at midnight", search="ledger")
    folder = location.current(Settings.resolve(vault).state_dir)
    snapshot.discard(folder)  # so the tables must be read, and a close that saves would save one
    before = snapshot.table_key(folder)
    cli(env, "doctor", "--vault", str(vault))
    assert not (folder / snapshot.FILE).exists()
    assert snapshot.table_key(folder) == before


@pytest.mark.parametrize(
    "name", ["index/mirror.snapshot", "index/lexical.state", "catalog.cache", "index/index.json"]
)
def test_a_pipe_in_place_of_a_state_file_never_hangs_a_command(tmp_path: Path, name: str) -> None:
    """A named pipe where a state file should be: the CLI search answers (a plain open would block)."""
    from vaultmem.config import Settings

    vault, env = cli_vault(tmp_path, "the ledger queue drains at midnight", search="ledger")
    target = Settings.resolve(vault).state_dir / name
    assert target.exists()
    target.unlink()
    os.mkfifo(target)
    done = cli(env, "search", "--vault", str(vault), "ledger")  # within its timeout
    assert "ledger queue" in done.stdout
    if name.endswith("index.json"):  # the index's own record: the index is rebuilt, and says so
        assert "named pipe" in done.stderr and "rebuilding it from the vault" in done.stderr


def test_doctor_reports_tables_it_cannot_read_though_the_snapshot_answers(tmp_path: Path) -> None:
    """Damage to the tables, made while nothing ran: ``vaultmem doctor`` reports it
    (``index_unreadable``, exit 1) instead of failing, and the next search rebuilds the index."""
    from vaultmem.config import Settings
    from vaultmem.index import location

    vault, env = cli_vault(tmp_path, "the ledger queue drains at midnight", search="ledger")
    data = location.current(Settings.resolve(vault).state_dir) / "lancedb" / "notes.lance" / "data"
    for part in data.iterdir():
        part.write_bytes(b"")  # a data file lost to a crash of the disk, say
    done = cli(env, "doctor", "--vault", str(vault), "--json", check=False)
    report = json.loads(done.stdout)
    assert done.returncode == 1 and report["index_unreadable"] and not report["ok"]
    assert "ledger queue" in cli(env, "search", "--vault", str(vault), "ledger").stdout


FILTERS = [
    SearchFilters(statuses=None),
    SearchFilters(),
    SearchFilters(statuses=frozenset({"archived"})),
    SearchFilters(statuses=None, project="alpha"),
    SearchFilters(statuses=None, kind="reference"),
    SearchFilters(project="beta", kind="note"),
    SearchFilters(statuses=None, project="nowhere"),
]


def test_a_reopened_index_answers_every_filter_as_the_process_that_wrote_it(tmp_path: Path) -> None:
    """The open builds the status, project and kind columns for every note at once (``replace``);
    the writes built them note by note (``put``). Both opens (the snapshot adopted, then the table
    read after the snapshot is gone) answer each filter with the same notes and scores."""
    folder = tmp_path / "state"
    rng = random.Random(11)
    index = NoteIndex(folder, FakeEmbedder())
    index.upsert([record(i, rng) for i in range(80)])
    index.wait_for_writes()

    def each(index: NoteIndex) -> list[list[tuple[str, float]]]:
        return [
            [(h.record.id, round(h.score, 6)) for h in index.search("billing port staging", f, k=30).hits]
            for f in FILTERS
        ]

    written = each(index)
    index.close()
    assert len({len(found) for found in written}) > 3 and written[-1] == []  # the filters differ
    for adopting in (True, False):
        if not adopting:
            (folder / snapshot.FILE).unlink()
        reopened = NoteIndex(folder, FakeEmbedder())
        try:
            assert reopened.adopted_snapshot is adopting
            assert each(reopened) == written
        finally:
            reopened.close()
