"""Long notes are split into overlapping windows for embedding (vaultmem/index/chunking.py)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from vaultmem.index.chunking import (
    WINDOW_WORDS,
    aggregate_max,
    aggregate_topk,
    chunk_texts,
    split_windows,
)


def words(n: int, start: int = 0) -> str:
    return " ".join(f"w{i}" for i in range(start, start + n))


def test_a_note_that_fits_one_window_is_one_chunk_embedded_as_today() -> None:
    chunks = chunk_texts("Title", "a short body\n", window=10, overlap=2)
    assert [c.text for c in chunks] == ["Title\na short body\n"]


def test_every_word_of_a_long_body_is_in_some_window_and_windows_overlap() -> None:
    body = words(1000)
    spans = split_windows(body, window=150, overlap=40)
    covered = set()
    for s, e in spans:
        covered.update(body[s:e].split())
        assert len(body[s:e].split()) == 150
    assert covered == set(body.split())
    for (_, e1), (s2, _) in itertools.pairwise(spans):
        assert s2 < e1  # consecutive windows share words


def test_the_last_window_ends_on_the_last_word_instead_of_a_short_tail() -> None:
    body = words(170)
    spans = split_windows(body, window=150, overlap=40)
    assert len(spans) == 2
    assert body[spans[-1][0] : spans[-1][1]].split() == body.split()[20:]


def test_each_chunk_carries_the_title_as_its_header() -> None:
    chunks = chunk_texts("Deploy runbook", words(400), window=150, overlap=40)
    assert len(chunks) > 1
    assert all(c.text.startswith("Deploy runbook\n") for c in chunks)


def test_a_fact_after_the_600th_word_lands_in_a_chunk_of_its_own_window() -> None:
    body = words(600) + " the staging database password rotates every ninety days " + words(300, 600)
    chunks = chunk_texts("Ops notes", body)
    holding = [c for c in chunks if "rotates every ninety days" in c.text]
    assert holding, "the fact must be inside one window, not cut by a boundary"
    assert all(len(c.text.split()) <= WINDOW_WORDS + 2 for c in chunks)


def test_bad_window_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        split_windows("a b c", window=5, overlap=5)


def test_aggregation_takes_the_best_chunk_or_mixes_the_best_few() -> None:
    sims = np.array([0.1, 0.7, 0.5], dtype=np.float32)
    assert aggregate_max(sims) == pytest.approx(0.7)
    assert aggregate_topk(sims, k=2, mix=0.8) == pytest.approx(0.8 * 0.7 + 0.2 * 0.6)
    assert aggregate_max(np.array([], dtype=np.float32)) == 0.0
