"""A query typed without a name's accents finds the note written with them, and says so by its score."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FakeClock, hand_write
from mcp_harness import structured
from upkeep_wire import LocalWire, local_runtime

from vaultmem.vault.init import init_vault

PEOPLE = {
    "People/Günter Weiß.md": "# Günter Weiß\n\nWorks on the heating; call him before October.\n",
    "People/Chloé Dubois.md": "# Chloé Dubois\n\nOur architect for the kitchen remodel.\n",
    "People/Bob Chen.md": "# Bob Chen\n\nKnows the router setup.\n",
}


@pytest.mark.parametrize(
    ("query", "note"),
    [("Gunter Weiss", "Günter Weiß"), ("Weiss", "Günter Weiß"), ("Chloe", "Chloé Dubois")],
)
def test_a_name_typed_without_its_accents_finds_the_note_above_the_relevance_gate(
    tmp_path: Path, clock: FakeClock, query: str, note: str
) -> None:
    """In a person's vault `Chloe` found `Chloé Dubois` at 0.19 and `Gunter Weiss` found `Günter Weiß`
    at 0.30, under the 0.4 gate (`memory_recall` answered nothing), and `Weiss` did not find `Weiß`:
    BM25 dropped accents but kept `ß`, and the score's word coverage compared words unfolded."""
    vault = tmp_path / "notes"
    for rel, text in PEOPLE.items():
        hand_write(vault, rel, text)
    init_vault(vault)
    with local_runtime(vault, clock) as memory:
        wire = LocalWire(memory)
        best = structured(wire.call("memory_search", query=query, limit=3))["results"][0]
        assert (best["slug"], best["score"] >= 0.4) == (note, True), best
        found = wire.ok("memory_recall", action="search", query=query, fields=["title"])["items"]
        assert [item["thought"]["title"] for item in found][:1] == [note]
