"""Ranking math: normalisation, fusion, context propagation and calibrated relevance."""

from __future__ import annotations

import math

import pytest

from vaultmem.index.fusion import (
    FusedScore,
    FusionConfig,
    RelevanceCalibration,
    calibrate_relevance,
    clamp01,
    fuse,
    minmax,
    propagate_context,
    rrf,
)


def test_minmax_maps_a_leg_onto_zero_to_one() -> None:
    assert minmax([("a", 10.0), ("b", 5.0), ("c", 0.0)]) == {"a": 1.0, "b": 0.5, "c": 0.0}


def test_minmax_of_one_or_equal_scores_is_one() -> None:
    assert minmax([("a", 3.0)]) == {"a": 1.0}
    assert minmax([("a", 2.0), ("b", 2.0)]) == {"a": 1.0, "b": 1.0}
    assert minmax([]) == {}


def test_fuse_weights_the_legs_and_a_missing_leg_adds_nothing() -> None:
    config = FusionConfig(bm25_weight=0.6, vector_weight=0.4)
    fused = fuse([("a", 9.0), ("b", 1.0)], [("b", 0.9), ("c", 0.1)], config)
    scores = {f.id: f.score for f in fused}
    assert scores == pytest.approx({"a": 0.6, "b": 0.4, "c": 0.0})
    assert [f.id for f in fused] == ["a", "b", "c"]
    b = next(f for f in fused if f.id == "b")
    assert (b.bm25, b.similarity) == (1.0, 0.9)


def test_fuse_breaks_ties_by_id_so_rebuilt_indexes_rank_alike() -> None:
    fused = fuse([("b", 1.0), ("a", 1.0)], [], FusionConfig())
    assert [f.id for f in fused] == ["a", "b"]


def test_fuse_places_extra_similarities_on_the_vector_scale() -> None:
    fused = fuse([], [("a", 0.8), ("b", 0.4)], FusionConfig(), extra_similarities={"c": 0.6, "d": 0.1})
    scores = {f.id: f.score for f in fused}
    assert scores["c"] == pytest.approx(0.4 * 0.5)
    assert scores["d"] == 0.0


def test_fuse_only_uses_the_pool() -> None:
    fused = fuse([("a", 3.0), ("b", 2.0), ("c", 1.0)], [], FusionConfig(pool=2))
    assert {f.id for f in fused} == {"a", "b"}


def test_context_lends_a_share_of_the_best_adjacent_score() -> None:
    fused = [
        FusedScore("q", 1.0, 1.0, None),
        FusedScore("answer", 0.3, None, 0.5),
        FusedScore("far", 0.5, 1.0, None),
    ]
    ranked = propagate_context(fused, {"answer": [(1, "q")], "q": [(1, "answer")]}, weight=0.5)
    scores = {f.id: f.score for f in ranked}
    assert scores == pytest.approx({"q": 1.15, "answer": 0.8, "far": 0.5})
    assert [f.id for f in ranked] == ["q", "answer", "far"]
    assert next(f for f in ranked if f.id == "answer").context == 1.0


def test_context_weight_zero_changes_nothing() -> None:
    fused = [FusedScore("a", 1.0, 1.0, None)]
    assert propagate_context(fused, {"a": [(1, "b")]}, weight=0.0) == fused


def test_a_neighbour_further_away_lends_less_by_the_decay_per_step() -> None:
    fused = [FusedScore("hit", 1.0, 1.0, None), FusedScore("two-away", 0.0, None, 0.1)]
    ranked = propagate_context(fused, {"two-away": [(2, "hit")]}, weight=0.5, decay=0.7)
    assert next(f for f in ranked if f.id == "two-away").score == pytest.approx(0.35)


def test_rrf_sums_weighted_reciprocal_ranks() -> None:
    fused = rrf([[("a", 0.0), ("b", 0.0)], [("b", 0.0)]], [1.0, 1.0], k=60)
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)


def test_calibration_is_linear_between_the_floors_and_clamped() -> None:
    cal = RelevanceCalibration(unrelated_floor=0.8, vector_floor=0.9)
    assert calibrate_relevance(0.80, cal) == 0.0
    assert calibrate_relevance(0.84, cal) == pytest.approx(0.4)
    assert calibrate_relevance(0.95, cal) == 1.0
    assert calibrate_relevance(0.10, cal) == 0.0


def test_calibration_refuses_inverted_floors() -> None:
    with pytest.raises(ValueError):
        calibrate_relevance(0.5, RelevanceCalibration(unrelated_floor=0.5, vector_floor=0.5))


def test_clamp01_sends_nan_to_zero() -> None:
    assert clamp01(math.nan) == 0.0
    assert clamp01(-1.0) == 0.0
    assert clamp01(2.0) == 1.0


def test_default_gate_clears_the_measured_unrelated_maximum() -> None:
    cal = RelevanceCalibration()
    assert calibrate_relevance(0.2024, cal) < cal.min_relevance
