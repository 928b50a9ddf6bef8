"""The CLI (and so the daemon it serves) keeps NumPy's BLAS pool to one thread unless the person set
it: a search's vector scan is ~1 ms of one core, and a pool of spinning threads made it 15-30x
slower on a busy machine (docs/benchmarks.md, "BLAS threads")."""

from __future__ import annotations

import os
import subprocess
import sys

CHECK = """
import os, sys
from vaultmem import cli
assert "numpy" not in sys.modules, "the CLI imported NumPy before main()"
try:
    cli.main(["--help"])
except SystemExit:
    pass
before = len(os.listdir("/proc/self/task"))
import numpy
numpy.ones((64, 64)) @ numpy.ones(64)  # the BLAS pool exists once NumPy is loaded
after = len(os.listdir("/proc/self/task"))
print(os.environ["OPENBLAS_NUM_THREADS"], os.environ["MKL_NUM_THREADS"], after - before)
"""


def run(**env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    done = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=60, env={**clean, **env}
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1].split()


def test_the_cli_starts_numpy_with_one_blas_thread() -> None:
    blas, mkl, new_threads = run()
    assert (blas, mkl) == ("1", "1")
    assert new_threads == "0"  # no pool threads beside the main one


def test_a_setting_the_person_made_is_kept() -> None:
    blas, mkl, _ = run(OPENBLAS_NUM_THREADS="2", MKL_NUM_THREADS="4")
    assert (blas, mkl) == ("2", "4")
