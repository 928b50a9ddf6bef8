"""The fake embedder used by fast tests."""

from __future__ import annotations

import numpy as np

from vaultmem.index.embedder import Embedder, FakeEmbedder


def test_fake_is_deterministic_normalised_and_an_embedder() -> None:
    fake = FakeEmbedder(dim=64)
    assert isinstance(fake, Embedder)
    a = fake.embed(["The cat sat", ""])
    assert a.shape == (2, 64) and a.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(a, fake.embed(["The cat sat", ""]))


def test_fake_scores_shared_words_higher() -> None:
    v = FakeEmbedder().embed(["red apple pie", "apple pie recipe", "diesel engine repair"])
    assert v[0] @ v[1] > v[0] @ v[2]
