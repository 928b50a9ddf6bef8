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


def test_the_window_header_and_episode_settings_are_one_number_each() -> None:
    """Issue 15 phase 2: the windows of long notes, the short-note header and the coherence of an
    episode are each one module-level number, the same for every vault (no table keyed by anything)."""
    from vaultmem.index import chunking, episodes, fusion, note_vectors

    settings = {
        "WINDOW_WORDS": chunking.WINDOW_WORDS,
        "OVERLAP_WORDS": chunking.OVERLAP_WORDS,
        "SHORT_WORDS": note_vectors.SHORT_WORDS,
        "HEADER_WORDS": note_vectors.HEADER_WORDS,
        "HEADER_FLOOR": note_vectors.HEADER_FLOOR,
        "SAMPLE": episodes.SAMPLE,
        "MIN_PAIRS": episodes.MIN_PAIRS,
        "coherence_floor": fusion.FusionConfig().coherence_floor,
        "context_radius": fusion.FusionConfig().context_radius,
        "context_decay": fusion.FusionConfig().context_decay,
    }
    assert all(isinstance(v, int | float) and not isinstance(v, bool) for v in settings.values()), settings
    for module in (chunking, episodes, note_vectors):
        tables = [n for n, v in vars(module).items() if n.isupper() and isinstance(v, dict)]
        assert tables == [], f"{module.__name__} holds a table of settings: {tables}"
