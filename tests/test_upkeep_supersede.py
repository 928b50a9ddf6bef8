"""memory_supersede through MCP: archive, archive_batch and merge, each previewed first with a token,
executed only with confirm: true, revalidated at execution; in the vault every file stays, statuses
and links change in frontmatter, one commit per action.

Each test is a sentence of ../shared/seeds/000_30b85c2247cb72d3.txt, section memory_supersede.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import upkeep_wire
from conftest import FakeClock, commit_count, git, note_files
from graph_wire import add_project, normalised
from upkeep_wire import LocalWire, frontmatter, log_subjects

#: The shared fixtures: a registered project ("Doc Probe"), a runtime on the vault, a wire to it.
probe, runtime, wire = upkeep_wire.probe, upkeep_wire.runtime, upkeep_wire.wire


def path_of(wire: LocalWire, thought_id: str) -> str:
    return str(wire.recall(action="get", thought_id=thought_id, compact=False)["item"]["path"])


# -- archive -------------------------------------------------------------------------------------------


def test_archive_previews_then_executes_with_the_token(wire: LocalWire, vault: Path) -> None:
    """archive: "Preview: item: { status: preview, action: archive, thought_id, current_status: active,
    outcome: would_archive, preview_token } with the token mirrored in meta.preview"; "Execution answers
    item: { status: executed, action: archive, result: <shaped thought> }"."""
    tid = wire.create("a thought to archive")
    before = commit_count(vault)
    preview = wire.supersede(action="archive", thought_id=tid)
    item = preview["item"]
    assert {k: item[k] for k in ("status", "action", "thought_id", "current_status", "outcome")} == {
        "status": "preview", "action": "archive", "thought_id": tid, "current_status": "active",
        "outcome": "would_archive",
    }  # fmt: skip
    assert preview["meta"]["preview"] == {"token": item["preview_token"], "destructive": True}
    assert commit_count(vault) == before, "a preview writes nothing"
    done = wire.supersede(action="archive", thought_id=tid, confirm=True, preview_token=item["preview_token"])
    assert done["item"]["status"] == "executed" and done["item"]["action"] == "archive"
    assert done["item"]["result"]["id"] == tid and done["item"]["result"]["status"] == "archived"
    assert "preview" not in done["meta"]
    assert frontmatter(vault, path_of(wire, tid))["status"] == "archived"
    assert commit_count(vault) == before + 1
    assert log_subjects(vault, 1) == ["memory_supersede: archive a-thought-to-archive"]
    assert tid in git(vault, "log", "-1", "--format=%B")


def test_archive_is_idempotent_and_does_not_restamp(wire: LocalWire, vault: Path, clock: FakeClock) -> None:
    """archive: "Already-archived thoughts are idempotent: execution returns the existing thought
    without re-stamping it"."""
    tid = wire.create("archived twice")
    wire.confirm("memory_supersede", action="archive", thought_id=tid)
    rel = path_of(wire, tid)
    stamped = (vault / rel).read_bytes()
    commits = commit_count(vault)
    clock.advance(hours=1)
    preview = wire.supersede(action="archive", thought_id=tid)
    assert preview["item"]["outcome"] == "already_archived"
    again = wire.confirm("memory_supersede", action="archive", thought_id=tid)
    assert again["item"]["result"]["status"] == "archived"
    assert (vault / rel).read_bytes() == stamped and commit_count(vault) == commits


def test_archive_of_an_unknown_id_previews_not_found_and_fails_on_execution(wire: LocalWire) -> None:
    """archive: "outcome is not_found ..."; "missing thoughts fail with an error"."""
    missing = "01a172b4-d486-700c-a16e-5ae3d2d77a90"
    preview = wire.supersede(action="archive", thought_id=missing)
    assert preview["item"]["outcome"] == "not_found" and "preview" not in preview["meta"]
    message, error = wire.error(
        "memory_supersede", action="archive", thought_id=missing, confirm=True, preview_token="x"
    )
    assert error is not None and error["statusCode"] == 400 and "preview" in message


def test_confirm_needs_a_valid_token_bound_to_the_call(wire: LocalWire) -> None:
    """Dry-run / confirm: "confirm: true requires a valid preview_token and fails when it is missing or
    stale"."""
    a, b = wire.create("first"), wire.create("second")
    token = wire.supersede(action="archive", thought_id=a)["item"]["preview_token"]
    message, error = wire.error("memory_supersede", action="archive", thought_id=a, confirm=True)
    assert error is not None and error["statusCode"] == 400 and "preview_token" in message
    message, _ = wire.error(
        "memory_supersede", action="archive", thought_id=b, confirm=True, preview_token=token
    )
    assert "different" in message
    wire.supersede(action="archive", thought_id=a, confirm=True, preview_token=token)
    message, _ = wire.error(
        "memory_supersede", action="archive", thought_id=a, confirm=True, preview_token=token
    )
    assert "already used" in message


def test_execution_revalidates_current_state(wire: LocalWire, vault: Path) -> None:
    """memory_supersede: "Execution re-reads/revalidates current state, so previews can become stale"."""
    source, target = wire.create("merge source"), wire.create("merge target")
    token = wire.supersede(action="merge", source_id=source, target_id=target)["item"]["preview_token"]
    wire.confirm("memory_supersede", action="archive", thought_id=source)  # meanwhile
    message, error = wire.error(
        "memory_supersede",
        action="merge",
        source_id=source,
        target_id=target,
        confirm=True,
        preview_token=token,
    )
    assert error is not None and error["statusCode"] == 409 and "already archived" in message


# -- archive_batch ------------------------------------------------------------------------------------


def test_archive_batch_preview_reproduces_the_documented_example(wire: LocalWire) -> None:
    """archive_batch: the preview example (one would_archive row, counts per outcome, meta.preview.token)."""
    tid = wire.create("batch member")
    answer = wire.supersede(action="archive_batch", thought_ids=[tid])
    example = {
        "items": [{"thought_id": "01a172b4-d486-700c-a16e-5ae3d2d77a90", "outcome": "would_archive"}],
        "meta": {
            "action": "archive_batch",
            "scope": None,
            "counts": {"would_archive": 1, "total": 1, "returned": 1, "filtered_out": 0},
            "degraded": False,
            "warnings": [],
            "preview": {"token": "01a172b4-d4a7-75e3-a3cb-c92314b80e3e", "destructive": True},
        },
    }
    answer["meta"]["preview"] = {k: answer["meta"]["preview"][k] for k in ("token", "destructive")}
    assert normalised(answer) == normalised(example)


def test_archive_batch_reports_every_occurrence_in_input_order(wire: LocalWire, vault: Path) -> None:
    """archive_batch: "Preview reports each requested ID in input order, including duplicates";
    "repeated IDs after their first occurrence preview as already_archived"; execution rows
    archived/failed with counts; "duplicate IDs are idempotent"; one commit."""
    a, b, done = wire.create("one"), wire.create("two"), wire.create("already")
    wire.confirm("memory_supersede", action="archive", thought_id=done)
    missing = "01a172b4-d486-700c-a16e-5ae3d2d77a90"
    ids = [a, b, a, done, missing]
    preview = wire.supersede(action="archive_batch", thought_ids=ids)
    assert [(r["thought_id"], r["outcome"]) for r in preview["items"]] == [
        (a, "would_archive"), (b, "would_archive"), (a, "already_archived"), (done, "already_archived"),
        (missing, "not_found"),
    ]  # fmt: skip
    counts = preview["meta"]["counts"]
    assert (counts["would_archive"], counts["already_archived"], counts["not_found"], counts["total"]) == (
        2,
        2,
        1,
        5,
    )
    before = commit_count(vault)
    executed = wire.supersede(
        action="archive_batch",
        thought_ids=ids,
        confirm=True,
        preview_token=preview["meta"]["preview"]["token"],
    )
    assert [r["status"] for r in executed["items"]] == [
        "archived",
        "archived",
        "archived",
        "archived",
        "failed",
    ]
    assert missing in executed["items"][4]["error"]
    assert executed["meta"]["counts"]["archived"] == 4 and executed["meta"]["counts"]["failed"] == 1
    assert commit_count(vault) == before + 1
    for tid in (a, b):
        assert frontmatter(vault, path_of(wire, tid))["status"] == "archived"


@pytest.mark.parametrize("ids", [[], ["x"] * 1001])
def test_archive_batch_refuses_an_empty_or_over_long_list(wire: LocalWire, ids: list[str]) -> None:
    """archive_batch: "An empty or over-long array is refused with an isError envelope before anything
    runs"."""
    message, error = wire.error("memory_supersede", action="archive_batch", thought_ids=ids)
    assert error is not None and error["statusCode"] == 400 and "1 to 1000" in message


# -- merge --------------------------------------------------------------------------------------------


def _merge_setup(wire: LocalWire) -> dict[str, str]:
    ids = {n: wire.create(f"{n} thought") for n in ("source", "target", "x", "y", "z", "cl")}
    ids["cluster"] = wire.create("a cluster", is_cluster=True)
    s, t = ids["source"], ids["target"]
    links = [
        {"source": s, "target": ids["x"], "type": "supports"},  # moves to target -> x
        {"source": ids["y"], "target": s, "type": "develops"},  # moves to y -> target
        {"source": s, "target": t, "type": "related"},  # collapses into a self-loop: dropped
        {"source": s, "target": ids["z"], "type": "references"},  # the target has it already: dropped
        {"source": t, "target": ids["z"], "type": "references"},
        {"source": ids["cl"], "target": s, "type": "contradicts"},  # symmetric: the target owns it
        {"source": ids["cluster"], "target": s, "type": "cluster"},  # cluster membership moves
    ]
    answer = wire.store(action="link_batch", links=links)
    assert answer["meta"]["counts"]["failed"] == 0, answer
    return ids


def test_merge_preview_describes_source_target_and_effects(wire: LocalWire, vault: Path) -> None:
    """merge: "Preview ... item carries status: preview, action: merge, outcome, source ({ id, status,
    edges, source_edge_count, truncated }), target ({ id, status }), proposed, effects ({
    source_archived, target_updated, replaces_edge_created }) and preview_token"."""
    ids = _merge_setup(wire)
    before = commit_count(vault)
    item = wire.supersede(
        action="merge", source_id=ids["source"], target_id=ids["target"], merged_tags=["merged"]
    )["item"]
    assert item["status"] == "preview" and item["action"] == "merge" and item["outcome"] == "would_merge"
    assert set(item["source"]) == {"id", "status", "edges", "source_edge_count", "truncated"}
    assert item["source"]["source_edge_count"] == 6 and item["source"]["truncated"] is False
    assert item["target"] == {"id": ids["target"], "status": "active"}
    assert item["proposed"] == {"tags": ["merged"]}
    assert item["effects"] == {"source_archived": True, "target_updated": True, "replaces_edge_created": True}
    assert item["preview_token"]
    assert commit_count(vault) == before


def test_merge_preview_lists_at_most_50_edges(wire: LocalWire) -> None:
    """merge: "it includes at most 50 source-edge descriptors plus the full source_edge_count and a
    truncated flag"."""
    source = wire.create("hub")
    others = wire.store(action="bulk_create", thoughts=[{"content": f"spoke {i}"} for i in range(55)])
    links = [
        {"source": source, "target": row["thought"]["id"], "type": "references"} for row in others["items"]
    ]
    wire.store(action="link_batch", links=links)
    target = wire.create("new hub")
    item = wire.supersede(action="merge", source_id=source, target_id=target)["item"]
    assert len(item["source"]["edges"]) == 50
    assert item["source"]["source_edge_count"] == 55 and item["source"]["truncated"] is True


def test_merge_preview_reports_not_found_and_ineligible(wire: LocalWire) -> None:
    """merge: "Missing IDs report outcome: not_found; an ineligible merge reports outcome: ineligible and
    reason"; "Merging an archived source is refused"."""
    live, gone = wire.create("live"), wire.create("gone")
    missing = "01a172b4-d486-700c-a16e-5ae3d2d77a90"
    assert wire.supersede(action="merge", source_id=missing, target_id=live)["item"]["outcome"] == "not_found"
    wire.confirm("memory_supersede", action="archive", thought_id=gone)
    item = wire.supersede(action="merge", source_id=gone, target_id=live)["item"]
    assert item["outcome"] == "ineligible" and "archived" in item["reason"] and "preview_token" not in item


def test_merge_moves_edges_records_replaces_and_archives_the_source(wire: LocalWire, vault: Path) -> None:
    """merge: "the source's edges are recreated on the target, the target's content/tags are replaced when
    supplied, the source is archived, and a replaces edge target -> source records the consolidation";
    edges_transferred counts the edges the target now holds: not the self-loop, not the duplicate
    directed edge; the symmetric pair counts."""
    ids = _merge_setup(wire)
    files_before = {p.relative_to(vault).as_posix() for p in note_files(vault)}
    before = commit_count(vault)
    done = wire.confirm(
        "memory_supersede", action="merge", source_id=ids["source"], target_id=ids["target"],
        merged_content="the merged thought", merged_tags=["merged"],
    )["item"]  # fmt: skip
    assert done["status"] == "executed" and done["action"] == "merge"
    result = done["result"]
    assert result["edges_transferred"] == 4  # supports x, y develops, cl contradicts, cluster membership
    assert result["target"]["content"] == "the merged thought" and result["target"]["tags"] == ["merged"]
    # The vault: every file present, one commit, the source archived.
    assert {p.relative_to(vault).as_posix() for p in note_files(vault)} == files_before
    assert commit_count(vault) == before + 1 and log_subjects(vault, 1) == [
        "memory_supersede: merge source-thought into target-thought"
    ]
    assert git(vault, "status", "--porcelain") == ""
    source = wire.recall(action="get", thought_id=ids["source"], include_edges=True, compact=False)["item"]
    target = wire.recall(action="get", thought_id=ids["target"], include_edges=True, compact=False)["item"]
    assert source["status"] == "archived"
    up = {(e["edge"]["type"], e["thought"]["id"]) for e in target["upstream"]}
    down = {(e["edge"]["type"], e["thought"]["id"]) for e in target["downstream"]}
    assert {("supports", ids["x"]), ("references", ids["z"]), ("replaces", ids["source"])} <= up
    assert {("develops", ids["y"]), ("contradicts", ids["cl"]), ("cluster", ids["cluster"])} <= down
    # Dropped edges stay on the archived source as history; moved ones left it.
    assert {(e["edge"]["type"], e["thought"]["id"]) for e in source["upstream"]} == {("references", ids["z"])}
    assert {(e["edge"]["type"], e["thought"]["id"]) for e in source["downstream"]} == {
        ("replaces", ids["target"])
    }
    search = wire.recall(action="search", query=ids["source"])["items"][0]
    assert search["standing"] == "superseded" and search["superseded_by"] == [ids["target"]]


def test_an_obsidian_reader_sees_a_consistent_vault_after_a_merge(wire: LocalWire, vault: Path) -> None:
    """Must show: an Obsidian user's view (frontmatter and links) is consistent after a merge: every typed
    link is a wikilink to an existing note, the links Obsidian parses are the edges the tools report,
    the source says archived and the target replaces it."""
    from obsidiantools.api import Vault as ObsidianVault

    ids = _merge_setup(wire)
    wire.confirm("memory_supersede", action="merge", source_id=ids["source"], target_id=ids["target"])
    seen = ObsidianVault(vault).connect().gather()
    slugs = {tid: Path(path_of(wire, tid)).stem for tid in ids.values()}
    front = seen.front_matter_index
    assert front[slugs[ids["source"]]]["status"] == "archived"
    assert front[slugs[ids["target"]]]["replaces"] == [f"[[{slugs[ids['source']]}]]"]
    # Every wikilink in frontmatter names a note Obsidian knows (no dangling links)...
    for name, meta in front.items():
        for key in ("related", "supports", "develops", "references", "contradicts", "cluster", "replaces"):
            for link in meta.get(key, []) or []:
                assert link.strip("[]") in front, (name, key, link)
    # ... and what Obsidian reads equals what the tools report.
    for tid, slug in slugs.items():
        got = wire.recall(action="get", thought_id=tid, include_edges=True)["item"]
        reported = sorted((e["edge"]["type"], slugs.get(e["thought"]["id"], "?")) for e in got["upstream"])
        declared = sorted(
            (key, link.strip("[]"))
            for key in ("related", "supports", "develops", "references", "contradicts", "cluster", "replaces")
            for link in front[slug].get(key, []) or []
        )
        assert reported == declared, slug
    health = wire.ok("memory_status", action="health", include_details=True)["item"]
    assert next(c for c in health["checks"] if c["name"] == "dangling_links")["ok"] is True


def test_merge_lands_in_the_cwd_project_else_the_target_then_the_source(
    wire: LocalWire, probe: str, vault: Path, tmp_path: Path
) -> None:
    """merge: "cwd: Resolve resulting project from working directory (defaults to the target's, then the
    source's)"."""
    source = wire.create("projected source", cwd=probe)
    target = wire.create("unprojected target")
    done = wire.confirm("memory_supersede", action="merge", source_id=source, target_id=target)
    assert done["item"]["result"]["target"]["project"] == "Doc Probe"
    other = add_project(vault, "Other", "other", tmp_path / "code" / "other")
    s2 = wire.create("another source", cwd=probe)
    done = wire.confirm("memory_supersede", action="merge", source_id=s2, target_id=target, cwd=other)
    assert done["item"]["result"]["target"]["project"] == "Other"
    assert done["meta"]["scope"]["project_name"] == "Other"


def test_a_retired_input_is_refused_with_its_replacement(wire: LocalWire) -> None:
    """Retired inputs: "dry_run → confirm"."""
    message, error = wire.error("memory_supersede", action="archive", thought_id="x", dry_run=True)
    assert "use confirm" in message and error is not None and error["statusCode"] == 400
