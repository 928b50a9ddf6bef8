"""The ranking code knows no benchmark: no dataset names, no per-dataset parameters (issue 15)."""

from __future__ import annotations

import re
from pathlib import Path

import vaultmem

PACKAGE = Path(vaultmem.__file__).resolve().parent
#: The benchmarks' datasets and the shapes of their ids and fields.
DATASET_MARKERS = re.compile(r"locomo|scifact|beir|longmemeval|conv-\d|dia_id|\bqrels\b", re.IGNORECASE)


def test_no_module_of_the_package_names_a_benchmark_dataset() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{n}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if DATASET_MARKERS.search(line)
    ]
    assert not found, "ranking must not depend on which benchmark runs:\n" + "\n".join(found)


def test_the_fusion_settings_are_one_set_for_every_vault() -> None:
    """One FusionConfig default, no table of configurations keyed by anything."""
    from vaultmem.index import fusion

    configs = [name for name, value in vars(fusion).items() if isinstance(value, fusion.FusionConfig)]
    assert configs == []  # no module-level presets: the dataclass defaults are the configuration
    source = Path(fusion.__file__).read_text(encoding="utf-8")
    assert "dict[str, FusionConfig]" not in source
