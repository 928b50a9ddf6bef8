"""Placement end to end: ``memory_status action=propose`` and the ``edge_review`` queue, through the
SDK client against one real daemon shared by the module.

Each test is a sentence of the graph document (../shared/seeds/000_30b85c2247cb72d3.txt, sections
Working directory, Compact output, Dry-run / confirm, ``edge_review``, ``memory_status action=propose``)
or of docs/tools.md where vaultmem designs what the document only names.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from graph_wire import Wire, add_project, flushed_commits
from mcp_harness import running_daemon

from vaultmem.index.embedder import FakeEmbedder
from vaultmem.notes.frontmatter import parse
from vaultmem.operations.proposals import Proposal
from vaultmem.server.daemon import Daemon
from vaultmem.vault.init import init_vault

PIN_THOUGHT = "the plan is restricted to the project the addressed thought (thought_id) belongs to"
PIN_DRAFT = "the plan is restricted to the default project (draft content)"
RESOLVE = "(check it with memory_manage action=resolve)"


class Env:
    def __init__(self, daemon: Daemon, vault: Path, probe: str, other: str) -> None:
        self.daemon = daemon
        self.wire = Wire(daemon)
        self.vault = vault
        self.probe = probe
        self.other = other

    def create(self, content: str, **arguments: Any) -> str:
        return self.wire.create(content, **arguments)

    def review(self, **arguments: Any) -> dict[str, Any]:
        return self.wire.ok("edge_review", **arguments)

    def propose(self, **arguments: Any) -> dict[str, Any]:
        return self.wire.ok("memory_status", action="propose", **arguments)

    def meta_of(self, note_id: str) -> dict[str, Any]:
        path = self.wire.recall(action="get", thought_id=note_id, compact=False)["item"]["path"]
        return parse((self.vault / path).read_text(encoding="utf-8")).meta

    def commits(self) -> int:
        return flushed_commits(self.daemon)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    tmp = tmp_path_factory.mktemp("placement")
    vault, _ = init_vault(tmp / "vault")
    probe = add_project(vault, "Doc Probe", "doc-probe", tmp / "code" / "probe")
    other = add_project(vault, "Other", "other", tmp / "code" / "other")
    # A wide fake embedder: its hashed words rarely collide, so only a family's thoughts are neighbours.
    with running_daemon(vault, tmp / "token", embedder=FakeEmbedder(dim=2048)) as daemon:
        yield Env(daemon, vault, probe, other)


def _family(env: Env, word: str, n: int, cwd: str | None = None, **extra: Any) -> list[str]:
    """``n`` thoughts that share their words (the fake embedder makes them close neighbours)."""
    texts = [f"{word} {word}a {word}b {word}c {word}n{i}" for i in range(n)]
    return [env.create(t, cwd=cwd, **extra) if cwd else env.create(t, **extra) for t in texts]


# -- memory_status action=propose -----------------------------------------------------------------


def test_propose_is_slim_by_default_and_counts_the_planned_edges(env: Env) -> None:
    """propose: "default output is slim (top 3 edges, no signals)"; "meta.counts.total is the number of
    planned edges"."""
    ids = _family(env, "slimword", 6, env.probe)
    answer = env.propose(thought_id=ids[0], cwd=env.probe)
    item = answer["item"]
    assert set(item) == {"thought_id", "placement", "edges", "lifecycle", "degraded"}
    assert len(item["edges"]) == 3 and all("signals" not in e for e in item["edges"])
    assert answer["meta"]["counts"] == {"total": 5, "returned": 3, "filtered_out": 2}
    assert {e["target_id"] for e in item["edges"]} <= set(ids[1:])
    assert [e["score"] for e in item["edges"]] == sorted((e["score"] for e in item["edges"]), reverse=True)
    assert item["placement"]["project"] == "Doc Probe" and item["placement"]["project_id"]
    assert answer["meta"]["degraded"] is False and item["degraded"] is False


def test_propose_compact_false_or_include_signals_give_the_full_plan(env: Env) -> None:
    """ "pass include_signals=true or compact=false for full output"; max_edges caps the edges."""
    ids = _family(env, "fullword", 6, env.probe)
    full = env.propose(thought_id=ids[0], cwd=env.probe, compact=False)
    assert len(full["item"]["edges"]) == 5 and full["meta"]["counts"]["filtered_out"] == 0
    signals = full["item"]["edges"][0]["signals"]
    assert {"similarity", "distance", "relevance", "shared_tags", "neighbour_status"} <= set(signals)
    assert {"pool_size", "leg", "min_relevance"} <= set(full["item"]["signals"])
    with_signals = env.propose(thought_id=ids[0], cwd=env.probe, include_signals=True, max_edges=1)
    assert len(with_signals["item"]["edges"]) == 1 and "signals" in with_signals["item"]["edges"][0]
    assert with_signals["meta"]["counts"] == {"total": 5, "returned": 1, "filtered_out": 4}


def test_propose_without_cwd_stays_pinned_to_the_thoughts_project_and_says_so(env: Env) -> None:
    """Working directory: "the plan stays pinned to the project the addressed thought belongs to" with
    the note `no cwd — propose is not cross-project: ...` instead of the broadening one."""
    ids = _family(env, "pinword", 3, env.probe)
    elsewhere = _family(env, "pinword", 2, env.other)
    answer = env.propose(thought_id=ids[0], compact=False)
    assert answer["meta"]["scope"] is None
    assert answer["meta"]["warnings"] == [f"no cwd — propose is not cross-project: {PIN_THOUGHT}"]
    targets = {e["target_id"] for e in answer["item"]["edges"]}
    assert targets == set(ids[1:]) and not targets & set(elsewhere)


def test_propose_for_draft_content_uses_the_default_project(env: Env) -> None:
    """ "or to the default project for draft content" (vaultmem: no project), with its own warning."""
    loose = _family(env, "draftword", 2)  # filed in no project
    _family(env, "draftword", 2, env.probe)
    answer = env.propose(content="draftword draftworda draftwordb draftwordc", compact=False)
    assert answer["meta"]["warnings"] == [f"no cwd — propose is not cross-project: {PIN_DRAFT}"]
    assert answer["item"]["thought_id"] is None
    assert {e["target_id"] for e in answer["item"]["edges"]} == set(loose)
    assert all(e["source_id"] is None for e in answer["item"]["edges"])  # the draft is the source
    assert answer["item"]["lifecycle"]["suggested"] == "active"


def test_propose_with_an_unknown_cwd_gets_one_composed_warning(env: Env, tmp_path: Path) -> None:
    """ "A path that resolves to no project gets one composed warning ... and no `the answer spans every
    project` claim"; "meta.scope stays the unresolved { project: null, project_name: null, global: true }"."""
    (thought,) = _family(env, "unknownword", 1, env.probe)
    path = str(tmp_path / "nowhere")
    answer = env.propose(thought_id=thought, cwd=path)
    assert answer["meta"]["scope"] == {"project": None, "project_name": None, "global": True}
    assert answer["meta"]["warnings"] == [
        f'cwd "{path}" matches no known project {RESOLVE} — propose is not cross-project: {PIN_THOUGHT}'
    ]
    draft = env.propose(content="unknownword", cwd=path)
    assert draft["meta"]["warnings"] == [
        f'cwd "{path}" matches no known project {RESOLVE} — propose is not cross-project: {PIN_DRAFT}'
    ]
    assert "spans every project" not in " ".join(answer["meta"]["warnings"] + draft["meta"]["warnings"])


def test_propose_with_a_cwd_is_restricted_to_that_project(env: Env) -> None:
    """ "with it the plan is restricted to that project"."""
    (subject,) = _family(env, "cwdword", 1, env.probe)
    there = _family(env, "cwdword", 2, env.other)
    answer = env.propose(thought_id=subject, cwd=env.other, compact=False)
    assert answer["meta"]["scope"]["project_name"] == "Other" and answer["meta"]["warnings"] == []
    assert {e["target_id"] for e in answer["item"]["edges"]} == set(there)
    assert answer["item"]["placement"]["project"] == "Other"


def test_propose_never_writes(env: Env) -> None:
    """ "Read-only placement plan (placement, edges, lifecycle); never writes"."""
    ids = _family(env, "readonlyword", 3, env.probe)
    before = env.commits()
    env.propose(thought_id=ids[0], compact=False)
    env.propose(content="readonlyword readonlyworda")
    assert env.commits() == before


def test_propose_places_a_thought_in_a_cluster_and_flags_a_near_duplicate(env: Env) -> None:
    """vaultmem's plan: a cluster neighbour is a `cluster` edge from the cluster; a near-identical
    neighbour makes the lifecycle suggest a merge; a related draft is suggested active."""
    cluster = env.create("clusterword clusterworda clusterwordb clusterwordc", cwd=env.probe, is_cluster=True)
    draft = env.create(
        "clusterword clusterworda clusterwordb clusterwordc more", cwd=env.probe, status="draft"
    )
    answer = env.propose(thought_id=draft, cwd=env.probe, compact=False)
    to_cluster = next(e for e in answer["item"]["edges"] if e["type"] == "cluster")
    assert (to_cluster["source_id"], to_cluster["target_id"]) == (cluster, draft)
    assert answer["item"]["placement"]["cluster"]["id"] == cluster
    assert answer["item"]["lifecycle"]["current"] == "draft"
    original = env.create("clusterword clusterworda clusterwordb clusterwordc more", cwd=env.probe)
    twin = env.create("clusterword clusterworda clusterwordb clusterwordc more", cwd=env.probe)
    dup = env.propose(thought_id=twin, cwd=env.probe)
    assert dup["item"]["lifecycle"]["suggested"] == "merge"
    assert dup["item"]["lifecycle"]["merge_target"] == original


def test_propose_needs_exactly_one_subject(env: Env) -> None:
    (thought,) = _family(env, "subjectword", 1, env.probe)
    message, error = env.wire.error("memory_status", action="propose", thought_id=thought, content="x")
    assert "not both" in message and error is not None and error["statusCode"] == 400
    message, error = env.wire.error("memory_status", action="propose")
    assert "thought_id or draft content" in message


# -- edge_review: enqueue, list ---------------------------------------------------------------------


def test_enqueue_queues_the_plans_edges_and_counts_them(env: Env) -> None:
    """enqueue → `{ item: <enqueue outcome>, meta }`, with meta.counts.proposals and meta.counts.skipped;
    "proposals from the same engine"; max_proposals bounds them."""
    ids = _family(env, "enqword", 4, env.probe)
    plan = env.propose(thought_id=ids[0], compact=False)["item"]["edges"]
    answer = env.review(action="enqueue", thought_id=ids[0], max_proposals=2)
    item = answer["item"]
    assert answer["meta"]["counts"]["proposals"] == 2 and answer["meta"]["counts"]["skipped"] == 0
    assert [(p["source_id"], p["target_id"]) for p in item["proposals"]] == [
        (e["source_id"], e["target_id"]) for e in plan[:2]
    ]
    assert all(p["status"] == "pending" and p["kind"] == "edge" for p in item["proposals"])
    again = env.review(action="enqueue", thought_id=ids[0], max_proposals=3)
    assert again["meta"]["counts"] == {
        "proposals": 1,
        "skipped": 2,
        "total": 1,
        "returned": 1,
        "filtered_out": 0,
    }
    assert {s["reason"] for s in again["item"]["skipped"]} == {"already pending"}


def test_enqueue_requires_a_persisted_active_thought(env: Env) -> None:
    """ "enqueue requires a persisted, active thought_id"; the retired max_items names max_proposals."""
    draft = env.create("enqdraftword", cwd=env.probe, status="draft")
    message, error = env.wire.error("edge_review", action="enqueue", thought_id=draft)
    assert "active" in message and error is not None and error["statusCode"] == 400
    _message, error = env.wire.error(
        "edge_review", action="enqueue", thought_id="01a172b4-d486-700c-a16e-5ae3d2d77a90"
    )
    assert error is not None and error["statusCode"] == 404
    message, _ = env.wire.error("edge_review", action="enqueue", thought_id=draft, max_items=3)
    assert message == "max_items was removed; use max_proposals"


def test_list_pages_hides_retired_kinds_and_uses_the_canonical_counts(env: Env) -> None:
    """list: "meta.counts.total the rows matching the filters ignoring the page limit,
    meta.counts.retired_count the retired (legacy) kinds hidden by default, and filtered_out the rows the
    page or the retired filter left out"; retired aliases gone."""
    ids = _family(env, "listword", 4, env.other)
    env.review(action="enqueue", thought_id=ids[0], max_proposals=3, cwd=env.other)
    runtime = env.daemon.memory
    assert runtime is not None
    legacy = Proposal(
        "01a172b4-0000-7000-8000-000000000001", "project_move", "pending", ids[0], ids[0], ids[1],
        "related", 0.5, "Other", "2000-01-01T00:00:00Z", "2000-01-01T00:00:00Z",
    )  # fmt: skip
    runtime._review.queue.add([legacy])
    page = env.review(action="list", cwd=env.other, limit=2)
    counts = page["meta"]["counts"]
    assert counts["total"] == 4 and counts["returned"] == 2 and counts["filtered_out"] == 2
    assert counts["retired_count"] == 1 and counts["limit"] == 2 and counts["offset"] == 0
    assert counts["all_total"] >= 4
    assert all(r["kind"] == "edge" for r in page["items"])
    for alias in ("proposals", "results", "rows", "count", "visible_count", "retired", "breakdown"):
        assert alias not in page and alias not in counts
    rest = env.review(action="list", cwd=env.other, limit=2, offset=2)
    assert rest["meta"]["counts"]["returned"] == 1
    everything = env.review(action="list", cwd=env.other, include_retired=True)
    assert any(r["kind"] == "project_move" for r in everything["items"]) and len(everything["items"]) == 4
    assert page["meta"]["scope"]["project_name"] == "Other"
    assert env.review(action="list")["meta"]["warnings"] == ["no cwd — the answer spans every project"]
    applied = env.review(action="apply", proposal_id=legacy.id)
    assert applied["item"]["status"] == "refused" and "retired" in applied["item"]["reason"]


# -- edge_review: apply, apply_batch, rollback, reject -------------------------------------------------


def _enqueue(
    env: Env, word: str, n: int = 3, cwd: str | None = None
) -> tuple[list[str], list[dict[str, Any]]]:
    ids = _family(env, word, n, cwd or env.probe)
    answer = env.review(action="enqueue", thought_id=ids[0], max_proposals=n)
    return ids, answer["item"]["proposals"]


def test_apply_previews_then_writes_the_edge_into_the_vault_in_one_commit(env: Env) -> None:
    """apply: "the report's status is dry_run (preview), accepted, ..., and a preview sets meta.preview";
    confirm: true requires the preview_token; the applied proposal is an edge in the source note."""
    ids, (proposal, *_rest) = _enqueue(env, "applyword", 2)
    before = env.commits()
    preview = env.review(action="apply", proposal_id=proposal["id"])
    assert preview["item"]["status"] == "dry_run" and preview["item"]["preview_token"]
    assert preview["meta"]["preview"]["token"] == preview["item"]["preview_token"]
    assert preview["meta"]["preview"]["destructive"] is True
    assert env.commits() == before
    message, error = env.wire.error("edge_review", action="apply", proposal_id=proposal["id"], confirm=True)
    assert "preview_token" in message and error is not None and error["statusCode"] == 400
    done = env.review(
        action="apply",
        proposal_id=proposal["id"],
        confirm=True,
        preview_token=preview["item"]["preview_token"],
    )
    assert done["item"]["status"] == "accepted" and "preview" not in done["meta"]
    assert done["item"]["proposal"]["status"] == "applied"
    target_slug = env.wire.recall(action="get", thought_id=ids[1], compact=False)["item"]["slug"]
    assert f"[[{target_slug}]]" in env.meta_of(ids[0])["related"]
    assert env.commits() == before + 1
    assert "edge_review" in git(env.vault, "log", "-1", "--format=%B")
    edges = env.wire.recall(action="get", thought_id=ids[0], include_edges=True)["item"]["upstream"]
    assert any(e["edge"]["id"] == done["item"]["edge_id"] for e in edges)
    again = env.review(action="apply", proposal_id=proposal["id"])
    assert again["item"]["status"] == "refused" and "meta" in again and "preview" not in again["meta"]


def test_a_proposal_is_stale_when_the_vault_changed_since(env: Env) -> None:
    """ "a stale proposal detected against the current vault": content rewritten, or the pair linked."""
    ids, proposals = _enqueue(env, "staleword", 3)
    by_target = {p["target_id"]: p for p in proposals}
    env.wire.store(action="update", thought_id=ids[1], content="something else entirely now")
    stale = env.review(action="apply", proposal_id=by_target[ids[1]]["id"])
    assert stale["item"]["status"] == "stale" and "changed" in stale["item"]["reason"]
    assert "preview" not in stale["meta"]
    env.wire.store(action="link", source_id=ids[2], target_id=ids[0], edge_type="supports")
    linked = env.review(action="apply", proposal_id=by_target[ids[2]]["id"])
    assert linked["item"]["status"] == "stale" and "linked already" in linked["item"]["reason"]


def test_apply_batch_reports_one_row_per_proposal_and_one_counter_per_status(env: Env) -> None:
    """apply_batch → `{ items, meta }`: one row per proposal (failures folded in as { proposal_id,
    status: "failed", reason }), one counter per status plus failed; one commit for the batch."""
    _ids, proposals = _enqueue(env, "batchword", 4)
    wanted = [p["id"] for p in proposals] + ["no-such-proposal"]
    preview = env.review(action="apply_batch", proposal_ids=wanted)
    assert [r["status"] for r in preview["items"]] == ["dry_run"] * 3 + ["failed"]
    assert preview["meta"]["counts"]["dry_run"] == 3 and preview["meta"]["counts"]["failed"] == 1
    token = preview["meta"]["preview"]["token"]
    before = env.commits()
    done = env.review(action="apply_batch", proposal_ids=wanted, confirm=True, preview_token=token)
    assert [r["status"] for r in done["items"]] == ["accepted"] * 3 + ["failed"]
    assert done["meta"]["counts"] == {
        "accepted": 3, "stale": 0, "refused": 0, "failed": 1, "total": 4, "returned": 4, "filtered_out": 0,
    }  # fmt: skip
    assert env.commits() == before + 1
    assert done["meta"]["warnings"] == []
    refused = env.review(action="apply_batch", proposal_ids=[p["id"] for p in proposals])
    assert refused["meta"]["counts"]["refused"] == 3 and "preview" not in refused["meta"]
    assert refused["meta"]["warnings"] and "refused as a whole" in refused["meta"]["warnings"][0]


def test_rollback_previews_then_restores_the_prior_state(env: Env) -> None:
    """rollback → `{ items, meta }`: the per-row report is items and its summary (reverted/skipped/
    refused) is meta.counts; a preview sets meta.preview. The vault is as it was before the apply."""
    ids, proposals = _enqueue(env, "rollword", 4)
    first, second = proposals[0], proposals[1]
    before_meta = env.meta_of(ids[0])
    token = env.review(action="apply_batch", proposal_ids=[first["id"], second["id"]])["meta"]["preview"][
        "token"
    ]
    env.review(
        action="apply_batch", proposal_ids=[first["id"], second["id"]], confirm=True, preview_token=token
    )
    pending = proposals[2]["id"]
    wanted = [first["id"], second["id"], pending]
    preview = env.review(action="rollback", proposal_ids=wanted)
    assert [r["status"] for r in preview["items"]] == ["would_revert", "would_revert", "refused"]
    assert preview["meta"]["preview"]["token"]
    before = env.commits()
    done = env.review(
        action="rollback",
        proposal_ids=wanted,
        confirm=True,
        preview_token=preview["meta"]["preview"]["token"],
    )
    assert done["meta"]["counts"] == {
        "reverted": 2, "skipped": 0, "refused": 1, "total": 3, "returned": 3, "filtered_out": 0,
    }  # fmt: skip
    assert "preview" not in done["meta"] and env.commits() == before + 1
    after = env.meta_of(ids[0])
    assert after.get("related") == before_meta.get("related")
    assert env.review(action="list", status="rolled_back", thought_id=ids[0])["meta"]["counts"]["total"] == 2


def test_rollback_puts_back_the_related_placeholder_an_apply_upgraded(env: Env) -> None:
    """The document's pair rule upgrades a `related` placeholder in place; the rollback restores it with
    its created_at."""
    cluster = env.create("upgradeword upgradeworda upgradewordb upgradewordc", cwd=env.probe, is_cluster=True)
    member = env.create("upgradeword upgradeworda upgradewordb upgradewordc member", cwd=env.probe)
    proposal = next(
        p
        for p in env.review(action="enqueue", thought_id=member)["item"]["proposals"]
        if p["type"] == "cluster"
    )
    placeholder = env.wire.store(action="link", source_id=member, target_id=cluster)["item"]
    token = env.review(action="apply", proposal_id=proposal["id"])["item"]["preview_token"]
    done = env.review(action="apply", proposal_id=proposal["id"], confirm=True, preview_token=token)["item"]
    assert done["status"] == "accepted" and done["replaced"]["type"] == "related"
    assert "related" not in env.meta_of(member) and env.meta_of(cluster)["cluster"]
    token = env.review(action="rollback", proposal_id=proposal["id"])["meta"]["preview"]["token"]
    env.review(action="rollback", proposal_id=proposal["id"], confirm=True, preview_token=token)
    restored = env.wire.recall(action="get", thought_id=member, include_edges=True)["item"]["upstream"]
    assert [(e["edge"]["id"], e["edge"]["created_at"]) for e in restored] == [
        (placeholder["id"], placeholder["created_at"])
    ]
    assert "cluster" not in env.meta_of(cluster)


def test_rollback_skips_an_edge_that_is_already_gone(env: Env) -> None:
    _ids, (proposal, *_rest) = _enqueue(env, "goneword", 2)
    token = env.review(action="apply", proposal_id=proposal["id"])["item"]["preview_token"]
    edge_id = env.review(action="apply", proposal_id=proposal["id"], confirm=True, preview_token=token)[
        "item"
    ]["edge_id"]
    unlink = env.wire.store(action="unlink", edge_id=edge_id)["item"]["preview_token"]
    env.wire.store(action="unlink", edge_id=edge_id, confirm=True, preview_token=unlink)
    preview = env.review(action="rollback", proposal_ids=[proposal["id"]])
    assert preview["items"][0]["status"] == "skipped" and "preview" not in preview["meta"]


def test_reject_takes_a_proposal_out_of_review(env: Env) -> None:
    """reject → `{ item: <reject report>, meta }`; a rejected edge is not proposed again; an applied one is
    refused (roll it back instead)."""
    ids, proposals = _enqueue(env, "rejectword", 2)
    proposal = proposals[0]
    done = env.review(action="reject", proposal_id=proposal["id"], reason="not related")
    assert done["item"]["status"] == "rejected" and done["item"]["previous_status"] == "pending"
    assert done["item"]["proposal"]["reason"] == "not related"
    assert env.review(action="reject", proposal_id=proposal["id"])["item"]["status"] == "rejected"
    again = env.review(action="enqueue", thought_id=ids[0])
    assert again["item"]["skipped"][0]["reason"] == "already rejected"
    refused = env.review(action="apply", proposal_id=proposal["id"])
    assert refused["item"]["status"] == "refused"
    _message, error = env.wire.error("edge_review", action="reject", proposal_id="nope")
    assert error is not None and error["statusCode"] == 404
