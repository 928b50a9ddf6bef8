"""memory_reflect through MCP: reflect writes slot files and thoughts in one commit; timeline pages.

Each test is a sentence of ../shared/seeds/000_30b85c2247cb72d3.txt, section memory_reflect (and the
Working directory section's paragraph on reflect).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import upkeep_wire
from conftest import FakeClock, commit_count, git, hand_write
from graph_wire import normalised
from mcp_harness import wait_for
from upkeep_wire import LocalWire, frontmatter, local_runtime, log_subjects

#: The shared fixtures: a registered project ("Doc Probe"), a runtime on the vault, a wire to it.
probe, runtime, wire = upkeep_wire.probe, upkeep_wire.runtime, upkeep_wire.wire

NO_CWD = "no cwd — the answer spans every project"


def reflect(wire: LocalWire, **arguments: object) -> dict[str, object]:
    return wire.ok("memory_reflect", action="reflect", **arguments)


def test_an_empty_reflect_reproduces_the_documented_example_shape(wire: LocalWire, probe: str) -> None:
    """The reflect example: item holds the five counters, meta.scope the project, no warnings."""
    answer = reflect(wire, summary="a short session", cwd=probe)
    example = {
        "item": {
            "summary_appended": True, "goals_added": 0, "goals_removed": 0, "decisions_created": 0,
            "pending_created": 0,
        },
        "meta": {
            "action": "reflect",
            "scope": {
                "project": "01a172b4-d49b-76f4-ada8-7ba408661064", "project_name": "Doc Probe",
                "global": False,
            },
            "counts": {"total": 1, "returned": 1, "filtered_out": 0},
            "degraded": False,
            "warnings": [],
        },
    }  # fmt: skip
    assert normalised(answer) == normalised(example)


def test_summary_is_appended_with_a_timestamp_to_the_project_context_file(
    wire: LocalWire, vault: Path, probe: str, clock: FakeClock
) -> None:
    """ "summary is appended (with a timestamp) to the project_context slot"; the slot is a Markdown file a
    person reads in the project's folder; one commit."""
    before = commit_count(vault)
    reflect(wire, summary="Wired the cache.", cwd=probe)
    clock.advance(hours=2)
    reflect(wire, summary="Tuned the TTL.", cwd=probe)
    text = (vault / "desk/projects/doc-probe/project_context.md").read_text(encoding="utf-8")
    assert text == (
        "# Project context: Doc Probe\n\n## 2026-03-14T09:30:00Z\n\nWired the cache.\n"
        "\n## 2026-03-14T11:30:00Z\n\nTuned the TTL.\n"
    )
    assert commit_count(vault) == before + 2 and log_subjects(vault, 1) == [
        "memory_reflect: reflect desk/projects/doc-probe/project_context.md"
    ]
    assert git(vault, "status", "--porcelain") == ""


def test_goals_are_added_and_removed_by_case_insensitive_substring(
    wire: LocalWire, vault: Path, probe: str
) -> None:
    """ "goals_add adds goals to active_goals; goals_remove removes stored goal lines when the supplied text
    matches as a case-insensitive substring"."""
    first = reflect(wire, goals_add=["Ship the cache", "Write the docs", "ship the cache"], cwd=probe)["item"]
    assert first["goals_added"] == 2
    second = reflect(wire, goals_add=["Benchmark it"], goals_remove=["SHIP"], cwd=probe)["item"]
    assert (second["goals_added"], second["goals_removed"]) == (1, 1)
    text = (vault / "desk/projects/doc-probe/active_goals.md").read_text(encoding="utf-8")
    assert text == "# Active goals: Doc Probe\n\n- Write the docs\n- Benchmark it\n"


def test_goals_delta_is_retired(wire: LocalWire) -> None:
    """ "The retired goals_delta parameter is rejected with a hint to use goals_add / goals_remove"."""
    message, error = wire.error("memory_reflect", action="reflect", goals_delta=["x"])
    assert "goals_add" in message and "goals_remove" in message and error is not None


def test_decisions_become_active_thoughts_and_near_duplicates_are_skipped(
    wire: LocalWire, vault: Path, probe: str
) -> None:
    """ "decisions creates active thoughts tagged decision + reflect. Entries sufficiently similar to an
    existing non-archived decision in the same project are skipped (Jaccard >= 0.6 on normalised text),
    as are exact live-content duplicates of any tag"."""
    wire.create("We keep the vault under git", tags=["note"], cwd=probe)
    answer = reflect(
        wire,
        decisions=[
            "Use LanceDB for the vector index",
            "use lancedb for the vector index!",  # the same words: skipped
            "We keep the vault under git",  # exact live duplicate (tag note): skipped
            "Slots are Markdown files",
        ],
        cwd=probe,
    )
    assert answer["item"]["decisions_created"] == 2
    again = reflect(wire, decisions=["Use LanceDB as the vector index"], cwd=probe)  # Jaccard 1.0 on words
    assert again["item"]["decisions_created"] == 0
    listed = wire.recall(action="list", tag="decision", cwd=probe, compact=False)["items"]
    assert sorted(t["content"] for t in listed) == [
        "Slots are Markdown files",
        "Use LanceDB for the vector index",
    ]
    for t in listed:
        assert t["status"] == "active" and t["tags"] == ["decision", "reflect"] and t["kind"] == "decision"
        assert t["project"] == "Doc Probe" and frontmatter(vault, t["path"])["tags"] == [
            "decision",
            "reflect",
        ]
    # Another project (or none) is not the same project: no dedup across it.
    other = reflect(wire, decisions=["Use LanceDB for the vector index"])
    assert other["item"]["decisions_created"] == 1


def test_an_archived_decision_does_not_block_a_new_one(wire: LocalWire, probe: str) -> None:
    reflect(wire, decisions=["Adopt the blue theme"], cwd=probe)
    old = wire.recall(action="list", tag="decision", cwd=probe)["items"][0]["id"]
    wire.confirm("memory_supersede", action="archive", thought_id=old)
    assert reflect(wire, decisions=["Adopt the blue theme"], cwd=probe)["item"]["decisions_created"] == 1


def test_pending_items_are_drafts_that_surface_after_wake_days(
    wire: LocalWire, probe: str, clock: FakeClock
) -> None:
    """ "pending creates draft thoughts tagged pending + reflect, with surface_after = now + wake_days
    (default 7, range 1-365). A pending thought is invisible to the frontier until that time, then
    surfaces with reason pending and in the pending_items slot. An existing live thought with the same
    content in the project is left unchanged and is not counted as newly created"."""
    answer = reflect(wire, pending=["Re-run the benchmark", "Ask about the quota"], wake_days=3, cwd=probe)
    assert answer["item"]["pending_created"] == 2
    assert reflect(wire, pending=["Re-run the benchmark"], cwd=probe)["item"]["pending_created"] == 0
    listed = wire.recall(action="list", tag="pending", cwd=probe, compact=False)["items"]
    assert {t["status"] for t in listed} == {"draft"}
    assert {t["surface_after"] for t in listed} == {"2026-03-17T09:30:00Z"}
    assert {tuple(t["tags"]) for t in listed} == {("pending", "reflect")}
    frontier = wire.ok("memory_status", action="frontier", cwd=probe)
    assert frontier["items"] == [] and frontier["meta"]["counts"]["pending"] == 0
    clock.advance(days=3)
    frontier = wire.ok("memory_status", action="frontier", cwd=probe)
    assert [(i["reason"], i["thought"]["content"]) for i in frontier["items"]] == [
        ("pending", "Re-run the benchmark"), ("pending", "Ask about the quota"),
    ]  # fmt: skip
    slots = {s["name"]: s for s in wire.ok("memory_status", action="slots", cwd=probe)["items"]}
    assert "Re-run the benchmark" in slots["pending_items"]["content"]


@pytest.mark.parametrize("days", [0, 366])
def test_wake_days_outside_1_to_365_is_refused(wire: LocalWire, days: object) -> None:
    message, error = wire.error("memory_reflect", action="reflect", pending=["x"], wake_days=days)
    assert error is not None and error["statusCode"] == 400 and "wake_days" in message


def test_a_cwd_less_reflect_writes_global_slots_and_projectless_thoughts(
    wire: LocalWire, vault: Path
) -> None:
    """ "A cwd-less reflect ... summary and goals_add/goals_remove land in the global project_context/
    active_goals rows, while decisions and pending thoughts are created in the default project. The
    answer reports meta.scope: null and raises no warning"."""
    answer = reflect(
        wire, summary="global summary", goals_add=["global goal"], decisions=["a global decision"],
        pending=["a global follow-up"],
    )  # fmt: skip
    assert answer["meta"]["scope"] is None and answer["meta"]["warnings"] == []
    assert "global summary" in (vault / "desk/project_context.md").read_text(encoding="utf-8")
    assert "- global goal" in (vault / "desk/active_goals.md").read_text(encoding="utf-8")
    listed = wire.recall(action="list", tag="reflect")["items"]
    assert len(listed) == 2 and {t["project"] for t in listed} == {None}


def test_reflect_is_one_commit_for_slots_and_thoughts(wire: LocalWire, vault: Path, probe: str) -> None:
    before = commit_count(vault)
    reflect(wire, summary="s", goals_add=["g"], decisions=["d one"], pending=["p one"], cwd=probe)
    assert commit_count(vault) == before + 1
    body = git(vault, "log", "-1", "--format=%B")
    assert (
        "desk/projects/doc-probe/project_context.md" in body
        and "desk/projects/doc-probe/active_goals.md" in body
    )
    assert body.count(" id=") == 2  # the two new thoughts, named with their ids
    assert git(vault, "status", "--porcelain") == ""


def test_slot_files_are_not_memory_notes(wire: LocalWire, vault: Path, probe: str) -> None:
    """Slots are files a person reads and edits, not thoughts: never listed, searched or indexed."""
    reflect(wire, summary="unique zebra summary", goals_add=["unique zebra goal"], cwd=probe)
    assert wire.recall(action="list")["meta"]["counts"]["total"] == 0
    assert wire.recall(action="search", query="zebra", min_relevance=0)["items"] == []


def test_a_person_edits_a_slot_file_and_the_watcher_commits_it(
    vault: Path, clock: FakeClock, probe: str
) -> None:
    """Invariant 3: hand edits are committed by the watcher after a short quiet period, slot files too."""
    with local_runtime(vault, clock, commit_quiet_period=0.05) as runtime:
        wire = LocalWire(runtime)
        reflect(wire, goals_add=["first goal"], cwd=probe)
        runtime.start_watching()
        hand_write(
            vault, "desk/projects/doc-probe/active_goals.md", "# Active goals: Doc Probe\n\n- my own goal\n"
        )
        wait_for(lambda: git(vault, "status", "--porcelain") == "", timeout=20)
        assert (
            git(vault, "log", "-1", "--format=%s") == "hand edit: desk/projects/doc-probe/active_goals.md\n"
        )
        slots = {s["name"]: s for s in wire.ok("memory_status", action="slots", cwd=probe)["items"]}
        assert "- my own goal" in slots["active_goals"]["content"]


def test_timeline_is_the_paged_thought_list(wire: LocalWire, probe: str) -> None:
    """ "action=timeline is the plain paginated thought list (status, cwd, limit, offset) as { items,
    meta }; cwd scopes it to one project, and omitted, it lists every project with the standard no cwd
    warning. meta.counts carries the limit and offset that actually ran"."""
    for i in range(3):
        wire.create(f"thought {i}", cwd=probe)
    wire.create("elsewhere")
    page = wire.ok("memory_reflect", action="timeline", cwd=probe, limit=2)
    assert page["meta"]["action"] == "timeline" and page["meta"]["warnings"] == []
    assert page["meta"]["counts"] == {"limit": 2, "offset": 0, "total": 3, "returned": 2, "filtered_out": 1}
    assert [t["content"] for t in page["items"]] == ["thought 2", "thought 1"]
    everything = wire.ok("memory_reflect", action="timeline")
    assert everything["meta"]["counts"]["total"] == 4 and everything["meta"]["warnings"] == [NO_CWD]
    assert everything["meta"]["counts"]["limit"] == 50 and everything["meta"]["scope"] is None
