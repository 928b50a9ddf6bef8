"""The embedder seam: what the index asks of a model. Kept apart from the models themselves
(``embedder.py``, which imports NumPy) so that the facade can name it without loading them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["Embedder"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def model_id(self) -> str:
        """Identifies the model; a different id means stored vectors are stale."""
        ...

    @property
    def dim(self) -> int:
        """Length of every vector."""
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Return an array of shape ``(len(texts), dim)``, each row of unit length."""
        ...
