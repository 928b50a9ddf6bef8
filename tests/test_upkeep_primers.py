"""memory_primers and memory_guide through MCP.

Each test is a sentence of ../shared/seeds/000_30b85c2247cb72d3.txt, sections memory_primers and Wire
envelope (memory_guide is the one raw-text tool).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FakeClock, commit_count
from upkeep_wire import LocalWire, local_runtime

from vaultmem.memory import Memory


@pytest.fixture
def runtime(vault: Path, clock: FakeClock) -> Iterator[Memory]:
    with local_runtime(vault, clock, primer_threshold=2) as rt:
        yield rt


@pytest.fixture
def wire(runtime: Memory) -> LocalWire:
    return LocalWire(runtime)


def recall_times(wire: LocalWire, thought_id: str, times: int) -> None:
    for _ in range(times):
        wire.recall(action="get", thought_id=thought_id)


def test_a_thought_recalled_threshold_times_is_promoted(wire: LocalWire) -> None:
    """list: "A primer is a pointer to a thought that was promoted after repeated recalls"; the
    threshold is in config (primer_threshold)."""
    tid = wire.create("the deploy runbook lives in ops/")
    wire.recall(action="get", thought_id=tid)
    assert wire.ok("memory_primers", action="list")["items"] == []
    wire.recall(action="search", query="deploy runbook")
    items = wire.ok("memory_primers", action="list")["items"]
    assert len(items) == 1 and items[0]["thought_id"] == tid and items[0]["hit_count"] == 2
    assert set(items[0]) == {"id", "thought_id", "hit_count", "promoted_at", "created_at"}


def test_list_is_most_hit_first(wire: LocalWire) -> None:
    """list: "Lists the primers, most-hit first"."""
    a, b = wire.create("first thought"), wire.create("second thought")
    recall_times(wire, a, 2)
    recall_times(wire, b, 5)
    listed = wire.ok("memory_primers", action="list")
    assert [p["thought_id"] for p in listed["items"]] == [b, a]
    assert [p["hit_count"] for p in listed["items"]] == [5, 2]
    assert listed["meta"]["counts"]["total"] == 2


def test_primers_are_derived_state_and_the_thought_is_never_written(wire: LocalWire, vault: Path) -> None:
    """Invariant 1: hit counters are derived, ephemeral state in the state directory; recalls write
    nothing to the vault."""
    tid = wire.create("a recalled thought")
    path = vault / wire.recall(action="get", thought_id=tid, compact=False)["item"]["path"]
    before, commits = path.read_bytes(), commit_count(vault)
    recall_times(wire, tid, 4)
    assert path.read_bytes() == before and commit_count(vault) == commits
    assert (vault / ".vaultmem" / "primers.json").is_file()


def test_delete_previews_then_removes_only_the_primer(wire: LocalWire, vault: Path) -> None:
    """delete: "Removes one primer from the always-at-hand set. The thought itself is not deleted";
    preview item carries status: preview, primer_id, primer, consequence, preview_token and
    instruction; meta.preview mirrors the token; execute answers status: deleted."""
    tid = wire.create("a primer's thought")
    recall_times(wire, tid, 2)
    primer = wire.ok("memory_primers", action="list")["items"][0]
    path = vault / wire.recall(action="get", thought_id=tid, compact=False)["item"]["path"]
    before, commits = path.read_bytes(), commit_count(vault)
    preview = wire.ok("memory_primers", action="delete", primer_id=primer["id"])
    item = preview["item"]
    assert (
        item["status"] == "preview"
        and item["primer_id"] == primer["id"]
        and item["primer"]["thought_id"] == tid
    )
    assert item["consequence"] and item["instruction"]
    assert preview["meta"]["preview"] == {"token": item["preview_token"], "destructive": True}
    done = wire.ok(
        "memory_primers",
        action="delete",
        primer_id=primer["id"],
        confirm=True,
        preview_token=item["preview_token"],
    )
    assert done["item"] == {"status": "deleted", "primer_id": primer["id"]} and "preview" not in done["meta"]
    assert wire.ok("memory_primers", action="list")["items"] == []
    assert path.read_bytes() == before and commit_count(vault) == commits
    assert wire.recall(action="get", thought_id=tid)["item"]["status"] == "active"


def test_delete_is_idempotent(wire: LocalWire) -> None:
    """delete: "Deletion is idempotent: a missing primer is reported as not_found, not an error"; "A
    missing primer in preview returns item: { status: not_found, primer_id } with no meta.preview"."""
    missing = "01a172b4-d486-700c-a16e-5ae3d2d77a90"
    preview = wire.ok("memory_primers", action="delete", primer_id=missing)
    assert (
        preview["item"] == {"status": "not_found", "primer_id": missing} and "preview" not in preview["meta"]
    )
    executed = wire.ok("memory_primers", action="delete", primer_id=missing, confirm=True)
    assert executed["item"] == {"status": "not_found", "primer_id": missing}


def test_delete_needs_the_preview_token(wire: LocalWire) -> None:
    tid = wire.create("guarded")
    recall_times(wire, tid, 2)
    primer_id = wire.ok("memory_primers", action="list")["items"][0]["id"]
    message, error = wire.error("memory_primers", action="delete", primer_id=primer_id, confirm=True)
    assert error is not None and error["statusCode"] == 400 and "preview_token" in message


def test_promoted_thoughts_feed_the_architecture_decisions_slot(wire: LocalWire) -> None:
    """slots: "architecture_decisions from primers (most-hit first)"."""
    tid = wire.create("Every write is one git commit")
    recall_times(wire, tid, 2)
    rows = {s["name"]: s for s in wire.ok("memory_status", action="slots")["items"]}
    assert "Every write is one git commit" in rows["architecture_decisions"]["content"]


def test_the_guide_is_raw_text_pointing_to_the_reference(wire: LocalWire) -> None:
    """Wire envelope: "memory_guide is the one raw-text tool: it keeps the human-readable payload in
    content[].text verbatim and reports structuredContent.result = { text }"; it points to the full
    reference (docs/tools.md)."""
    text, result = wire.text("memory_guide")
    assert result == {"text": text} and not text.startswith("{")
    assert "docs/tools.md" in text
    for tool in [
        "memory_recall", "memory_store", "memory_supersede", "memory_manage", "memory_reflect",
        "memory_status", "memory_primers",
    ]:  # fmt: skip
        assert tool in text
