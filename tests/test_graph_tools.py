"""memory_recall and memory_store end to end: the SDK client against a real daemon on a free port.

Each test is a sentence of the graph document (../shared/seeds/000_30b85c2247cb72d3.txt, sections
Response envelope, Wire envelope, Working directory, Compact output, Opt-in url links, Dry-run /
confirm, memory_recall, memory_store); the JSON examples there are reproduced shape for shape, ids
and timestamps aside (``normalised``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import commit_count, git, hand_write, write_vault_contract
from graph_wire import Wire, add_project, normalised
from mcp_harness import running_daemon

from vaultmem.notes.frontmatter import parse
from vaultmem.server.daemon import Daemon

MARKER = "MCP_DOC_MARKER: the envelope example thought"
NO_CWD = "no cwd — the answer spans every project"


@pytest.fixture
def probe(vault: Path, tmp_path: Path) -> str:
    """The cwd of the project "Doc Probe" (registered before the daemon starts)."""
    return add_project(vault, "Doc Probe", "doc-probe", tmp_path / "code" / "probe")


@pytest.fixture
def daemon(vault: Path, tmp_path: Path, probe: str) -> Iterator[Daemon]:
    with running_daemon(vault, tmp_path / "token") as running:
        yield running


@pytest.fixture
def wire(daemon: Daemon) -> Wire:
    return Wire(daemon)


def meta(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "action": "get",
        "scope": None,
        "counts": {"total": 1, "returned": 1, "filtered_out": 0},
        "degraded": False,
        "warnings": [],
    }
    base.update(overrides)
    return base


def frontmatter(vault: Path, rel: str) -> dict[str, Any]:
    return parse((vault / rel).read_text(encoding="utf-8")).meta


# -- the tool list ----------------------------------------------------------------------------------


def test_both_graph_tools_are_listed_with_an_output_schema_of_result(daemon: Daemon) -> None:
    """Wire envelope: "Every tool declares the same output shape, { result: <payload> }"."""
    import anyio
    from mcp_harness import mcp_client

    tools: dict[str, Any] = {}

    async def main() -> None:
        async with mcp_client(daemon.url, daemon.token()) as client:
            for tool in (await client.list_tools()).tools:
                tools[tool.name] = tool

    anyio.run(main)
    for name in ("memory_recall", "memory_store"):
        schema = tools[name].output_schema
        assert schema is not None and schema["required"] == ["result"], name
        assert tools[name].input_schema["required"] == ["action"]
        for param, spec in tools[name].input_schema["properties"].items():
            assert spec.get("description"), f"{name}.{param}"
    # Retired inputs stay visible as tombstones.
    assert {"top_k", "cluster", "mode", "project_id"} <= set(
        tools["memory_recall"].input_schema["properties"]
    )
    assert {"is_profile", "project_id"} <= set(tools["memory_store"].input_schema["properties"])


# -- response envelope, scope, compact ------------------------------------------------------------------


def test_a_list_without_cwd_spans_every_project_and_says_so(wire: Wire, probe: str) -> None:
    """Working directory: the cwd-less list example (scope null, the no-cwd warning, counts with
    limit/offset, total 4, returned 1, filtered_out 3)."""
    for text in ("first", "second", "third"):
        wire.create(f"{text} filler thought", cwd=probe)
    wire.create(MARKER, cwd=probe)
    answer = wire.recall(action="list", limit=1)
    example = {
        "items": [
            {"id": "01a172b6-5dfc-73e5-b28e-91236675b273", "content": MARKER, "status": "active", "tags": [], "project": "Doc Probe"}
        ],
        "meta": {
            "action": "list",
            "scope": None,
            "counts": {"limit": 1, "offset": 0, "total": 4, "returned": 1, "filtered_out": 3},
            "degraded": False,
            "warnings": [NO_CWD],
        },
    }  # fmt: skip
    assert normalised(answer) == normalised(example)


def test_a_list_with_cwd_is_scoped_to_its_project_and_pages(
    wire: Wire, probe: str, tmp_path: Path, vault: Path
) -> None:
    """action=list: "meta.counts carries the page that actually ran", "a caller pages with offset +=
    limit until offset >= total"; the list example's scope names the project (id and name)."""
    other = add_project(vault, "Other", "other", tmp_path / "code" / "other")
    for i in range(3):
        wire.create(f"filler {i}", cwd=probe)
    wire.create(MARKER, cwd=probe)
    wire.create("elsewhere", cwd=other)
    answer = wire.recall(action="list", limit=1, cwd=probe)
    assert (
        answer["meta"]["scope"]["project_name"] == "Doc Probe" and answer["meta"]["scope"]["global"] is False
    )
    assert answer["meta"]["warnings"] == []
    example_counts = {"total": 4, "returned": 1, "filtered_out": 3}
    assert {k: answer["meta"]["counts"][k] for k in example_counts} == example_counts
    assert answer["items"][0]["content"] == MARKER
    seen: list[str] = []
    offset = 0
    while True:
        page = wire.recall(action="list", limit=3, offset=offset, cwd=probe)
        assert page["meta"]["counts"]["limit"] == 3 and page["meta"]["counts"]["offset"] == offset
        seen += [i["id"] for i in page["items"]]
        offset += 3
        if offset >= page["meta"]["counts"]["total"]:
            break
    assert len(seen) == len(set(seen)) == 4


def test_the_project_scope_reports_a_stable_id(wire: Wire, probe: str, vault: Path) -> None:
    """meta.scope: "project is the project id and project_name its display name"; an `id` in
    project.yaml is that id."""
    first = wire.recall(action="list", cwd=probe)["meta"]["scope"]["project"]
    assert first == wire.recall(action="list", cwd=probe)["meta"]["scope"]["project"]
    yaml = vault / "desk/projects/doc-probe/project.yaml"
    yaml.write_text(
        yaml.read_text(encoding="utf-8") + "id: 0192f0c1-8d2e-7b3a-9c4d-000000000001\n", encoding="utf-8"
    )
    assert (
        wire.recall(action="list", cwd=probe)["meta"]["scope"]["project"]
        == "0192f0c1-8d2e-7b3a-9c4d-000000000001"
    )


def test_an_unknown_cwd_answers_globally_with_a_warning(wire: Wire, probe: str, tmp_path: Path) -> None:
    """ "global: true with project: null means the answer spans every project although a cwd was
    given ... warnings carries a cwd "..." matches no known project note. The call still succeeds"."""
    wire.create("a thought in the probe project", cwd=probe)
    nowhere = str(tmp_path / "nowhere")
    answer = wire.recall(action="list", cwd=nowhere)
    assert answer["meta"]["scope"] == {"project": None, "project_name": None, "global": True}
    assert answer["meta"]["warnings"] == [
        f'cwd "{nowhere}" matches no known project (check it with memory_manage action=resolve) — '
        "the answer spans every project"
    ]
    assert answer["meta"]["counts"]["total"] == 1


def test_an_empty_cwd_is_the_same_as_none(wire: Wire) -> None:
    """ "omitting it — or passing an empty string — is never an error"."""
    answer = wire.recall(action="list", cwd="")
    assert answer["meta"]["scope"] is None and answer["meta"]["warnings"] == [NO_CWD]


def test_compact_is_the_default_and_fields_win(wire: Wire) -> None:
    """Compact output: "compact: true — trims each thought to { id, content, status, tags, project }";
    "Explicit fields take precedence over compact"; memory_recall defaults to compact."""
    note_id = wire.create("compact probe", tags=["a", "b"], is_protected=True)
    item = wire.recall(action="get", thought_id=note_id)["item"]
    assert set(item) == {"id", "content", "status", "tags", "project"} and item["tags"] == ["a", "b"]
    full = wire.recall(action="get", thought_id=note_id, compact=False)["item"]
    assert full["is_protected"] is True and full["is_cluster"] is False and full["is_global"] is False
    assert {"title", "kind", "importance", "created_at", "updated_at"} <= set(full)
    assert wire.recall(action="get", thought_id=note_id, fields=["id", "content"], compact=True)["item"] == {
        "id": note_id,
        "content": "compact probe",
    }
    assert wire.recall(action="get", thought_id=note_id, fields=["id", "nonsense"])["item"] == {"id": note_id}


def test_url_links_are_absent_unless_asked_and_empty_is_a_list(wire: Wire, probe: str) -> None:
    """Opt-in url links: the get example; "Omitted or false: the key is absent ... true with no
    links: the key is []"; "include_url_links: true with fields: ["id"] answers { id, url_links }"."""
    url = "https://forgejo.home.lan/authelia/artifacts/src/branch/main/synaptomind/adr/2026-10-26-shrink-http-api-to-ops-endpoints.md"
    note_id = wire.create(
        "Read the ADR before the rewrite", cwd=probe, url_links=[{"text": "adr", "url": url}]
    )
    bare = wire.create("no links here")
    answer = wire.recall(action="get", thought_id=note_id, include_url_links=True)
    example = {
        "item": {
            "id": "01a172b4-d486-700c-a16e-5ae3d2d77a90",
            "content": "Read the ADR before the rewrite",
            "status": "active",
            "tags": [],
            "project": "Doc Probe",
            "url_links": [{"text": "adr", "url": url, "label": "adr"}],
        },
        "meta": {"action": "get", "scope": None, "counts": {"total": 1, "returned": 1, "filtered_out": 0}, "degraded": False, "warnings": []},
    }  # fmt: skip
    assert normalised(answer) == normalised(example)
    assert "url_links" not in wire.recall(action="get", thought_id=note_id)["item"]
    assert wire.recall(action="get", thought_id=bare, include_url_links=True)["item"]["url_links"] == []
    assert wire.recall(action="get", thought_id=note_id, fields=["id"], include_url_links=True)["item"] == {
        "id": note_id,
        "url_links": [{"text": "adr", "url": url, "label": "adr"}],
    }
    # get attaches them to the neighbours too ("Every thought in the response").
    wire.store(action="link", source_id=bare, target_id=note_id, edge_type="references")
    got = wire.recall(action="get", thought_id=bare, include_edges=True, include_url_links=True)["item"]
    assert got["upstream"][0]["thought"]["url_links"][0]["url"] == url


# -- the wire envelope ----------------------------------------------------------------------------------


def test_a_classified_failure_mirrors_message_status_and_retryable(wire: Wire) -> None:
    """Wire envelope: isError with structuredContent.result.error {message, statusCode, retryable};
    "A missing id fails with a 404 error envelope"."""
    message, error = wire.error(
        "memory_recall", action="get", thought_id="01a172b4-d486-700c-a16e-5ae3d2d77a90"
    )
    assert error == {"message": message, "statusCode": 404, "retryable": False}


def test_an_unclassified_failure_keeps_the_plain_shape(wire: Wire, vault: Path) -> None:
    """ "A plain Error ... keeps the plain { content, isError } shape with no structuredContent key".
    A bad argument is classified (400, see tests/test_tool_contract.py); a broken filing contract is
    the vault's problem, not the caller's, and has no status code."""
    write_vault_contract(vault, lambda text: text.replace("version: 2", "version: two"))
    message, error = wire.error("memory_store", action="create", content="x")
    assert error is None and "filing.yaml" in message


def test_retired_inputs_are_refused_with_the_migration_message(wire: Wire) -> None:
    """Dry-run / confirm: "When a call containing a retired input reaches the server, invocation
    validation returns a migration error"; "Retired names are not accepted aliases"."""
    cases = [
        ("memory_recall", {"action": "search", "query": "x", "top_k": 5}, "top_k was removed; use limit"),
        ("memory_recall", {"action": "search", "query": "x", "cluster": True}, "cluster was removed; use is_cluster"),
        ("memory_recall", {"action": "search", "query": "x", "mode": "hybrid"}, "mode was removed; use hybrid"),
        ("memory_recall", {"action": "list", "project_id": "p"}, "project_id was removed; use cwd"),
        ("memory_store", {"action": "create", "content": "x", "is_profile": True}, "is_profile was removed and has no replacement"),
        ("memory_store", {"action": "link", "thought_id": "a", "target_id": "b"}, "use source_id"),
    ]  # fmt: skip
    for tool, args, expected in cases:
        message, error = wire.error(tool, **args)
        assert expected in message and error is not None and error["statusCode"] == 400, (args, message)


# -- memory_recall search -------------------------------------------------------------------------------


def test_a_compact_hit_is_only_the_thought(wire: Wire, probe: str) -> None:
    """search: "A compact hit is { "thought": { ... } }"."""
    wire.create(MARKER, cwd=probe)
    answer = wire.recall(action="search", query="MCP_DOC_MARKER envelope", cwd=probe)
    example = {"thought": {"id": "01a172b6-5dfc-73e5-b28e-91236675b273", "content": MARKER, "status": "active", "tags": [], "project": "Doc Probe"}}  # fmt: skip
    assert normalised(answer["items"][0]) == normalised(example)
    assert answer["meta"]["counts"] == {"total": 1, "returned": 1, "filtered_out": 0}


def test_compact_false_adds_scores_match_source_standing_and_low_confidence(wire: Wire) -> None:
    """search: scores and match_source "compact: false only"; standing and low_confidence
    "compact: false always"."""
    wire.create("the cache keeps entries for five minutes")
    item = wire.recall(action="search", query="cache entries", compact=False)["items"][0]
    assert item["standing"] == "current" and item["low_confidence"] is False
    assert "bm25" in item["match_source"] and {"final_score", "bm25_score"} <= set(item["scores"])
    assert {"title", "kind", "importance"} <= set(item["thought"])


def test_standing_annotations_survive_compact_and_suppress_drops_them(wire: Wire) -> None:
    """search: "The safety annotations are never hidden by the default compact output"; standing,
    superseded_by, contradicted_by; supersession_mode suppress; total counts survivors of standing."""
    old = wire.create("retention window is thirty days")
    new = wire.create("retention window is ninety days")
    rival = wire.create("retention window is seven days")
    wire.store(action="link", source_id=new, target_id=old, edge_type="replaces")
    wire.store(action="link", source_id=rival, target_id=new, edge_type="contradicts")
    answer = wire.recall(action="search", query="retention window", limit=10)
    by_id = {i["thought"]["id"]: i for i in answer["items"]}
    assert by_id[old]["standing"] == "superseded" and by_id[old]["superseded_by"] == [new]
    assert by_id[new]["standing"] == "contradicted" and by_id[new]["contradicted_by"] == [rival]
    assert by_id[rival]["standing"] == "contradicted" and by_id[rival]["contradicted_by"] == [new]
    suppressed = wire.recall(action="search", query="retention window", supersession_mode="suppress")
    assert old not in {i["thought"]["id"] for i in suppressed["items"]}
    assert suppressed["meta"]["counts"]["total"] == 2
    # An id is never suppressed: suppress degrades to flag.
    by_id_hit = wire.recall(action="search", query=old, supersession_mode="suppress")["items"]
    assert [i["thought"]["id"] for i in by_id_hit] == [old] and by_id_hit[0]["standing"] == "superseded"


def test_the_gate_drops_weak_cosine_only_hits_as_filtered_out_without_a_reason(wire: Wire) -> None:
    """Calibrated relevance: "A result set emptied by the relevance gate keeps no reason: it shows
    up as counts.filtered_out > 0"; "min_relevance: 0 turns the gate off"."""
    wire.create("apples and pears in the orchard")
    gated = wire.recall(action="search", query="quantum")
    assert gated["items"] == [] and "reason" not in gated["meta"]
    assert gated["meta"]["counts"]["filtered_out"] == gated["meta"]["counts"]["total"] > 0
    open_gate = wire.recall(action="search", query="quantum", min_relevance=0, compact=False)
    assert len(open_gate["items"]) == 1 and open_gate["meta"]["counts"]["filtered_out"] == 0
    assert open_gate["items"][0]["low_confidence"] is True and open_gate["items"][0]["match_source"] == [
        "embedding"
    ]


def test_nothing_matching_is_no_match(wire: Wire, probe: str) -> None:
    """reason: "no_match — The action considered nothing"."""
    answer = wire.recall(action="search", query="anything", cwd=probe)
    assert answer["items"] == [] and answer["meta"]["reason"] == "no_match"


def test_the_gate_runs_before_the_limit_so_gated_rows_are_backfilled(wire: Wire) -> None:
    """ "The gate runs after standing annotation and before the limit slice; the candidate pool is
    over-fetched so gated rows are backfilled"."""
    for i in range(6):
        wire.create(f"invoice number {i} was paid")
    answer = wire.recall(action="search", query="invoice paid", limit=5)
    assert answer["meta"]["counts"]["returned"] == 5 and answer["meta"]["counts"]["total"] == 6


def test_filters_tag_status_importance_and_cluster_shape(wire: Wire) -> None:
    """search arguments: status (default active), tag, is_cluster, min_importance."""
    tagged = wire.create("tagged deployment note", tags=["ops"])
    draft = wire.create("draft deployment note", status="draft")
    cluster = wire.create("deployment cluster", is_cluster=True)
    ids = lambda **kw: {
        i["thought"]["id"] for i in wire.recall(action="search", query="deployment", **kw)["items"]
    }
    assert ids() == {tagged, cluster}
    assert ids(tag="ops") == {tagged}
    assert ids(status="draft") == {draft}
    assert ids(status="all") == {tagged, draft, cluster}
    assert ids(is_cluster=True) == {cluster} and ids(is_cluster=False) == {tagged}
    assert ids(min_importance=0.9) == set()
    assert wire.recall(action="get", thought_id=draft)["item"]["status"] == "draft"


def test_hybrid_false_is_the_vector_leg_only(wire: Wire) -> None:
    """search: "hybrid (boolean, default true ...; false = vector leg only)"."""
    wire.create("vector only probe text")
    item = wire.recall(action="search", query="vector probe", hybrid=False, compact=False)["items"][0]
    assert item["match_source"] == ["embedding"] and "bm25_score" not in item["scores"]


def test_recency_weighting_reports_a_recency_score(wire: Wire) -> None:
    """search: recency_weight, recency_half_life_days; scores carry recency_score when it applies."""
    wire.create("recency probe")
    item = wire.recall(action="search", query="recency probe", recency_weight=0.5, compact=False)["items"][0]
    assert item["scores"]["recency_score"] > 0.9


# -- id lookup ------------------------------------------------------------------------------------------


def _hand_note(vault: Path, note_id: str, content: str, project: str = "Doc Probe", extra: str = "") -> None:
    slug = note_id[-4:]
    hand_write(
        vault,
        f"memory/semantic/id-{slug}.md",
        f"---\nid: {note_id}\ntitle: {content}\nstatus: active\nproject: {project}\ntags: []\n"
        f"created: '2026-10-25T10:56:55Z'\n{extra}---\n{content}\n",
    )


def test_a_prefix_addressing_several_thoughts_answers_them_all_as_ambiguous(
    vault: Path, tmp_path: Path, probe: str
) -> None:
    """Id lookup: the ambiguous_id example (items in id order, reason ambiguous_id, scope of cwd)."""
    _hand_note(vault, "cafebabe-0000-7000-8000-000000000001", "first ambiguous id thought")
    _hand_note(vault, "cafebabe-0000-7000-8000-000000000002", "second ambiguous id thought")
    with running_daemon(vault, tmp_path / "token") as daemon:
        wire = Wire(daemon)
        answer = wire.recall(action="search", query="cafebabe-0000-7", cwd=probe)
        assert wire.recall(action="search", query="CAFEBABE00007", cwd=probe) == answer
        limited = wire.recall(action="search", query="cafebabe00007", cwd=probe, limit=1)
    example = {
        "items": [
            {"thought": {"id": "cafebabe-0000-7000-8000-000000000001", "content": "first ambiguous id thought", "status": "active", "tags": [], "project": "Doc Probe"}},
            {"thought": {"id": "cafebabe-0000-7000-8000-000000000002", "content": "second ambiguous id thought", "status": "active", "tags": [], "project": "Doc Probe"}},
        ],
        "meta": {
            "action": "search",
            "scope": {"project": "01a172b6-5dfa-754c-b67e-a0a2f5915d96", "project_name": "Doc Probe", "global": False},
            "counts": {"total": 2, "returned": 2, "filtered_out": 0},
            "degraded": False,
            "warnings": [],
            "reason": "ambiguous_id",
        },
    }  # fmt: skip
    assert normalised(answer) == normalised(example)
    assert [i["thought"]["content"] for i in answer["items"]] == [
        "first ambiguous id thought",
        "second ambiguous id thought",
    ]
    assert len(limited["items"]) == 1 and limited["meta"]["reason"] == "ambiguous_id"


def test_an_id_nobody_carries_falls_back_and_reports_id_not_found(wire: Wire, probe: str) -> None:
    """Id lookup: the id_not_found example (the fallback search emptied out)."""
    answer = wire.recall(action="search", query="cafebabe-0000-7000-8000-0000000000ff", cwd=probe)
    example = {
        "items": [],
        "meta": {
            "action": "search",
            "scope": {"project": "01a172b6-5dfa-754c-b67e-a0a2f5915d96", "project_name": "Doc Probe", "global": False},
            "counts": {"total": 0, "returned": 0, "filtered_out": 0},
            "degraded": False,
            "warnings": ['id_not_found: "cafebabe-0000-7000-8000-0000000000ff" is id-shaped but no thought carries it — the answer is a normal search for that text'],
            "reason": "id_not_found",
        },
    }  # fmt: skip
    assert normalised(answer) == normalised(example)


def test_an_id_miss_whose_fallback_finds_rows_is_a_normal_search_with_the_warning(wire: Wire) -> None:
    """ "When the same fallback does return rows ... no reason, the id_not_found warning still in
    meta.warnings"."""
    wire.create("deadbeefcafe0 is the build tag")
    answer = wire.recall(action="search", query="deadbeefcafe0")
    assert answer["items"] and "reason" not in answer["meta"]
    assert any(w.startswith("id_not_found:") for w in answer["meta"]["warnings"])


def test_a_full_id_ignores_status_and_project_but_not_the_cluster_shape(
    wire: Wire, probe: str, tmp_path: Path
) -> None:
    """Id lookup: "A full UUID ... ignores status, cwd (project), tag and min_importance"; "is_cluster
    ... applies to both forms"; hits carry match_source ["id"] and no relevance."""
    note_id = wire.create("a draft elsewhere", status="draft")
    answer = wire.recall(action="search", query=note_id.upper(), cwd=probe, tag="none", compact=False)
    [item] = answer["items"]
    assert item["thought"]["id"] == note_id and item["match_source"] == ["id"]
    assert "relevance" not in item["scores"] and item["low_confidence"] is False
    assert wire.recall(action="search", query=note_id, is_cluster=True)["items"] == []


def test_a_prefix_honours_the_status_and_project_scope(wire: Wire, probe: str) -> None:
    """Id lookup: a prefix "honours the call's status and cwd (project) scope"."""
    note_id = wire.create("an unscoped thought")
    prefix = note_id.replace("-", "")[:20]
    assert wire.recall(action="search", query=prefix)["items"][0]["thought"]["id"] == note_id
    scoped = wire.recall(action="search", query=prefix, cwd=probe)
    assert note_id not in {i["thought"]["id"] for i in scoped["items"]}
    assert any(w.startswith("id_not_found:") for w in scoped["meta"]["warnings"])


# -- get, context, chain, clusters --------------------------------------------------------------------------


def test_get_with_edges_lists_upstream_and_downstream_whatever_the_shaping(wire: Wire) -> None:
    """get: "include_edges: true to return incident edges inline (upstream/downstream, each with the
    edge and its thought) ... compact/fields ... never remove the edge lists"."""
    a, b, c = (wire.create(t) for t in ("alpha", "beta", "gamma"))
    wire.store(action="link", source_id=a, target_id=b, edge_type="supports")
    wire.store(action="link", source_id=c, target_id=a, edge_type="depends_on")
    item = wire.recall(action="get", thought_id=a, include_edges=True, fields=["id"])["item"]
    assert item["id"] == a
    assert [(u["edge"]["type"], u["thought"]) for u in item["upstream"]] == [("supports", {"id": b})]
    assert [(d["edge"]["type"], d["thought"]) for d in item["downstream"]] == [("depends_on", {"id": c})]


def test_context_by_query_and_by_id_and_no_match(wire: Wire, probe: str) -> None:
    """context: "{ item: { thought, chain }, meta }"; "accepts a text query ... or a thought_id";
    no best match answers item null with reason no_match; the query path is not gated."""
    hub = wire.create("the hub thought about kafka topics")
    leaf = wire.create("a leaf")
    wire.store(action="link", source_id=leaf, target_id=hub, edge_type="develops")
    by_query = wire.recall(action="context", query="kafka")
    assert by_query["item"]["thought"]["id"] == hub
    assert [d["thought"]["id"] for d in by_query["item"]["chain"]["downstream"]] == [leaf]
    weak = wire.recall(action="context", query="quantum")  # a cosine-only best match, kept
    assert weak["item"] is not None
    by_id = wire.recall(action="context", thought_id=leaf)
    assert [u["thought"]["id"] for u in by_id["item"]["chain"]["upstream"]] == [hub]
    none = wire.recall(action="context", query="anything", cwd=probe)
    assert none["item"] is None and none["meta"]["reason"] == "no_match"


def test_chain_walks_parent_and_develops_up_to_max_degree(wire: Wire) -> None:
    """chain: "{ item: { thought, upstream, downstream }, meta }; max_degree bounds ... traversal"."""
    root = wire.create("root idea")
    child = wire.create("child idea", parent_id=root)
    grandchild = wire.create("grandchild idea")
    wire.store(action="link", source_id=grandchild, target_id=child, edge_type="develops")
    side = wire.create("side note")
    wire.store(action="link", source_id=side, target_id=grandchild, edge_type="supports")
    full = wire.recall(action="chain", thought_id=grandchild)["item"]
    assert [(u["thought"]["id"], u["degree"]) for u in full["upstream"]] == [(child, 1), (root, 2)]
    assert full["downstream"] == []  # supports is not a chain edge
    short = wire.recall(action="chain", thought_id=grandchild, max_degree=1)["item"]
    assert [u["thought"]["id"] for u in short["upstream"]] == [child]
    down = wire.recall(action="chain", thought_id=root)["item"]
    assert [d["thought"]["id"] for d in down["downstream"]] == [child, grandchild]


def test_clusters_search_only_clusters_and_refuse_is_cluster_false(wire: Wire) -> None:
    """clusters: "a cluster-only search ... an explicit is_cluster: false is rejected"; a full UUID of
    a non-cluster answers nothing."""
    cluster = wire.create("payments cluster", is_cluster=True)
    plain = wire.create("payments plain")
    answer = wire.recall(action="clusters", query="payments")
    assert [i["thought"]["id"] for i in answer["items"]] == [cluster]
    assert answer["meta"]["action"] == "clusters" and answer["meta"]["warnings"] == [NO_CWD]
    by_plain_id = wire.recall(action="clusters", query=plain)
    assert plain not in {i["thought"]["id"] for i in by_plain_id["items"]}  # the fallback search ran
    assert any(w.startswith("id_not_found:") for w in by_plain_id["meta"]["warnings"])
    message, error = wire.error("memory_recall", action="clusters", query="payments", is_cluster=False)
    assert error is not None and error["statusCode"] == 400 and "is_cluster" in message


def test_group_by_cluster_folds_members_under_their_cluster(wire: Wire) -> None:
    """search: group_by_cluster (a cluster answer carries its members)."""
    cluster = wire.create("billing cluster", is_cluster=True)
    member = wire.create("billing member")
    wire.store(action="link", source_id=cluster, target_id=member, edge_type="cluster")
    items = wire.recall(action="search", query="billing member", group_by_cluster=True)["items"]
    grouped = next(i for i in items if "members" in i)
    assert grouped["thought"]["id"] == cluster and grouped["members"][0]["thought"]["id"] == member


# -- memory_store create / update -------------------------------------------------------------------------


def test_create_files_the_thought_in_its_project_and_commits_it(
    wire: Wire, probe: str, vault: Path, daemon: Daemon
) -> None:
    """create: "{ item: <shaped thought>, meta }"; a write lands in the project cwd resolves to."""
    answer = wire.store(action="create", content="a stored thought", cwd=probe, tags=["x"], is_global=True)
    item = answer["item"]
    assert item["project"] == "Doc Probe" and item["is_global"] is True and item["tags"] == ["x"]
    assert answer["meta"]["scope"]["project_name"] == "Doc Probe" and answer["meta"]["warnings"] == []
    meta_ = frontmatter(vault, item["path"])
    assert meta_["is_global"] is True and meta_["project"] == "Doc Probe" and "is_protected" not in meta_
    daemon.stop()
    assert item["id"] in git(vault, "log", "-1", "--format=%B")


def test_update_changes_fields_and_refuses_archiving(wire: Wire, vault: Path) -> None:
    """update: "status: archived is rejected with an error envelope naming memory_supersede
    action=archive ... while draft/active transitions are unchanged"; tags_mode; 404 on a missing id."""
    note_id = wire.create("to be updated", tags=["a"])
    item = wire.store(action="update", thought_id=note_id, status="draft", tags=["b"], tags_mode="add",
                      surface_after="2026-12-01T00:00:00Z")["item"]  # fmt: skip
    assert (
        item["status"] == "draft"
        and item["tags"] == ["a", "b"]
        and item["surface_after"] == "2026-12-01T00:00:00Z"
    )
    assert frontmatter(vault, item["path"])["status"] == "unfiled"
    item = wire.store(
        action="update", thought_id=note_id, content="new words", tags=["a"], tags_mode="remove"
    )["item"]
    assert item["content"] == "new words" and item["tags"] == ["b"]
    message, error = wire.error("memory_store", action="update", thought_id=note_id, status="archived")
    assert "memory_supersede action=archive" in message and error is not None and error["statusCode"] == 400
    _m, missing = wire.error(
        "memory_store", action="update", thought_id="01a172b4-d486-700c-a16e-5ae3d2d77a90"
    )
    assert missing is not None and missing["statusCode"] == 404


# -- link ---------------------------------------------------------------------------------------------------


def test_link_answers_the_edge_and_writes_a_wikilink(wire: Wire, vault: Path) -> None:
    """link: the example ({ item: { id, source_id, target_id, type, created_at }, meta })."""
    a = wire.create("source thought")
    b = wire.create("target thought")
    answer = wire.store(action="link", source_id=a, target_id=b, edge_type="supports")
    example = {
        "item": {"id": "01a172b4-d4a4-77c6-8a1e-a4d19920ef2b", "source_id": a, "target_id": b, "type": "supports", "created_at": "2026-10-25T10:56:55.972Z"},
        "meta": {"action": "link", "scope": None, "counts": {"total": 1, "returned": 1, "filtered_out": 0}, "degraded": False, "warnings": []},
    }  # fmt: skip
    assert normalised(answer) == normalised(example)
    source = wire.recall(action="get", thought_id=a, compact=False)["item"]
    target = wire.recall(action="get", thought_id=b, compact=False)["item"]
    assert frontmatter(vault, source["path"])["supports"] == [f"[[{target['slug']}]]"]


def test_every_edge_type_links_and_an_unknown_type_is_refused(wire: Wire) -> None:
    """link: edge_type "One of related, parent, develops, replaces, cluster, references, depends_on,
    contradicts, supports; default related"."""
    cluster = wire.create("a cluster for the types", is_cluster=True)
    for edge_type in (
        "related",
        "parent",
        "develops",
        "replaces",
        "cluster",
        "references",
        "depends_on",
        "contradicts",
        "supports",
    ):
        target = wire.create(f"target of {edge_type}")
        edge = wire.store(action="link", source_id=cluster, target_id=target, edge_type=edge_type)["item"]
        assert edge["type"] == edge_type
    default = wire.store(action="link", source_id=cluster, target_id=wire.create("default target"))["item"]
    assert default["type"] == "related"
    message, _ = wire.error(
        "memory_store", action="link", source_id=cluster, target_id=cluster, edge_type="likes"
    )
    assert message  # refused by the schema before the tool runs


def test_one_edge_per_pair(wire: Wire) -> None:
    """link: "re-linking the same pair with the same type is idempotent for the symmetric types ...
    while a directed duplicate or a second, different type on the pair is reported as an error —
    except that a related placeholder edge is upgraded in place"."""
    a, b = wire.create("pair a"), wire.create("pair b")
    first = wire.store(action="link", source_id=a, target_id=b, edge_type="contradicts")["item"]
    assert wire.store(action="link", source_id=b, target_id=a, edge_type="contradicts")["item"] == first
    _m, error = wire.error("memory_store", action="link", source_id=a, target_id=b, edge_type="supports")
    assert error is not None and error["statusCode"] == 409
    c, d = wire.create("pair c"), wire.create("pair d")
    wire.store(action="link", source_id=c, target_id=d, edge_type="supports")
    message, error = wire.error("memory_store", action="link", source_id=c, target_id=d, edge_type="supports")
    assert error is not None and error["statusCode"] == 409 and "already exists" in message


def test_a_related_placeholder_is_upgraded_in_place(wire: Wire, vault: Path) -> None:
    """link: "a related placeholder edge is upgraded in place to the specific type you ask for"."""
    a, b = wire.create("placeholder a"), wire.create("placeholder b")
    placeholder = wire.store(action="link", source_id=b, target_id=a)["item"]
    upgraded = wire.store(action="link", source_id=a, target_id=b, edge_type="supports")["item"]
    assert upgraded["type"] == "supports" and upgraded["created_at"] == placeholder["created_at"]
    edges = wire.recall(action="get", thought_id=a, include_edges=True)["item"]
    assert [u["edge"]["type"] for u in edges["upstream"]] == ["supports"] and edges["downstream"] == []
    b_path = wire.recall(action="get", thought_id=b, compact=False)["item"]["path"]
    assert "related" not in frontmatter(vault, b_path)


def test_no_self_loops_and_only_a_cluster_carries_a_cluster_edge(wire: Wire) -> None:
    """link: "Constraints: no self-loops, and only a cluster thought may carry a cluster edge"."""
    a, b = wire.create("loop a"), wire.create("loop b")
    message, error = wire.error("memory_store", action="link", source_id=a, target_id=a)
    assert message == "Edge cannot link a thought to itself (source_id and target_id are the same)"
    assert error is not None and error["statusCode"] == 400
    message, _ = wire.error("memory_store", action="link", source_id=a, target_id=b, edge_type="cluster")
    assert "only a cluster thought" in message


# -- link_batch -----------------------------------------------------------------------------------------


def test_link_batch_collects_failures_in_one_commit(wire: Wire, vault: Path, daemon: Daemon) -> None:
    """link_batch: the example (one row per link in input order; counts linked / failed); "a single
    transaction"."""
    a, b = wire.create("batch source"), wire.create("batch target")
    daemon.memory.flush()
    before = commit_count(vault)
    answer = wire.store(
        action="link_batch",
        links=[{"source": a, "target": b, "type": "supports"}, {"source": a, "target": a}],
    )
    example = {
        "items": [
            {"index": 0, "status": "linked", "source": "01a172b3-ebd5-75ba-8a66-c98fef3e3196", "target": "01a172b3-ebf3-7706-93fc-3f4af59deb28", "type": "supports"},
            {"index": 1, "status": "failed", "source": "01a172b3-ebd5-75ba-8a66-c98fef3e3196", "target": "01a172b3-ebd5-75ba-8a66-c98fef3e3196", "error": "Edge cannot link a thought to itself (source_id and target_id are the same)"},
        ],
        "meta": {"action": "link_batch", "scope": None, "counts": {"linked": 1, "failed": 1, "total": 2, "returned": 2, "filtered_out": 0}, "degraded": False, "warnings": []},
    }  # fmt: skip
    assert normalised(answer) == normalised(example)
    daemon.memory.flush()
    assert commit_count(vault) == before + 1


def test_link_batch_refuses_empty_or_overlong_before_anything_runs(wire: Wire) -> None:
    """link_batch: "An empty or over-long links array is refused with an isError envelope before
    anything runs"; a repeated symmetric edge counts as linked."""
    a, b = wire.create("x a"), wire.create("x b")
    for links in ([], [{"source": a, "target": b}] * 1001):
        _m, error = wire.error("memory_store", action="link_batch", links=links)
        assert error is not None and error["statusCode"] == 400
    assert wire.recall(action="get", thought_id=a, include_edges=True)["item"]["upstream"] == []
    twice = wire.store(action="link_batch", links=[{"source": a, "target": b}, {"source": b, "target": a}])
    assert twice["meta"]["counts"]["linked"] == 2 and twice["meta"]["counts"]["failed"] == 0


# -- unlink, unlink_batch, retype ------------------------------------------------------------------------------


def _edge(wire: Wire, edge_type: str = "supports") -> dict[str, Any]:
    a, b = wire.create(f"unlink a {edge_type}"), wire.create(f"unlink b {edge_type}")
    return dict(wire.store(action="link", source_id=a, target_id=b, edge_type=edge_type)["item"])


def test_unlink_previews_with_a_token_then_deletes(wire: Wire) -> None:
    """unlink: the preview example; execute answers {status: deleted}, again {status: not_found};
    "There is no cascade"."""
    edge = _edge(wire)
    preview = wire.store(action="unlink", edge_id=edge["id"])
    token = preview["item"]["preview_token"]
    example = {
        "item": {
            "status": "preview",
            "edge_id": "01a172b4-d4a4-77c6-8a1e-a4d19920ef2b",
            "edge": {"id": "01a172b4-d4a4-77c6-8a1e-a4d19920ef2b", "source_id": "01a172b4-d486-700c-a16e-5ae3d2d77a90", "target_id": "01a172b4-d486-700d-b4f9-02962e9d2f1c", "type": "supports", "created_at": "2026-10-25T10:56:55.972Z"},
            "consequence": "Removes the 'supports' edge between '01a172b4-d486-700c-a16e-5ae3d2d77a90' and '01a172b4-d486-700d-b4f9-02962e9d2f1c'.",
            "preview_token": "01a172b4-d4a5-7635-9f7a-4263e42f55d6",
            "instruction": "Call memory_store again with action=unlink, edge_id=01a172b4-d4a4-77c6-8a1e-a4d19920ef2b, confirm=true to proceed.",
        },
        "meta": {"action": "unlink", "scope": None, "counts": {"total": 1, "returned": 1, "filtered_out": 0}, "degraded": False, "warnings": [],
                 "preview": {"token": "01a172b4-d4a5-7635-9f7a-4263e42f55d6", "destructive": True}},
    }  # fmt: skip
    assert normalised(preview) == normalised(example) and preview["meta"]["preview"]["token"] == token
    assert wire.recall(action="get", thought_id=edge["source_id"], include_edges=True)["item"]["upstream"]
    done = wire.store(action="unlink", edge_id=edge["id"], confirm=True, preview_token=token)
    assert done["item"] == {"status": "deleted", "edge_id": edge["id"]} and "preview" not in done["meta"]
    again = wire.store(action="unlink", edge_id=edge["id"], confirm=True, preview_token=token)
    assert again["item"] == {"status": "not_found", "edge_id": edge["id"]}
    missing = wire.store(action="unlink", edge_id=edge["id"])
    assert (
        missing["item"] == {"status": "not_found", "edge_id": edge["id"]} and "preview" not in missing["meta"]
    )
    for thought in (edge["source_id"], edge["target_id"]):  # no cascade
        assert wire.recall(action="get", thought_id=thought)["item"]["status"] == "active"


def test_a_missing_stale_or_mismatched_token_is_refused_with_how_to_get_one(wire: Wire) -> None:
    """Dry-run / confirm: "confirm: true requires a valid preview_token and fails when it is missing
    or stale"; tokens are bound to the action and arguments they previewed, and single use."""
    first, second = _edge(wire), _edge(wire, "references")
    token = wire.store(action="unlink", edge_id=first["id"])["item"]["preview_token"]
    for args in ({}, {"preview_token": "01a172b4-d4a5-7635-9f7a-4263e42f55d6"}):
        message, error = wire.error(
            "memory_store", action="unlink", edge_id=first["id"], confirm=True, **args
        )
        assert "fresh preview_token" in message and error is not None and error["statusCode"] == 400
    message, _ = wire.error(
        "memory_store", action="unlink", edge_id=second["id"], confirm=True, preview_token=token
    )
    assert "different action or different arguments" in message
    message, _ = wire.error(
        "memory_store",
        action="retype",
        edge_id=first["id"],
        new_type="related",
        confirm=True,
        preview_token=token,
    )
    assert "different action" in message
    assert (
        wire.store(action="unlink", edge_id=first["id"], confirm=True, preview_token=token)["item"]["status"]
        == "deleted"
    )


def test_unlink_batch_previews_without_a_token_and_validates_every_id_first(wire: Wire) -> None:
    """unlink_batch: the preview example (token null, instruction); "every edge_id is validated to
    exist before any deletion happens, so a missing id aborts the whole batch"."""
    edge = _edge(wire)
    preview = wire.store(action="unlink_batch", edge_ids=[edge["id"]])
    example = {
        "items": [
            {"edge_id": "01a172b4-d4a4-77c6-8a1e-a4d19920ef2b", "status": "preview", "edge": {"id": "01a172b4-d4a4-77c6-8a1e-a4d19920ef2b", "source_id": "01a172b4-d486-700c-a16e-5ae3d2d77a90", "target_id": "01a172b4-d486-700d-b4f9-02962e9d2f1c", "type": "supports", "created_at": "2026-10-25T10:56:55.972Z"}, "consequence": "Removes the 'supports' edge between '01a172b4-d486-700c-a16e-5ae3d2d77a90' and '01a172b4-d486-700d-b4f9-02962e9d2f1c'."}
        ],
        "meta": {
            "action": "unlink_batch",
            "scope": None,
            "counts": {"deleted": 0, "preview": 1, "failed": 0, "total": 1, "returned": 1, "filtered_out": 0},
            "degraded": False,
            "warnings": [],
            "preview": {"token": None, "destructive": True, "instruction": "Call memory_store again with action=unlink_batch, edge_ids=[...], confirm=true to proceed."},
        },
    }  # fmt: skip
    assert normalised(preview) == normalised(example)
    other = _edge(wire, "references")
    _m, error = wire.error(
        "memory_store",
        action="unlink_batch",
        edge_ids=[other["id"], "0192f0c1-8d2e-7b3a-9c4d-00000000dead"],
        confirm=True,
    )
    assert error is not None and error["statusCode"] == 404
    assert wire.recall(action="get", thought_id=other["source_id"], include_edges=True)["item"]["upstream"]
    done = wire.store(action="unlink_batch", edge_ids=[edge["id"], other["id"]], confirm=True)
    assert [i["status"] for i in done["items"]] == ["deleted", "deleted"] and done["meta"]["counts"][
        "deleted"
    ] == 2
    for bad in ([], ["x"] * 1001):
        _m, error = wire.error("memory_store", action="unlink_batch", edge_ids=bad)
        assert error is not None and error["statusCode"] == 400


def test_retype_gives_a_new_id_and_keeps_created_at(wire: Wire, vault: Path) -> None:
    """retype: preview item and meta.preview token; execute {status: retyped, edge_id, old_edge_id,
    new_edge_id, old_type, new_type}; "The original created_at is preserved"."""
    edge = _edge(wire)
    preview = wire.store(action="retype", edge_id=edge["id"], new_type="references")
    item = preview["item"]
    assert set(item) == {"status", "edge_id", "old_edge_id", "old_type", "new_type", "source_id", "target_id", "consequence", "preview_token", "instruction"}  # fmt: skip
    assert item["status"] == "preview" and preview["meta"]["preview"] == {
        "token": item["preview_token"],
        "destructive": True,
    }
    done = wire.store(action="retype", edge_id=edge["id"], new_type="references", confirm=True,
                      preview_token=item["preview_token"])["item"]  # fmt: skip
    assert (
        done["status"] == "retyped"
        and done["old_edge_id"] == edge["id"]
        and done["edge_id"] == done["new_edge_id"] != edge["id"]
    )
    assert (done["old_type"], done["new_type"]) == ("supports", "references")
    [up] = wire.recall(action="get", thought_id=edge["source_id"], include_edges=True)["item"]["upstream"]
    assert up["edge"]["id"] == done["new_edge_id"] and up["edge"]["created_at"] == edge["created_at"]


def test_retype_errors(wire: Wire) -> None:
    """retype: "a non-existent edge (Edge not found), retyping to the current type (is already of
    type), an invalid type, or a cluster-constraint violation"."""
    edge = _edge(wire)
    message, error = wire.error(
        "memory_store", action="retype", edge_id="0192f0c1-8d2e-7b3a-9c4d-00000000dead", new_type="related"
    )
    assert "Edge not found" in message and error is not None and error["statusCode"] == 404
    message, _ = wire.error("memory_store", action="retype", edge_id=edge["id"], new_type="supports")
    assert "is already of type" in message
    message, _ = wire.error("memory_store", action="retype", edge_id=edge["id"], new_type="cluster")
    assert "only a cluster thought" in message


# -- bulk_create ------------------------------------------------------------------------------------------


def test_bulk_create_reports_a_row_per_thought_in_one_commit(
    wire: Wire, vault: Path, daemon: Daemon, probe: str
) -> None:
    """bulk_create: "{ index, status: created, thought } or { index, status: failed, error }, with
    meta.counts.created / meta.counts.failed"; one transaction; cwd optional."""
    daemon.memory.flush()
    before = commit_count(vault)
    answer = wire.store(
        action="bulk_create",
        cwd=probe,
        thoughts=[{"content": "bulk one"}, {"content": ""}, {"content": "bulk two", "tags": ["t"]}],
    )
    assert [(i["index"], i["status"]) for i in answer["items"]] == [
        (0, "created"),
        (1, "failed"),
        (2, "created"),
    ]
    assert answer["items"][1]["error"] and answer["items"][2]["thought"]["tags"] == ["t"]
    assert answer["items"][0]["thought"]["project"] == "Doc Probe"
    counts = answer["meta"]["counts"]
    assert (counts["created"], counts["failed"], counts["total"], counts["returned"]) == (2, 1, 3, 3)
    daemon.memory.flush()
    assert commit_count(vault) == before + 1
    _m, error = wire.error("memory_store", action="bulk_create", thoughts=[])
    assert error is not None and error["statusCode"] == 400
