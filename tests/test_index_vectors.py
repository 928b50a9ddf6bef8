"""What the vector leg embeds for a note: windows of a long note, and a short note's header from
the note its session wrote before it (issue 15, Deliver 2 and 3)."""

from __future__ import annotations

from pathlib import Path

from test_index_store import CountingEmbedder, note

from vaultmem.index.chunking import chunk_texts
from vaultmem.index.note_index import NoteIndex
from vaultmem.index.records import NoteRecord

QUESTION = "do you still run on sundays with the club"
REPLY = "yes every sunday with the club"


def _session_notes() -> list[NoteRecord]:
    return [
        note(1, QUESTION, session="s1", created="2025-01-01T10:00:00+00:00"),
        note(2, "the printer toner invoice was paid", session="s2", created="2025-01-01T10:00:05+00:00"),
        note(3, REPLY, session="s1", created="2025-01-01T10:00:10+00:00"),
    ]


def test_a_short_note_is_embedded_with_its_sessions_previous_note_and_never_another_writers(
    tmp_path: Path,
) -> None:
    embedder = CountingEmbedder()
    index = NoteIndex(tmp_path / "state", embedder)
    index.upsert(_session_notes())
    index.wait_for_writes()
    headed = [t for t in embedder.embedded if t.startswith(f"Note 3\n{REPLY}\n")]
    assert headed == [f"Note 3\n{REPLY}\n{QUESTION}"]
    assert not any("toner" in t and "sunday" in t for t in embedder.embedded)
    index.close()


def test_changing_a_note_embeds_the_short_note_after_it_again_and_a_note_without_session_gets_no_header(
    tmp_path: Path,
) -> None:
    embedder = CountingEmbedder()
    index = NoteIndex(tmp_path / "state", embedder)
    first, other, reply = _session_notes()
    index.upsert([reply, other])  # the reply is indexed before the question it answers
    index.wait_for_writes()
    assert f"Note 3\n{REPLY}" in embedder.embedded  # no predecessor yet: plain
    index.upsert([first])
    index.wait_for_writes()
    assert f"Note 3\n{REPLY}\n{QUESTION}" in embedder.embedded  # the question arrived: headed
    edited = QUESTION + " in the rain"
    index.upsert([note(1, edited, session="s1", created=first.created)])
    index.wait_for_writes()
    assert f"Note 3\n{REPLY}\n{edited}" in embedder.embedded
    plain = note(4, REPLY + " too", created="2025-01-01T10:00:20+00:00")  # written by hand
    index.upsert([plain])
    index.wait_for_writes()
    assert not any(t.startswith(f"Note 4\n{REPLY} too\n") for t in embedder.embedded)
    index.close()


def test_a_long_note_is_embedded_window_by_window_and_an_edit_at_its_end_re_embeds_only_the_last(
    tmp_path: Path,
) -> None:
    body = " ".join(f"word{k}" for k in range(600))
    embedder = CountingEmbedder()
    index = NoteIndex(tmp_path / "state", embedder)
    index.upsert([note(9, body)])
    index.wait_for_writes()
    windows = [c.text for c in chunk_texts("Note 9", body)]
    assert len(windows) > 3 and sorted(embedder.embedded) == sorted(windows)
    spans, vectors = index.mirror.chunks(note(9, body).id)
    assert len(spans) == len(vectors) == len(windows) - 1
    embedder.embedded.clear()
    index.upsert([note(9, body + " closing")])
    index.wait_for_writes()
    assert len(embedder.embedded) == 1 and embedder.embedded[0].endswith("closing")
    index.close()
