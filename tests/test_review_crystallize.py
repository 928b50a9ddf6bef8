"""``memory_crystallize`` (graph, cluster, auto_cluster) end to end against one daemon shared by the module,
and the Union-Find grouping it runs on.

Each test is a sentence of the graph document (../shared/seeds/000_30b85c2247cb72d3.txt, sections The
``memory_crystallize action=graph`` exception, ``memory_crystallize``, Dry-run / confirm) or of
docs/tools.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from conftest import git
from graph_wire import Wire, add_project, flushed_commits, normalised
from mcp_harness import running_daemon

from vaultmem.index.embedder import FakeEmbedder
from vaultmem.notes.frontmatter import parse
from vaultmem.operations.clustering import UnionFind, close_pairs, group_vectors, suggest_title
from vaultmem.server.daemon import Daemon
from vaultmem.vault.init import init_vault

NO_CWD = "no cwd — the answer spans every project"

# -- the grouping -------------------------------------------------------------------------------------


def _unit(rows: list[list[float]]) -> npt.NDArray[np.float32]:
    matrix = np.asarray(rows, dtype=np.float32)
    out: npt.NDArray[np.float32] = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return out


def test_union_find_joins_chains_into_one_set() -> None:
    sets = UnionFind(5)
    sets.union(0, 1)
    sets.union(3, 1)
    assert sets.groups() == [[0, 1, 3]]


def test_pairs_qualify_only_strictly_below_the_maximum_distance() -> None:
    """ "neighbours qualify when their distance is strictly below the threshold. Lower values are tighter"."""
    vectors = _unit([[1, 0], [1, 0], [0, 1]])
    first, second, distance = close_pairs(vectors, 1.0)  # the orthogonal pair is at exactly 1.0
    assert list(zip(first.tolist(), second.tolist(), strict=True)) == [(0, 1)]
    assert distance.tolist() == pytest.approx([0.0], abs=1e-6)
    assert len(close_pairs(vectors, 1.0001)[0]) == 3


def test_groups_are_connected_components_largest_first_of_the_minimum_size() -> None:
    """Single linkage: a chain a-b-c joins even when a and c are far apart; blocks do not change it."""
    angles = [0.0, 0.3, 0.6, 2.0, 2.1, 4.0]
    vectors = _unit([[np.cos(a), np.sin(a)] for a in angles])
    distance = 1 - np.cos(0.35)
    groups = group_vectors(vectors, distance, min_size=2, block_rows=2)
    assert [g.members for g in groups] == [[0, 1, 2], [3, 4]]
    assert groups[0].max_link_distance == pytest.approx(1 - np.cos(0.3), abs=1e-3)
    assert 0 < groups[1].cohesion <= 1
    assert [g.members for g in group_vectors(vectors, distance, min_size=3)] == [[0, 1, 2]]
    assert group_vectors(vectors, distance, min_size=2, max_groups=1)[0].members == [0, 1, 2]


def test_a_suggested_title_names_the_words_members_share() -> None:
    assert (
        suggest_title(["Cache TTL policy", "TTL of the cache", "cache purge"])
        == "Cluster: cache, ttl, policy"
    )


# -- through the tool -----------------------------------------------------------------------------------


class Env:
    def __init__(self, daemon: Daemon, vault: Path, probe: str) -> None:
        self.daemon = daemon
        self.wire = Wire(daemon)
        self.vault = vault
        self.probe = probe

    def crystallize(self, **arguments: Any) -> dict[str, Any]:
        return self.wire.ok("memory_crystallize", **arguments)

    def commits(self) -> int:
        return flushed_commits(self.daemon)

    def meta_at(self, rel: str) -> dict[str, Any]:
        return parse((self.vault / rel).read_text(encoding="utf-8")).meta


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    tmp = tmp_path_factory.mktemp("crystallize")
    vault, _ = init_vault(tmp / "vault")
    probe = add_project(vault, "Doc Probe", "doc-probe", tmp / "code" / "probe")
    with running_daemon(vault, tmp / "token", embedder=FakeEmbedder(dim=2048)) as daemon:
        yield Env(daemon, vault, probe)


def test_graph_answers_nodes_in_items_and_edges_beside_them(env: Env) -> None:
    """The graph exception: "the nodes are items and the edges ride beside them in a named edges field";
    the document's example, shape for shape (full output, so every column besides the example's)."""
    marker = env.wire.create("MCP_DOC_MARKER: the envelope example thought", cwd=env.probe, tags=[])
    others = [env.wire.create(f"graph filler number {i}", cwd=env.probe) for i in range(3)]
    env.wire.store(action="link", source_id=marker, target_id=others[0], edge_type="supports")
    answer = env.crystallize(action="graph", cwd=env.probe, limit=4)
    example: dict[str, Any] = {
        "items": [
            {"id": "01a172b6-5dfc-73e5-b28e-91236675b273", "label": "MCP_DOC_MARKER: the envelope example thought", "title": "MCP_DOC_MARKER: the envelope example thought", "group": "test", "tags": [], "category": "concept", "status": "active", "is_cluster": False, "project_name": "Doc Probe"}  # noqa: E501
        ],
        "edges": [
            {"id": "01a172b6-5dfd-7207-98e9-e76a296474fd", "source": "01a172b6-5dfc-73e5-b28e-91236675b273", "target": "01a172b6-5dfc-73e6-b63a-ded850ebfd9b", "type": "supports"}  # noqa: E501
        ],
        "meta": {
            "action": "graph",
            "scope": {"project": "01a172b6-5dfa-754c-b67e-a0a2f5915d96", "project_name": "Doc Probe", "global": False},  # noqa: E501
            "counts": {"edges": 1, "total": 4, "returned": 4, "filtered_out": 0},
            "degraded": False,
            "warnings": [],
        },
    }  # fmt: skip
    assert list(answer) == ["items", "edges", "meta"]
    assert normalised(answer["meta"]) == normalised(example["meta"])
    assert normalised(answer["edges"]) == normalised(example["edges"])
    node = answer["items"][0]
    assert set(example["items"][0]) <= set(node)
    assert node["label"] == node["title"] and node["category"] == "reference" and node["group"] is None
    assert answer["edges"][0]["source"] == marker and answer["edges"][0]["target"] == others[0]


def test_graph_pages_nodes_and_keeps_only_edges_inside_the_page(env: Env) -> None:
    """ "total = returned + filtered_out"; "edges holds the active edges whose two endpoints are both in
    items, and counts.edges is how many of them there are — not a total"; compact is opt-in.
    Its own linked pair, so that it holds on whichever worker runs it (the module's other tests may not)."""
    ends = [env.wire.create(f"graph page end {i}", cwd=env.probe) for i in range(2)]
    env.wire.store(action="link", source_id=ends[0], target_id=ends[1], edge_type="supports")
    page = env.crystallize(action="graph", cwd=env.probe, limit=1, offset=1, compact=True)
    counts = page["meta"]["counts"]
    assert counts["returned"] == 1 and counts["total"] == counts["returned"] + counts["filtered_out"]
    assert page["edges"] == [] and counts["edges"] == 0
    compact_node = {
        "id",
        "content",
        "status",
        "tags",
        "project",
        "label",
        "group",
        "category",
        "project_name",
    }
    assert set(page["items"][0]) == compact_node
    everywhere = env.crystallize(action="graph")
    assert everywhere["meta"]["scope"] is None and everywhere["meta"]["warnings"] == [NO_CWD]


def test_cluster_writes_a_cluster_thought_with_cluster_edges_to_its_members(env: Env) -> None:
    """cluster: "answers item: { cluster, edges, members }, where cluster and every entry of members is a
    shaped thought, edges lists the cluster edges to the members ({ source_id, target_id, type }), and
    meta.counts.members/meta.counts.edges repeat the two sizes. cwd selects the project of the new
    cluster"."""
    members = [env.wire.create(f"clusterhand member {i}") for i in range(3)]
    before = env.commits()
    answer = env.crystallize(
        action="cluster", thought_ids=members, title="Hand cluster", tags=["c"], cwd=env.probe
    )
    item = answer["item"]
    cluster = item["cluster"]
    assert (
        cluster["is_cluster"] is True
        and cluster["title"] == "Hand cluster"
        and cluster["project"] == "Doc Probe"
    )
    assert [m["id"] for m in item["members"]] == members
    assert item["edges"] == [{"source_id": cluster["id"], "target_id": m, "type": "cluster"} for m in members]
    counts = answer["meta"]["counts"]
    assert (counts["members"], counts["edges"]) == (3, 3)
    assert env.commits() == before + 1 and "memory_crystallize" in git(env.vault, "log", "-1", "--format=%s")
    meta = env.meta_at(cluster["path"])
    slugs = [env.wire.recall(action="get", thought_id=m, compact=False)["item"]["slug"] for m in members]
    assert meta["is_cluster"] is True and meta["cluster"] == [f"[[{s}]]" for s in slugs]
    found = env.wire.recall(action="clusters", query="Hand cluster", min_relevance=0)
    assert cluster["id"] in [i["thought"]["id"] for i in found["items"]]
    _message, error = env.wire.error("memory_crystallize", action="cluster", thought_ids=[])
    assert error is not None and error["statusCode"] == 400


def test_an_obsidian_reader_sees_a_cluster_and_its_links(env: Env) -> None:
    """Issue 7: "Clusters and their edges live in the vault and show in Obsidian's graph"."""
    otools = pytest.importorskip("obsidiantools.api")
    members = [
        env.wire.create(f"obsidianclusterword member {i}", title=f"Obsidian member {i}") for i in range(2)
    ]
    cluster = env.crystallize(action="cluster", thought_ids=members, title="Obsidian cluster")["item"][
        "cluster"
    ]
    reader = otools.Vault(env.vault).connect().gather()
    front = reader.front_matter_index[cluster["slug"]]
    assert front["is_cluster"] is True
    assert [v.strip("[]") for v in front["cluster"]] == ["obsidian-member-0", "obsidian-member-1"]
    for value in front["cluster"]:
        assert value.strip("[]") in reader.md_file_index


def test_auto_cluster_previews_groups_then_writes_them_with_the_token(env: Env) -> None:
    """auto_cluster: "answers { items: <groups>, meta } with meta.counts.candidates and meta.counts.clusters.
    It previews when confirm is absent or false — meta.preview carries the token, the consequence and the
    confirm instruction — and confirm: true executes"; "cwd does not apply"; one commit."""
    fam_a = [env.wire.create(f"autoword autoworda autowordb autowordc autown{i}") for i in range(3)]
    fam_b = [
        env.wire.create(f"otherfam otherfama otherfamb otherfamc otherfamn{i}", status="draft")
        for i in range(3)
    ]
    archived = env.wire.create("autoword autoworda autowordb autowordc archivedone")
    token = env.wire.ok("memory_supersede", action="archive", thought_id=archived)["item"]["preview_token"]
    env.wire.ok("memory_supersede", action="archive", thought_id=archived, confirm=True, preview_token=token)
    before = env.commits()
    preview = env.crystallize(action="auto_cluster", min_similarity=0.5)
    groups = {frozenset(m["id"] for m in g["members"]) for g in preview["items"]}
    assert frozenset(fam_a) in groups and frozenset(fam_b) in groups  # drafts are eligible, archived not
    counts = preview["meta"]["counts"]
    assert counts["clusters"] == len(preview["items"]) and counts["candidates"] >= 6
    assert {"token", "destructive", "consequence", "instruction"} <= set(preview["meta"]["preview"])
    assert env.commits() == before
    message, error = env.wire.error(
        "memory_crystallize", action="auto_cluster", min_similarity=0.5, confirm=True
    )
    assert "preview_token" in message and error is not None and error["statusCode"] == 400
    done = env.crystallize(
        action="auto_cluster",
        min_similarity=0.5,
        confirm=True,
        preview_token=preview["meta"]["preview"]["token"],
    )
    assert "preview" not in done["meta"] and all(row["status"] == "created" for row in done["items"])
    assert env.commits() == before + 1
    row = next(r for r in done["items"] if {m["id"] for m in r["members"]} == set(fam_a))
    made = env.wire.recall(action="get", thought_id=row["cluster_id"], include_edges=True)["item"]
    assert {e["edge"]["target_id"] for e in made["upstream"] if e["edge"]["type"] == "cluster"} == set(fam_a)
    again = env.crystallize(action="auto_cluster", min_similarity=0.5)
    remaining = {m["id"] for g in again["items"] for m in g["members"]}
    assert not remaining & set(fam_a + fam_b)  # clustered thoughts are no longer eligible


def test_min_similarity_is_a_maximum_distance_lower_is_tighter(env: Env) -> None:
    """ "Despite the name, min_similarity is a maximum cosine distance ... Lower values are tighter";
    "The retired dry_run input is rejected with a hint to use confirm"."""
    for i in range(3):
        env.wire.create(f"tightword tightworda tightwordb tightwordc tightn{i}")
    loose = env.crystallize(action="auto_cluster", min_similarity=0.5, min_cluster_size=3)
    tight = env.crystallize(action="auto_cluster", min_similarity=0.05, min_cluster_size=3)
    assert loose["meta"]["counts"]["clusters"] >= 1 and tight["meta"]["counts"]["clusters"] == 0
    assert "preview" not in tight["meta"]  # nothing to confirm
    message, _ = env.wire.error("memory_crystallize", action="auto_cluster", dry_run=True)
    assert message == "dry_run was removed; use confirm"
    message, _ = env.wire.error("memory_crystallize", action="auto_cluster", min_similarity=0)
    assert "maximum cosine distance" in message
