"""Long notes and the cross-query score, through a real daemon, MCP and the real model (issue 15,
Deliver 3 and 4)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp_harness import mcp_client, running_daemon, structured
from tokenizers import Tokenizer

from vaultmem.index.calibration import content_terms
from vaultmem.index.embedder import OnnxEmbedder, default_model_dir
from vaultmem.server.daemon import Daemon
from vaultmem.vault.init import init_vault

pytestmark = pytest.mark.model

#: A design record whose last section, past its 600th word piece, holds one fact.
API_RECORD = " ".join(
    [
        "Decision record: versioning the public API.",
        *(
            f"Section {n}. Every endpoint carries its major version in the path, and a client that "
            "sends no version header is served the oldest supported contract. Deprecations are "
            "announced in the changelog two releases ahead, and each removal ships behind a flag "
            "that operators can turn back on for one more cycle while integrators migrate their "
            "request builders, pagination cursors and webhook signatures to the newer schema."
            for n in range(1, 10)
        ),
        "Facilities appendix. The standby diesel generator in the basement is run under load on "
        "the first Monday of each month for thirty minutes; the facilities crew logs fuel level, "
        "battery charge and transfer-switch timing in the plant binder, and a failed start is "
        "escalated to the landlord the same day.",
    ]
)
FACT_WORDS = "standby diesel generator"
PARAPHRASE = "How often is the emergency power unit exercised?"

OTHER_NOTES = [
    ("Pizza dough", "Pizza dough: 500 g flour, 325 ml water, 10 g salt, 3 g dry yeast; rest it overnight."),
    ("Tomatoes", "Our tomato plants need watering every morning in July."),
    ("Grinder", "The espresso grinder is set to 12 for the new beans."),
    ("Tickets", "Train tickets to Lyon are booked for the 14th, seats 41 and 42."),
    ("Bicycle", "Bicycle chain: clean and oil it every 300 km."),
    (
        "Onboarding",
        " ".join(
            "New engineers pair with a mentor for their first fortnight, read the architecture "
            "notes, and ship a small change to production by the end of week one."
            for _ in range(12)
        ),
    ),
]
UNRELATED = [
    "How do I rotate the TLS certificate on a Kubernetes ingress controller?",
    "PostgreSQL vacuum freeze wraparound warning",
    "quarterly VAT return deadline for small businesses",
    "how many calories are in an avocado",
    "configure BGP route reflectors in a data centre fabric",
    "which antibiotic treats a urinary tract infection",
    "what is the airspeed velocity of an unladen swallow",
    "merge sort versus quicksort worst case",
]
PARAPHRASES = [
    ("how much salt goes into the pizza base", "Pizza dough"),
    ("when should I lubricate my bike's drivetrain", "Bicycle"),
]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, dict[str, str]]]:
    root = tmp_path_factory.mktemp("long")
    vault, _ = init_vault(root / "vault")
    with running_daemon(vault, root / "token", embedder=OnnxEmbedder()) as running:

        async def load() -> dict[str, str]:
            ids = {}
            async with mcp_client(running.url, running.token()) as client:
                for title, content in [("API versioning", API_RECORD), *OTHER_NOTES]:
                    args = {"content": content, "kind": "reference", "title": title}
                    ids[title] = structured(await client.call_tool("memory_append", args))["id"]
            return ids

        yield running, anyio.run(load)


def _search(daemon: Daemon, query: str) -> list[dict[str, Any]]:
    async def ask() -> list[dict[str, Any]]:
        async with mcp_client(daemon.url, daemon.token()) as client:
            found = structured(await client.call_tool("memory_search", {"query": query, "limit": 5}))
            return list(found["results"])

    return anyio.run(ask)


def test_a_fact_stated_only_after_the_600th_token_of_a_long_note_is_found_by_a_paraphrase(
    daemon: tuple[Daemon, dict[str, str]],
) -> None:
    running, ids = daemon
    tokenizer = Tokenizer.from_file(str(default_model_dir()[1]))
    tokenizer.no_truncation()
    before_fact = API_RECORD[: API_RECORD.index(FACT_WORDS)]
    assert len(tokenizer.encode(before_fact).ids) > 600
    assert not content_terms(PARAPHRASE) & content_terms(API_RECORD)  # no keyword to find it by
    results = _search(running, PARAPHRASE)
    assert results and results[0]["id"] == ids["API versioning"], results
    # The snippet comes from the window that matched, not from the top of the record.
    assert not results[0]["snippet"].startswith("Decision record")
    assert "Facilities appendix" in API_RECORD[API_RECORD.index(results[0]["snippet"][:40]) :]


def test_an_unrelated_querys_best_hit_scores_below_the_gate_and_a_paraphrase_above(
    daemon: tuple[Daemon, dict[str, str]],
) -> None:
    """Issue 15 Deliver 4, on a fixed set of unrelated query/note pairs: memory_search's score is
    comparable across queries (the default gate is 0.4 on the calibrated scale). ("when do deploys
    happen" is not in the set: against the API record's release cycles it is a topical match,
    0.41, which docs/benchmarks.md discusses.)"""
    running, ids = daemon
    best = {q: _search(running, q) for q in UNRELATED}
    assert all(not r or r[0]["score"] < 0.4 for r in best.values()), {
        q: r[0]["score"] for q, r in best.items() if r
    }
    for query, title in PARAPHRASES:
        results = _search(running, query)
        assert results[0]["id"] == ids[title] and results[0]["score"] >= 0.4, (query, results[:1])


def test_a_restarted_daemon_reads_the_long_notes_windows_back_and_still_finds_the_late_fact(
    tmp_path: Any,
) -> None:
    """The windows beyond a note's first are stored in the notes table and read back, batch by
    batch, when the index opens: a new daemon on the same vault answers the paraphrase from them
    without embedding the note again."""
    vault, _ = init_vault(tmp_path / "vault")
    with running_daemon(vault, tmp_path / "token", embedder=OnnxEmbedder()) as first:

        async def write() -> str:
            async with mcp_client(first.url, first.token()) as client:
                args = {"content": API_RECORD, "kind": "reference", "title": "API versioning"}
                return str(structured(await client.call_tool("memory_append", args))["id"])

        note_id = anyio.run(write)
    with running_daemon(vault, tmp_path / "token", embedder=OnnxEmbedder()) as second:
        assert second.memory is not None
        results = _search(second, PARAPHRASE)
    assert results and results[0]["id"] == note_id, results
    assert not results[0]["snippet"].startswith("Decision record")  # from the window that matched
