"""The cross-query score prototype (vaultmem/index/calibration.py, issue 15)."""

from __future__ import annotations

import pytest

from vaultmem.index.calibration import (
    ScoreCalibration,
    confidence,
    content_terms,
    lexical_coverage,
    scaled_scores,
)
from vaultmem.index.embedder import OnnxEmbedder
from vaultmem.index.fusion import RelevanceCalibration


def test_stop_words_and_plural_endings_do_not_count_as_content() -> None:
    assert content_terms("When do the deploys happen?") == {"deploy", "happen"}


def test_coverage_is_the_length_weighted_share_of_query_terms_found() -> None:
    assert lexical_coverage("rotate certificates", "How we rotate the TLS certificate") == 1.0
    assert lexical_coverage("rotate certificates", "nothing in common") == 0.0
    assert lexical_coverage("kettle certificates", "a certificate") == pytest.approx(10 / 15)
    assert lexical_coverage("the of and", "anything") == 0.0


def test_confidence_is_the_stronger_kind_of_evidence_on_its_calibrated_scale() -> None:
    cal = ScoreCalibration(RelevanceCalibration(unrelated_floor=0.1, vector_floor=0.4), lexical_floor=0.5)
    assert confidence(0.4, 1.0, cal) == 1.0  # a strong cosine with every query word present
    assert confidence(0.4, 0.0, cal) == 0.5  # the same cosine sharing no word counts half
    assert confidence(0.1, 0.0, cal) == 0.0
    assert confidence(0.1, 0.75, cal) == pytest.approx(0.5)  # lexical evidence alone
    assert confidence(None, 1.0, cal) == 1.0


def test_scaled_scores_keep_the_ranking_and_give_the_best_hit_its_confidence() -> None:
    scores = scaled_scores([1.4, 0.7, 0.35], 0.5)
    assert scores == [0.5, 0.25, 0.125]
    assert scaled_scores([], 0.9) == []


NOTES = [
    "Pizza dough: 500 g flour, 325 ml water, 10 g salt, 3 g dry yeast; rest it overnight.",
    "Our tomato plants need watering every morning in July.",
    "The espresso grinder is set to 12 for the new beans.",
    "Train tickets to Lyon are booked for the 14th, seats 41 and 42.",
    "Bicycle chain: clean and oil it every 300 km.",
]
UNRELATED = [
    "How do I rotate the TLS certificate on a Kubernetes ingress controller?",
    "PostgreSQL vacuum freeze wraparound warning",
    "quarterly VAT return deadline for small businesses",
    "when do deploys happen",
    "configure BGP route reflectors in a data centre fabric",
]


@pytest.mark.model
def test_an_unrelated_querys_best_hit_scores_below_the_gate_and_a_paraphrase_above() -> None:
    """Issue 15: the score must tell "found it" from "nothing relevant" across queries."""
    embedder = OnnxEmbedder(threads=1)
    cal = ScoreCalibration()
    gate = cal.semantic.min_relevance
    note_vecs = embedder.embed(NOTES)

    def best(query: str) -> float:
        sims = note_vecs @ embedder.embed([query])[0]
        top = int(sims.argmax())
        return confidence(float(sims[top]), lexical_coverage(query, NOTES[top]), cal)

    assert all(best(q) < gate for q in UNRELATED), [round(best(q), 3) for q in UNRELATED]
    assert best("how much salt goes into the pizza base") >= gate
    assert best("when should I lubricate my bike's drivetrain") >= gate
