"""An empty note is never a search hit (through a real daemon, MCP and the real model).

Obsidian makes ``Untitled.md`` with nothing in it; a person leaves one with frontmatter alone or a
few blank lines. Their vectors were the title's (or the empty text's), near every short query: an
empty ``Inbox/Untitled.md`` ranked 2nd-3rd (0.42-0.67) for unrelated one-word queries.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from graph_wire import Wire
from mcp_harness import running_daemon, structured

from vaultmem.index.embedder import OnnxEmbedder
from vaultmem.server.daemon import Daemon
from vaultmem.vault.init import init_vault

pytestmark = pytest.mark.model

NOTES = {
    "Garden/Tomatoes.md": "Our tomato plants need watering every morning in July.\n",
    "Bike/Bicycle.md": "Bicycle chain: clean and oil it every 300 km.\n",
    "Travel/Tickets.md": "Train tickets to Lyon are booked for the 14th, seats 41 and 42.\n",
    "Kitchen/Grinder.md": "The espresso grinder is set to 12 for the new beans.\n",
}
BLANK = {
    "Inbox/Untitled.md": "",
    "Inbox/Untitled 1.md": "---\ntags: [inbox]\n---\n",
    "Inbox/Untitled 2.md": "  \n\n\t\n",
    "Inbox/Kubernetes.md": "---\ntitle: Kubernetes\n---\n\n- [ ] \n#\n",
}
QUERIES = ["banana", "kubernetes", "weather", "tax", "untitled", "inbox", "dentist"]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    root = tmp_path_factory.mktemp("blank")
    vault, _ = init_vault(root / "vault")
    for rel, text in {**NOTES, **BLANK}.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text, encoding="utf-8")
    with running_daemon(vault, root / "token", embedder=OnnxEmbedder()) as running:
        yield running


def _search(daemon: Daemon, query: str, **more: Any) -> list[dict[str, Any]]:
    return list(structured(Wire(daemon).call("memory_search", query=query, limit=10, **more))["results"])


def test_an_empty_note_is_no_hit_for_any_query(daemon: Daemon) -> None:
    blank = {Path(rel).stem for rel in BLANK}
    for query in QUERIES:
        found = {r["slug"] for r in _search(daemon, query)}
        assert not found & blank, (query, found)


def test_nor_with_the_noise_gate_off_nor_in_the_past(daemon: Daemon) -> None:
    """recall's search with ``min_relevance`` 0 returns every cosine-ranked candidate, and
    ``as_of`` searches the committed versions (the start committed the person's files)."""
    blank = {Path(rel).stem for rel in BLANK}
    wire = Wire(daemon)
    for query in QUERIES:
        found = wire.recall(action="search", query=query, limit=10, min_relevance=0, compact=False)["items"]
        assert found, query  # the gate is off: the real notes are candidates
        assert not {r["thought"]["path"] for r in found} & set(BLANK), (query, found)
        past = {r["slug"] for r in _search(daemon, query, as_of="2999-01-01T00:00:00Z")}
        assert not past & blank, (query, past)


def test_the_real_notes_beside_them_are_still_found(daemon: Daemon) -> None:
    results = _search(daemon, "tomato")
    assert results and results[0]["slug"] == "Tomatoes", results
    assert results[0]["score"] >= 0.4
