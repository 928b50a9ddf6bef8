"""What the ``vaultmem`` command and its servers set up in their process before any work.

- NumPy's BLAS thread pools are kept to one thread unless the person set them: a search's vector
  scan is ~1 ms of one core, and a pool of spinning threads made it 15-30x slower on a busy machine
  (docs/benchmarks.md, "BLAS threads"). Set before NumPy is first imported, which no command does
  before ``main`` runs.
- pandas is never loaded (by the program alone: a process that imports vaultmem as a library
  keeps it, its other code may need it). vaultmem does not depend on it, yet where it is installed
  (a data-science environment, this project's dev extra) pyarrow imports it when LanceDB is first
  imported, to offer conversions vaultmem never asks for: ~0.8 s of CPU in every command that
  opens the vector store. pyarrow and LanceDB treat it as optional and remember that it is
  absent, as on a machine where ``pip install vaultmem`` put none.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

__all__ = ["BLAS_THREAD_ENV", "KEPT_OUT", "keep_out_of_process", "one_blas_thread"]

BLAS_THREAD_ENV = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: Top-level packages a vaultmem program never imports, though they may be installed.
KEPT_OUT = frozenset({"pandas"})


class _KeptOut:
    """A finder, first on ``sys.meta_path``, that answers "not installed" for :data:`KEPT_OUT`."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name.partition(".")[0] in KEPT_OUT:
            raise ModuleNotFoundError(f"No module named {name!r} (vaultmem runs without it)", name=name)
        return None


def one_blas_thread() -> None:
    """NumPy's BLAS pools to one thread, unless the person set them (the module's docstring)."""
    for name in BLAS_THREAD_ENV:
        os.environ.setdefault(name, "1")


def keep_out_of_process() -> None:
    """Never import :data:`KEPT_OUT` in this process (the module's docstring); a second call
    changes nothing."""
    if not any(isinstance(finder, _KeptOut) for finder in sys.meta_path):
        sys.meta_path.insert(0, _KeptOut())
