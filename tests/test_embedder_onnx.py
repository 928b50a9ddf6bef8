"""The real packaged MiniLM model (marked ``model``: loads onnxruntime)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vaultmem.index.embedder import EmbedderUnavailable, OnnxEmbedder

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    return OnnxEmbedder(threads=1)


def test_vectors_are_384_wide_and_normalised(embedder: OnnxEmbedder) -> None:
    vectors = embedder.embed(["hello world", "a much longer sentence about the weather in spring", ""])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_a_paraphrase_is_closer_than_an_unrelated_sentence(embedder: OnnxEmbedder) -> None:
    a, para, other = embedder.embed(
        ["A man is eating food.", "Someone is having a meal.", "The stock market fell sharply today."]
    )
    assert a @ para > a @ other + 0.3


def test_batching_and_length_sorting_do_not_change_vectors(embedder: OnnxEmbedder) -> None:
    texts = ["short", "a somewhat longer text to embed here", "mid length text"]
    together = embedder.embed(texts)
    alone = np.stack([embedder.embed([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-4)


def test_model_id_names_the_model_file(embedder: OnnxEmbedder) -> None:
    assert (
        embedder.model_id.startswith("all-MiniLM-L6-v2-int8@") and len(embedder.model_id.split("@")[1]) == 12
    )


def test_a_model_dir_without_files_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match=r"model\.onnx"):
        OnnxEmbedder(tmp_path)
