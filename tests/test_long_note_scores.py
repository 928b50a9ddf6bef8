"""The score a long note's hit shows: the query's words must meet in the passage it matched.

`memory_search`'s score says how sure the best hit is a match (docs/tools.md, "what 0.5 means"); part
of it is the share of the query's words the hit holds. A person's journal of 20,000 words holds
nearly every word of any query, so a long note at the top made any query look answered: 1.0 for
two words written pages apart (a helper's 1.9 MB note topped most queries of its vault). The share
is now read in the passage of the note that holds the most of them (``calibration.passage_coverage``),
as in a short note.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

from vaultmem.index.calibration import lexical_coverage, passage_coverage
from vaultmem.index.chunking import WINDOW_WORDS

CLI = [sys.executable, "-m", "vaultmem.cli"]


def cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def scores(env: dict[str, str], vault: Path, query: str) -> dict[str, float]:
    out = json.loads(cli(env, "search", "--vault", str(vault), "--json", query))
    return {r["slug"]: r["score"] for r in out["results"]}


def test_a_long_notes_hit_scores_by_the_passage_it_matched_not_by_every_word_it_holds(tmp_path: Path) -> None:
    env = {**os.environ, "VAULTMEM_EMBEDDER": "fake", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    vault = tmp_path / "vault"
    cli(env, "init", str(vault))
    (vault / "memory" / "semantic" / "kettle.md").write_text(
        "# Kettle\n\nDescale the kitchen kettle with vinegar every month.\n", encoding="utf-8"
    )
    rng = random.Random(3)
    own = [
        f"{rng.choice('bcdfglmnprst')}{rng.choice('aeiou')}{rng.choice('klmnrst')}{n}" for n in range(3000)
    ]
    days = [" ".join(rng.choice(own) for _ in range(200)) for _ in range(100)]
    days[3] += " a zebra at the zoo"  # two words of the query, sixty pages apart
    days[90] += " the migration of birds"
    days[50] += " the volcano eruption last spring"  # both words of the other query, in one passage
    (vault / "Journal.md").write_text("# Journal\n\n" + "\n\n".join(days) + "\n", encoding="utf-8")
    cli(env, "reindex", "--vault", str(vault))

    scattered = scores(env, vault, "zebra migration")
    assert next(iter(scattered)) == "Journal"  # the one note holding the words
    together = scores(env, vault, "volcano eruption")
    assert together["Journal"] == 1.0, together  # the words meet in one passage: as sure as before
    # Both were 1.0, "certainly answered". With the real model the scattered query now scores
    # 0.29 (docs/benchmarks.md); the fake embedder's word buckets give its passage more.
    assert scattered["Journal"] <= 0.85, scattered
    assert scores(env, vault, "descale the kettle")["kettle"] == 1.0  # a short note is read whole, as before


def test_the_words_count_where_they_meet_within_one_window_and_the_title_counts_everywhere() -> None:
    apart = " ".join(["x"] * 500 + ["zebra"] + ["y"] * WINDOW_WORDS + ["migration"] + ["z"] * 500)
    near = " ".join(["x"] * 500 + ["zebra"] + ["y"] * (WINDOW_WORDS - 2) + ["migration"] + ["z"] * 500)
    assert lexical_coverage("zebra migration", apart) == 1.0  # the note holds both
    assert passage_coverage("zebra migration", "Journal", apart) == 9 / 14  # no passage holds both
    assert passage_coverage("zebra migration", "Journal", near) == 1.0  # one window holds both
    assert passage_coverage("zebra migration", "Zebra days", apart) == 1.0  # the title's word is everywhere
    short = "Descale the kettle with vinegar."
    assert passage_coverage("kettle vinegar", "Kettle", short) == lexical_coverage(
        "kettle vinegar", "Kettle\n" + short
    )
    assert passage_coverage("the of", "T", " ".join(["x"] * 500)) == 0.0  # no content word asked
