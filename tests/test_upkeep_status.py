"""memory_status through MCP: slots, frontier, config and health (incl. contradiction_in_cluster).

Each test is a sentence of ../shared/seeds/000_30b85c2247cb72d3.txt, sections memory_status, Wire
envelope (the raw-text config) and Health-check remediation.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import upkeep_wire
from conftest import FakeClock, commit_count, hand_write
from upkeep_wire import LocalWire

#: The shared fixtures: a registered project ("Doc Probe"), a runtime on the vault, a wire to it.
probe, runtime, wire = upkeep_wire.probe, upkeep_wire.runtime, upkeep_wire.wire

NO_CWD = "no cwd — the answer spans every project"
SLOTS_WARNING = (
    "no project scope — the project-scoped slot overrides were not applied (pass cwd to read them)"
)


def slots(wire: LocalWire, **arguments: object) -> tuple[dict[str, dict[str, object]], dict[str, object]]:
    answer = wire.ok("memory_status", action="slots", **arguments)
    return {s["name"]: s for s in answer["items"]}, answer["meta"]


# -- slots ---------------------------------------------------------------------------------------------


def test_slots_lists_stored_and_virtual_slots_with_their_shape(wire: LocalWire, probe: str) -> None:
    """slots: "Answers { items, meta } with one item per slot ({ name, scope, virtual, content, truncated,
    max_chars, updated_at })"; project_context and active_goals stored, pending_items and
    architecture_decisions virtual."""
    wire.ok("memory_reflect", action="reflect", summary="context text", goals_add=["a goal"], cwd=probe)
    rows, meta = slots(wire, cwd=probe)
    assert list(rows) == ["project_context", "active_goals", "pending_items", "architecture_decisions"]
    for row in rows.values():
        assert {"name", "scope", "virtual", "content", "truncated", "max_chars", "updated_at"} <= set(row)
    assert [rows[n]["virtual"] for n in rows] == [False, False, True, True]
    assert rows["project_context"]["scope"] == "project" and "context text" in str(
        rows["project_context"]["content"]
    )
    assert rows["active_goals"]["path"] == "desk/projects/doc-probe/active_goals.md"
    assert meta["warnings"] == [] and meta["scope"]["project_name"] == "Doc Probe"


def test_without_cwd_only_global_rows_are_read_and_both_warnings_say_so(wire: LocalWire, probe: str) -> None:
    """slots: "Without it only the global rows are read, and meta.warnings adds a second note"; with cwd
    "the project-scoped slot row wins over the global fallback"."""
    wire.ok("memory_reflect", action="reflect", goals_add=["global goal"])
    wire.ok("memory_reflect", action="reflect", goals_add=["project goal"], cwd=probe)
    rows, meta = slots(wire)
    assert meta["scope"] is None and meta["warnings"] == [NO_CWD, SLOTS_WARNING]
    assert rows["active_goals"]["scope"] == "global" and "global goal" in str(rows["active_goals"]["content"])
    rows, meta = slots(wire, cwd=probe)
    assert rows["active_goals"]["scope"] == "project" and "project goal" in str(
        rows["active_goals"]["content"]
    )
    assert "global goal" not in str(rows["active_goals"]["content"])


def test_a_project_without_its_own_slot_falls_back_to_the_global_one(wire: LocalWire, probe: str) -> None:
    wire.ok("memory_reflect", action="reflect", summary="global context")
    rows, _ = slots(wire, cwd=probe)
    assert rows["project_context"]["scope"] == "global" and "global context" in str(
        rows["project_context"]["content"]
    )


def test_a_present_but_unknown_cwd_gets_no_slots_warning(wire: LocalWire, tmp_path: Path) -> None:
    """ "That warning is cwd-less only — a present path, registered or not, keeps the pre-existing answer"."""
    _, meta = slots(wire, cwd=str(tmp_path / "nowhere"))
    assert SLOTS_WARNING not in meta["warnings"] and meta["scope"]["global"] is True


def test_pending_items_page_with_slots_limit_and_offset(
    wire: LocalWire, probe: str, clock: FakeClock
) -> None:
    """slots: "Paging applies to pending_items via slots_limit/offset"."""
    pending = [f"follow-up number {i}" for i in range(5)]
    wire.ok("memory_reflect", action="reflect", pending=pending, cwd=probe, wake_days=1)
    clock.advance(days=1)
    rows, meta = slots(wire, cwd=probe, slots_limit=2, offset=1)
    lines = str(rows["pending_items"]["content"]).splitlines()
    assert [line.split(" (id")[0] for line in lines] == ["- follow-up number 1", "- follow-up number 2"]
    assert meta["counts"]["pending_items"] == 5


def test_a_long_slot_is_truncated_at_max_chars(wire: LocalWire, vault: Path) -> None:
    hand_write(vault, "desk/project_context.md", "# Project context\n\n" + "x" * 5000 + "\n")
    rows, _ = slots(wire)
    row = rows["project_context"]
    assert row["truncated"] is True and len(str(row["content"])) == row["max_chars"] == 4000


def test_slots_never_write(wire: LocalWire, vault: Path) -> None:
    """ "Slots are read-only through this tool: it never writes"."""
    before = commit_count(vault)
    slots(wire)
    assert commit_count(vault) == before and not (vault / "desk/project_context.md").exists()


# -- frontier ------------------------------------------------------------------------------------------


def test_frontier_orders_pending_contradictions_unfiled_and_stale(
    wire: LocalWire, probe: str, clock: FakeClock
) -> None:
    """frontier: what needs attention (due pending items, contradictions, unfiled captures, stale
    thoughts); "with it the answer is the frontier of one project"."""
    old = wire.create("an old active thought", cwd=probe)
    clock.advance(days=100)
    a, b = wire.create("the cache is fast", cwd=probe), wire.create("the cache is slow", cwd=probe)
    wire.store(action="link", source_id=a, target_id=b, edge_type="contradicts")
    wire.create("a draft awaiting review", status="draft", cwd=probe)
    wire.ok("memory_reflect", action="reflect", pending=["look again"], wake_days=1, cwd=probe)
    clock.advance(days=2)
    wire.create("in another project")  # no project: outside the scope
    answer = wire.ok("memory_status", action="frontier", cwd=probe)
    got = [(i["reason"], i["thought"]["id"] if i["reason"] != "pending" else i["thought"]["content"])
           for i in answer["items"]]  # fmt: skip
    assert got == [("pending", "look again"), ("contradiction", a), ("unfiled", got[2][1]), ("stale", old)]
    assert answer["items"][1]["contradicted_by"] == [b] and answer["items"][1]["edge_id"]
    counts = answer["meta"]["counts"]
    assert (counts["pending"], counts["contradiction"], counts["unfiled"], counts["stale"]) == (1, 1, 1, 1)
    assert counts["total"] == 4 and counts["limit"] == 10 and answer["meta"]["warnings"] == []


def test_frontier_without_cwd_spans_every_project_and_limit_bounds_it(wire: LocalWire, probe: str) -> None:
    """frontier: "omitted, it spans every project with meta.scope: null and the no cwd warning";
    "limit (1-50) bounding the page"."""
    for i in range(3):
        wire.create(f"draft {i}", status="draft", cwd=probe if i else None)
    answer = wire.ok("memory_status", action="frontier", limit=2)
    assert answer["meta"]["scope"] is None and answer["meta"]["warnings"] == [NO_CWD]
    assert answer["meta"]["counts"]["total"] == 3 and answer["meta"]["counts"]["returned"] == 2
    assert answer["meta"]["counts"]["filtered_out"] == 1
    for bad in (0, 51):
        message, error = wire.error("memory_status", action="frontier", limit=bad)
        assert error is not None and error["statusCode"] == 400 and "limit" in message


def test_k_is_retired(wire: LocalWire) -> None:
    """memory_status: "retired k is replaced by limit"."""
    message, _ = wire.error("memory_status", action="frontier", k=5)
    assert "use limit" in message


# -- config --------------------------------------------------------------------------------------------


def test_config_is_raw_text_in_content_and_in_item_text(wire: LocalWire, vault: Path) -> None:
    """Wire envelope: "memory_status action=config carries the configuration display as raw text in
    content[].text and the same string as structuredContent.result.item.text, with the standard envelope
    meta beside it"."""
    text, result = wire.text("memory_status", action="config")
    assert result["item"] == {"text": text}
    assert result["meta"] == {
        "action": "config", "scope": None, "counts": {"total": 1, "returned": 1, "filtered_out": 0},
        "degraded": False, "warnings": [],
    }  # fmt: skip
    assert not text.startswith("{") and f"vault: {vault}" in text and "primer_threshold: 3" in text
    assert "Doc Probe" in text


# -- health --------------------------------------------------------------------------------------------


def _cluster_with_contradiction(wire: LocalWire) -> dict[str, str]:
    ids = {n: wire.create(f"member {n}") for n in ("a", "b", "c")}
    ids["cluster"] = wire.create("the consolidated claim", is_cluster=True)
    for m in ("a", "b", "c"):
        wire.store(action="link", source_id=ids["cluster"], target_id=ids[m], edge_type="cluster")
    ids["edge"] = wire.store(action="link", source_id=ids["a"], target_id=ids["b"], edge_type="contradicts")[
        "item"
    ]["id"]
    return ids


def test_health_reports_contradiction_in_cluster_with_its_details(wire: LocalWire) -> None:
    """Health-check remediation: "reports contradiction_in_cluster (semantic consistency, warning) when two
    non-archived members of the same cluster are joined by a contradicts edge"; "Each finding's details
    carries cluster_id, member_a, member_b and contradicts_edge_id"."""
    ids = _cluster_with_contradiction(wire)
    report = wire.ok("memory_status", action="health", include_details=True)["item"]
    check = next(c for c in report["checks"] if c["name"] == "contradiction_in_cluster")
    assert (
        check["category"] == "semantic consistency"
        and check["severity"] == "warning"
        and check["ok"] is False
    )
    assert check["details"] == [
        {
            "cluster_id": ids["cluster"],
            "member_a": ids["a"],
            "member_b": ids["b"],
            "contradicts_edge_id": ids["edge"],
        }
    ]
    assert "memory_store" in check["remediation"] and report["status"] == "warning"


@pytest.mark.parametrize("fix", ["unlink", "retype", "archive_cluster"])
def test_each_documented_remediation_clears_the_finding(wire: LocalWire, fix: str) -> None:
    """Remediation: 1. unlink contradicts_edge_id, 2. retype it to supports, 3. archive the cluster
    thought (member thoughts untouched); then re-run the check."""
    ids = _cluster_with_contradiction(wire)
    if fix == "unlink":
        wire.confirm("memory_store", action="unlink", edge_id=ids["edge"])
    elif fix == "retype":
        wire.confirm("memory_store", action="retype", edge_id=ids["edge"], new_type="supports")
    else:
        wire.confirm("memory_supersede", action="archive", thought_id=ids["cluster"])
        assert wire.recall(action="get", thought_id=ids["a"])["item"]["status"] == "active"
    report = wire.ok("memory_status", action="health")["item"]
    assert next(c for c in report["checks"] if c["name"] == "contradiction_in_cluster")["ok"] is True


def test_health_omits_details_by_default_and_reports_sync_conflict_copies(
    wire: LocalWire, vault: Path
) -> None:
    """health: "pass include_details: true for the per-check detail arrays (omitted ... by default)";
    a sync client's conflict copy is reported."""
    tid = wire.create("an original note")
    rel = wire.recall(action="get", thought_id=tid, compact=False)["item"]["path"]
    copy = rel.replace(".md", " (Ann's conflicted copy 2026-03-14).md")
    hand_write(vault, copy, (vault / rel).read_text(encoding="utf-8"))
    wire.runtime.reconcile()
    brief = wire.ok("memory_status", action="health")["item"]
    check = next(c for c in brief["checks"] if c["name"] == "sync_conflict_copies")
    assert check["ok"] is False and check["count"] == 1 and "details" not in check
    full = wire.ok("memory_status", action="health", include_details=True)["item"]
    check = next(c for c in full["checks"] if c["name"] == "sync_conflict_copies")
    assert check["details"] == [{"path": copy}]


def test_a_clean_vault_is_healthy(wire: LocalWire) -> None:
    wire.create("fine")
    report = wire.ok("memory_status", action="health")
    assert report["item"]["status"] == "ok" and all(c["ok"] for c in report["item"]["checks"])
    assert report["meta"]["scope"] is None and report["meta"]["warnings"] == []
