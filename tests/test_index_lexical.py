"""The lexical leg held in memory (issue 15): BM25F over titles and bodies, kept in step with the
mirror's rows through edits, removals, reloads and compactions."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vaultmem.index import bm25, lexical
from vaultmem.index.lexical import LexicalIndex
from vaultmem.index.mirror import NoteMirror
from vaultmem.index.records import NoteRecord, SearchFilters, lexical_fields

DIM = 4
VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))


def record(
    note_id: str, title: str, text: str, *, project: str | None = None, tags: tuple[str, ...] = ()
) -> NoteRecord:
    return NoteRecord(
        id=note_id,
        path=f"memory/{note_id}.md",
        slug=note_id,
        title=title,
        kind="fact",
        status="active",
        project=project,
        tags=tags,
        text=text,
        content_hash=f"h-{note_id}-{hash((title, text))}",
        created="2026-12-01T00:00:00+00:00",
        updated="2026-12-01T00:00:00+00:00",
    )


def vectors(n: int) -> np.ndarray:
    out = np.zeros((n, DIM), dtype=np.float32)
    out[:, 0] = 1.0
    return out


def mirror_of(records: list[NoteRecord]) -> NoteMirror:
    mirror = NoteMirror(DIM)
    mirror.put(records, vectors(len(records)))
    return mirror


def ids(found: list[tuple[str, float]]) -> list[str]:
    return [i for i, _ in found]


def test_a_title_word_outweighs_the_same_word_in_a_body_of_the_same_length() -> None:
    mirror = mirror_of(
        [
            record("in-title", "Deploy windows", "we ship on tuesdays after standup"),
            record("in-body", "Release habits", "we deploy on tuesdays after standup"),
        ]
    )
    assert ids(mirror.lexical("deploy", SearchFilters(), 5)) == ["in-title", "in-body"]


def test_words_match_by_stem_and_stop_words_and_case_do_not_count() -> None:
    mirror = mirror_of([record("a", "Runbook", "Deployments are running through the Staging cluster")])
    assert ids(mirror.lexical("deploying RUNS", SearchFilters(), 5)) == ["a"]
    assert mirror.lexical("the and of", SearchFilters(), 5) == []


def test_scores_follow_bm25f_on_a_small_corpus() -> None:
    """One body term, no title match: idf * tf / (k1 + tf) with tf normalised by the body's length."""
    index = LexicalIndex()
    docs = [record("a", "x", "apple banana"), record("b", "y", "banana cherry cherry date")]
    for row, r in enumerate(docs):
        index.add(r, row)
    rows, scores = index.scores("apple")
    assert rows.tolist() == [0]
    average = (2 + 4) / 2  # the bodies' lengths in terms: "apple banana", "banana cherry cherry date"
    norm = (1 - bm25.B_BODY) + bm25.B_BODY * 2 / average
    tf = 1 / norm
    idf = math.log(1 + (2 - 1 + 0.5) / (1 + 0.5))
    assert scores[0] == pytest.approx(idf * tf / (bm25.K1 + tf), rel=1e-5)


def test_an_edit_replaces_the_old_words_and_a_removal_moves_the_last_row_in_its_place() -> None:
    mirror = mirror_of([record(f"n{i}", f"note {i}", f"word{i} common") for i in range(5)])
    mirror.put([record("n1", "note 1", "rewritten entirely")], vectors(1))
    assert mirror.lexical("word1", SearchFilters(), 5) == []
    assert ids(mirror.lexical("rewritten", SearchFilters(), 5)) == ["n1"]
    mirror.remove(["n0"])  # n4 moves into row 0
    assert ids(mirror.lexical("word4", SearchFilters(), 5)) == ["n4"]
    assert mirror.lexical("word0", SearchFilters(), 5) == []
    assert sorted(ids(mirror.lexical("common", SearchFilters(), 10))) == ["n2", "n3", "n4"]


def test_the_scope_applies_before_the_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """A narrow project's notes are found even when a hundred better matches lie outside it."""
    outside = [record(f"o{i}", "shared shared", "shared shared shared", project="big") for i in range(100)]
    inside = record("mine", "note", "shared once among many other words here", project="small")
    mirror = mirror_of([*outside, inside])
    assert ids(mirror.lexical("shared", SearchFilters(project="small"), 3)) == ["mine"]
    assert mirror.lexical("shared", SearchFilters(project="nowhere"), 3) == []
    assert len(mirror.lexical("shared", SearchFilters(), 3)) == 3


def test_a_note_grown_write_by_write_scores_as_one_reloaded_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Edits, removals and compactions leave the same scores as a fresh build of what is left."""
    monkeypatch.setattr(lexical, "COMPACT_AT", 8)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    grown = NoteMirror(DIM)
    for step in range(60):  # many edits of a few notes: retired slots, several compactions
        note = f"n{step % 7}"
        text = " ".join(words[(step + k) % len(words)] for k in range(step % 5 + 1))
        grown.put(
            [record(note, f"title {words[step % 8]}", text, tags=("t",) if step % 3 else ())], vectors(1)
        )
        if step % 11 == 10:
            grown.remove([f"n{(step // 11) % 7}"])
    assert grown._lexical._live == len(grown)
    assert len(grown._lexical._row) < 60
    fresh = NoteMirror(DIM)
    kept = grown.records()
    fresh.replace(kept, vectors(len(kept)))
    for query in ["alpha beta", "theta title", "t gamma", "epsilon zeta eta"]:
        a, b = grown.lexical(query, SearchFilters(), 10), fresh.lexical(query, SearchFilters(), 10)
        assert ids(a) == ids(b), query
        assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-5), query


def test_tags_count_as_body_words() -> None:
    mirror = mirror_of(
        [record("a", "Plain", "nothing here", tags=("kubernetes",)), record("b", "Other", "text")]
    )
    assert ids(mirror.lexical("kubernetes", SearchFilters(), 5)) == ["a"]


def test_the_past_scores_a_moment_as_the_present_scores_the_same_notes() -> None:
    """``as_of``'s corpus (:class:`Bm25Corpus`, statistics per query over the notes of then) and
    the present's leg give one note the same BM25F score when the moment holds the same notes."""
    notes = [
        record("a", "Deploy policy", "We deploy on Tuesdays; deploys wait for the review.", tags=("ops",)),
        record("b", "Standup", "The team meets at nine and talks about the deploy queue."),
        record("c", "Holiday", "Nothing about shipping at all here, only a long rest."),
    ]
    present = LexicalIndex()
    past = bm25.Bm25Corpus(bm25.Analyzer())
    for row, r in enumerate(notes):
        present.add(r, row)
        past.add(*lexical_fields(r))
    past.add("Deploy policy", "an older version nobody holds now")
    rows, scores = present.scores("when do we deploy ops")
    then = past.scores("when do we deploy ops", np.array([1, 1, 1, 0], dtype=np.int64))
    assert dict(zip(rows.tolist(), scores.tolist(), strict=True)) == pytest.approx(
        {row: float(then[row]) for row in (0, 1)}, rel=1e-5
    )
    assert then[2] == 0 and then[3] == 0


def test_a_saved_state_is_adopted_where_the_notes_are_the_same_and_rebuilt_where_they_changed() -> None:
    notes = [record(f"n{i}", f"note {i}", f"word{i} shared text {i % 3}") for i in range(30)]
    first = mirror_of(notes)
    state = first.lexical_state()
    assert state is not None and first.lexical_state() is None  # saved once; unchanged since
    later = [r for r in notes if r.id != "n3"]  # n3 removed, n5 edited, n30 new, meanwhile
    later[4] = record("n5", "note 5", "rewritten by hand")
    later.append(record("n30", "note 30", "arrived while closed"))
    adopted, fresh = NoteMirror(DIM), NoteMirror(DIM)
    adopted.replace(later, vectors(len(later)), lexical_state=state)
    fresh.replace(later, vectors(len(later)))
    assert adopted.lexical_state() is not None  # it changed against the state: worth saving again
    for query in ["word3", "word5", "rewritten", "arrived", "shared text", "note 7 word7"]:
        a, b = adopted.lexical(query, SearchFilters(), 10), fresh.lexical(query, SearchFilters(), 10)
        assert ids(a) == ids(b), query
        assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-5), query
    unchanged = NoteMirror(DIM)
    unchanged.replace(notes, vectors(len(notes)), lexical_state=state)
    assert unchanged.lexical_state() is None  # every slot adopted, nothing analysed


HEADER = (lexical.STATE_FORMAT, bm25.analysis_fingerprint())
_KEY = lexical.state_key(record("a", "Kiln", "fires at cone six"))
_F32 = np.array([1.0], dtype=np.float32).tobytes()


def _I32(n: int) -> bytes:
    return np.array([n], dtype=np.int32).tobytes()


@pytest.mark.parametrize(
    "state",
    [
        ("garbage",),
        ((lexical.STATE_FORMAT + 1, HEADER[1]), [], [], [], b"", b"", [], [], [], [], b""),  # another layout
        ((lexical.STATE_FORMAT, "another analysis"), [], [], [], b"", b"", [], [], [], [], b""),
        (HEADER, ["t"], [b"\x00"], [b""], b"", b"", [], [], [], [], b""),  # a posting list cut short
        (HEADER, ["t"], [b""], [b""], b"\x00\x00", b"", ["k"], [], [], [], b""),  # lengths unmatched
        (HEADER, ["t"], [b""], [b""], b"", b"", [], [0], [b""], [], b""),  # context postings missing
        (HEADER, ["t"], [b""], [b""], b"", b"", [], [1], [b""], [b""], b""),  # a context of no term
        (HEADER, ["t"], [b""], [b""], b"", b"", [], [0, 0], [b"", b""], [b"", b""], b""),  # one twice
        (HEADER, [], [], [], b"", b"", [], [], [], [], b"\x00\x00\x00\x00"),  # a context length too many
        (HEADER, [], [], [], b"", b"", []),  # the layout before the context field
        # written whole (the checksum holds) but wrong: every search for "kiln" raised
        (HEADER, ["kiln"], [_I32(0)], [b""], _F32, _F32, [_KEY], [], [], [], _F32),  # counts short
        (HEADER, ["kiln"], [_I32(5)], [_I32(1)], _F32, _F32, [_KEY], [], [], [], _F32),  # no slot 5
        (HEADER, ["kiln"], [b""], [b""], _F32, _F32, [_KEY], [0], [_I32(3)], [_I32(1)], _F32),  # context too
    ],
)
def test_a_state_of_another_layout_or_damaged_is_ignored(state: tuple[object, ...]) -> None:
    notes = [record("a", "Kiln", "fires at cone six")]
    mirror = NoteMirror(DIM)
    mirror.replace(notes, vectors(1), lexical_state=state)
    assert ids(mirror.lexical("kiln cone", SearchFilters(), 5)) == ["a"]


def _cli(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VAULTMEM_EMBEDDER": "fake"}
    return subprocess.run(
        [VAULTMEM, "--vault", str(vault), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def test_postings_saved_by_one_command_do_not_hide_a_hand_edit_made_before_the_next(vault: Path) -> None:
    """Through the CLI: a search leaves its postings for the next start; a person then rewrites the
    note by hand; the next search finds the new words and not the old ones."""
    added = _cli(vault, "append", "--kind", "reference", "--json", "The kiln fires at cone six.")
    assert added.returncode == 0, added.stderr
    note = json.loads(added.stdout)
    (path,) = vault.rglob(f"{note['slug']}.md")

    def found(query: str) -> list[str]:
        done = _cli(vault, "search", "--json", query)
        assert done.returncode == 0, done.stderr
        return [h["id"] for h in json.loads(done.stdout)["results"]]

    assert found("kiln cone") == [note["id"]]
    assert (vault / ".vaultmem" / "index" / lexical.STATE_FILE).is_file()
    path.write_text(
        path.read_text(encoding="utf-8").replace("The kiln fires", "The furnace glows"), encoding="utf-8"
    )
    assert found("kiln") == []
    assert found("furnace glows") == [note["id"]]


def test_many_notes_tied_at_the_cut_give_exactly_n_hits_in_id_order() -> None:
    mirror = mirror_of([record(f"n{i:03d}", "same", "identical words") for i in range(300)])
    found = mirror.lexical("identical", SearchFilters(), 10)
    assert len(found) == 10 and len({s for _, s in found}) == 1
    assert ids(found) == sorted(ids(found)) == ids(mirror.lexical("identical", SearchFilters(), 10))
    few = mirror_of([record(f"m{i}", "same", "identical words") for i in (5, 3, 9, 1, 7, 2)])
    assert ids(few.lexical("identical", SearchFilters(), 3)) == ["m1", "m2", "m3"]  # ties by id


# -- the context field: a short note's session predecessor -----------------------------------------

ASKED = "do you still run marathons with the club"
ANSWER = "yes every sunday morning"


def _said(n: int, text: str, session: str, second: int) -> NoteRecord:
    return record(f"c{n}", f"Turn {n}", text)._replace(
        session=session, created=f"2026-12-01T10:00:{second:02d}+00:00", project="talk"
    )


def _talk() -> list[NoteRecord]:
    return [
        _said(1, ASKED, "s1", 0),
        _said(2, "the printer toner invoice was paid", "s2", 5),  # another writer, between the two
        _said(3, ANSWER, "s1", 10),
    ]


def _bm25(index: object, query: str) -> list[str]:
    from vaultmem.index.note_index import NoteIndex

    assert isinstance(index, NoteIndex)
    return [h.record.id for h in index.search_bm25(query, k=10).hits]


def test_a_short_note_is_found_by_the_words_of_the_note_its_session_wrote_before_it(tmp_path: Path) -> None:
    """ "Yes, every Sunday morning" answers "do you still run marathons": a search for marathons
    finds the answer too (below the question, whose own words they are), never from another
    writer's note written in between; the context follows an edit and a removal of the question."""
    from test_index_store import CountingEmbedder

    from vaultmem.index.note_index import NoteIndex

    index = NoteIndex(tmp_path / "state", CountingEmbedder())
    index.upsert(_talk())
    index.wait_for_writes()
    assert _bm25(index, "marathons club") == ["c1", "c3"]
    assert _bm25(index, "printer toner") == ["c2"]  # not the answer's context: another session
    assert _bm25(index, "sunday") == ["c3"]
    index.upsert([_said(1, "do you still swim in the lake", "s1", 0)])
    index.wait_for_writes()
    assert _bm25(index, "marathons") == []
    assert _bm25(index, "lake swim") == ["c1", "c3"]
    index.delete_ids(["c1"])
    index.wait_for_writes()
    assert _bm25(index, "lake swim") == []
    index.close()


def test_the_context_field_is_saved_and_adopted_and_analysed_again_when_the_predecessor_changed(
    tmp_path: Path,
) -> None:
    """A reopened index scores as the one that closed (its postings adopted, contexts included),
    and a predecessor changed while nothing ran gives its follower a new context."""
    from test_index_store import CountingEmbedder

    from vaultmem.index.note_index import NoteIndex

    index = NoteIndex(tmp_path / "state", CountingEmbedder())
    index.upsert(_talk())
    index.wait_for_writes()
    before = {q: index.search_bm25(q, k=10).hits for q in ("marathons club", "sunday", "toner")}
    index.close()
    reopened = NoteIndex(tmp_path / "state", CountingEmbedder())
    for query, hits in before.items():
        again = reopened.search_bm25(query, k=10).hits
        assert [h.record.id for h in again] == [h.record.id for h in hits], query
        assert [h.score for h in again] == pytest.approx([h.score for h in hits]), query
    assert reopened.mirror.lexical_state() is None  # every slot adopted as saved
    reopened.close()

    mirror = NoteMirror(DIM)  # the question edited by hand while the index was closed
    talk = _talk()
    state = NoteMirror(DIM)
    state.replace(talk, vectors(3), contexts=[None, None, talk[0]])
    saved = state.lexical_state()
    edited = [_said(1, "do you still swim in the lake", "s1", 0), talk[1], talk[2]]
    mirror.replace(edited, vectors(3), lexical_state=saved, contexts=[None, None, edited[0]])
    assert ids(mirror.lexical("lake", SearchFilters(), 5)) == ["c1", "c3"]
    assert ids(mirror.lexical("marathons", SearchFilters(), 5)) == []


def test_the_context_field_weighs_less_than_the_notes_own_words() -> None:
    """A word in a note's context counts at ``CONTEXT_WEIGHT`` of the same word in its body."""
    asked = record("q", "Question", "which marathons")
    own = record("a", "Answer", "marathons")
    answer = record("b", "Answer", "yes")
    mirror = NoteMirror(DIM)
    mirror.put([asked, own, answer], vectors(3), contexts=[None, None, asked])
    found = dict(mirror.lexical("marathons", SearchFilters(), 5))
    assert set(found) == {"q", "a", "b"}
    assert found["b"] < found["a"]
    assert 0 < bm25.CONTEXT_WEIGHT < 1
