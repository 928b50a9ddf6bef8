"""The graph layer below the MCP adapter: edge rules, frontmatter edits, preview tokens, thought shaping,
links that survive a rebuild, hand-written links picked up by the watcher, and an Obsidian reader's
view of what vaultmem wrote (design.md: "Typed links")."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import commit_count, git, hand_write
from layers import parts
from mcp_harness import wait_for

from vaultmem.config import Settings
from vaultmem.errors import Conflict, InvalidInput
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.mcp.envelope import Shaping, shape
from vaultmem.memory import Memory
from vaultmem.notes.frontmatter import parse
from vaultmem.notes.links import Edge, LinkTarget, add_link, edge_id, remove_link
from vaultmem.operations.edges import decide_link
from vaultmem.operations.results import Thought, graph_status, status_filter, writable_status
from vaultmem.operations.thoughts import NewThought
from vaultmem.operations.tokens import PreviewTokens

A, B = "01a20000-0000-7000-8000-00000000000a", "01a20000-0000-7000-8000-00000000000b"


@pytest.fixture
def runtime(vault: Path) -> Iterator[Memory]:
    rt = Memory(Settings.resolve(vault, durable=False, commit_quiet_period=0.05), embedder=FakeEmbedder(),
                 background_commits=False)  # fmt: skip
    rt.reconcile()
    yield rt
    rt.close()


def thought_ids(rt: Memory, *contents: str) -> list[str]:
    return [created(rt, NewThought(c)).id for c in contents]


def created(rt: Memory, spec: NewThought) -> Thought:
    thought = rt.create_thought(spec).item
    assert isinstance(thought, Thought)
    return thought


# -- rules ---------------------------------------------------------------------------------------------


def test_a_pair_carries_one_edge() -> None:
    assert decide_link(A, B, "supports", []).action == "create"
    related = Edge.make(B, "related", A, "t")
    assert decide_link(A, B, "supports", [related]).action == "upgrade"
    contradicts = Edge.make(B, "contradicts", A, "t")
    assert decide_link(A, B, "contradicts", [contradicts]).action == "replay"
    with pytest.raises(Conflict, match="retype"):
        decide_link(A, B, "supports", [contradicts])
    with pytest.raises(Conflict, match="already exists"):
        decide_link(A, B, "supports", [Edge.make(A, "supports", B, "t")])
    with pytest.raises(Conflict, match="other direction"):
        decide_link(A, B, "supports", [Edge.make(B, "supports", A, "t")])


def test_edge_ids_derive_from_source_type_and_target() -> None:
    assert Edge.make(A, "supports", B, "t").id == edge_id(A, "supports", B)
    assert edge_id(A, "supports", B) != edge_id(A, "references", B) != edge_id(B, "supports", A)


# -- frontmatter edits ------------------------------------------------------------------------------------


NOTE = (
    '---\ntitle: Mine\n# a comment the person wrote\nmood: calm   # keep\nsupports: "[[x]]"\n---\nBody  \n\n'
)


def test_adding_and_removing_links_touches_only_the_link_keys() -> None:
    text = parse(NOTE)
    target_id = "01a172b4-d486-700d-b4f9-02962e9d2f1c"
    added = add_link(text, "supports", LinkTarget("target-note", target_id), "2026-01-01T00:00:00Z")
    rendered = added.render()
    assert "# a comment the person wrote\nmood: calm   # keep\n" in rendered and rendered.endswith(
        "---\nBody  \n\n"
    )
    reread = parse(rendered).meta
    assert reread["supports"] == ["[[x]]", "[[target-note]]"]
    assert reread["link_created"] == {"supports/target-note": "2026-01-01T00:00:00Z"}
    assert reread["link_targets"] == {"supports/target-note": target_id}
    removed, names = remove_link(added, "supports", lambda name: name in ("x", "target-note"))
    assert names == ["x", "target-note"]
    meta = parse(removed.render()).meta
    assert "supports" not in meta and "link_created" not in meta and "link_targets" not in meta
    assert meta["mood"] == "calm"
    assert removed.render().endswith("---\nBody  \n\n")


# -- preview tokens ----------------------------------------------------------------------------------------


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_tokens_are_single_use_bound_and_expire() -> None:
    ticks = Ticks()
    tokens = PreviewTokens(ttl=300, clock=ticks)
    token = tokens.issue("memory_store", "unlink", {"edge_id": "e1"})
    with pytest.raises(InvalidInput, match="different action or different arguments"):
        tokens.redeem(token, "memory_store", "unlink", {"edge_id": "e2"}, "memory_store action=unlink")
    tokens.redeem(token, "memory_store", "unlink", {"edge_id": "e1"}, "x")  # a mismatch did not spend it
    with pytest.raises(InvalidInput, match="already used"):
        tokens.redeem(token, "memory_store", "unlink", {"edge_id": "e1"}, "x")
    stale = tokens.issue("memory_store", "retype", {"edge_id": "e1", "new_type": "related"})
    ticks.now = 301
    with pytest.raises(InvalidInput, match="expired"):
        tokens.redeem(stale, "memory_store", "retype", {"edge_id": "e1", "new_type": "related"}, "x")
    with pytest.raises(InvalidInput, match="needs the preview_token"):
        tokens.redeem(None, "memory_store", "unlink", {}, "x")


# -- thoughts ----------------------------------------------------------------------------------------------


def test_shaping_compact_fields_and_url_links() -> None:
    thought = Thought(
        id=A, content="c", status="draft", tags=("t",), project=None, title="c", kind="reference",
        importance=0.5, is_cluster=False, is_protected=True, is_global=False, surface_after=None,
        created_at=None, updated_at=None, slug="c", path="memory/semantic/c.md",
        url_links=(("adr", "https://x", "adr"),),
    )  # fmt: skip
    assert shape(thought, Shaping(compact=True)) == {
        "id": A,
        "content": "c",
        "status": "draft",
        "tags": ["t"],
        "project": None,
    }
    assert shape(thought, Shaping(compact=True, fields=("id",), include_url_links=True)) == {
        "id": A,
        "url_links": [{"text": "adr", "url": "https://x", "label": "adr"}],
    }
    assert shape(thought, Shaping())["is_protected"] is True


def test_statuses_map_draft_to_unfiled_and_refuse_archiving() -> None:
    assert graph_status("unfiled") == "draft" and graph_status("active") == "active"
    assert status_filter("draft", "active") == {"unfiled"} and "deleted" not in status_filter(None, "all")
    assert writable_status("draft") == "unfiled"
    with pytest.raises(InvalidInput, match="memory_supersede action=archive"):
        writable_status("archived")


# -- links in the vault ------------------------------------------------------------------


def test_links_written_by_the_store_are_rebuilt_with_the_same_ids(vault: Path) -> None:
    """Issue 5: "Rebuilding the index from the vault reproduces every edge with the same id"."""
    settings = Settings.resolve(vault, durable=False)
    rt = Memory(settings, embedder=FakeEmbedder(), background_commits=False)
    rt.reconcile()
    a, b, c = thought_ids(rt, "alpha", "beta", "gamma")
    rt.link(a, b, "supports")
    rt.link(c, a, "related")
    rt.link_batch([{"source": b, "target": c, "type": "depends_on"}])
    before = sorted((e.id, e.created_at) for n in (a, b, c) for e in parts(rt).graph.edges_of(n))
    rt.close()
    shutil.rmtree(vault / ".vaultmem")
    rebuilt = Memory(settings, embedder=FakeEmbedder(), background_commits=False)
    rebuilt.reconcile()
    after = sorted((e.id, e.created_at) for n in (a, b, c) for e in parts(rebuilt).graph.edges_of(n))
    assert after == before and len({i for i, _ in after}) == 3
    assert parts(rebuilt).graph.find(edge_id(a, "supports", b)) is not None
    rebuilt.close()


def test_a_large_batch_of_links_is_in_the_edge_graph_when_the_call_returns(runtime: Memory) -> None:
    ids = thought_ids(runtime, *(f"thought {i}" for i in range(40)))
    links = [{"source": ids[i], "target": ids[i + 1], "type": "supports"} for i in range(39)]
    answer = runtime.link_batch(links)
    assert answer.counts["linked"] == 39
    assert all(parts(runtime).graph.outgoing(i) for i in ids[:39])  # the graph tools see them at once
    assert [e.target_id for e in parts(runtime).graph.outgoing(ids[0])] == [ids[1]]


def test_a_batch_is_one_commit_naming_every_note(runtime: Memory, vault: Path) -> None:
    ids = thought_ids(runtime, "one", "two", "three")
    before = commit_count(vault)
    runtime.link_batch([{"source": ids[0], "target": ids[1]}, {"source": ids[2], "target": ids[1]}])
    assert commit_count(vault) == before + 1
    message = git(vault, "log", "-1", "--format=%B")
    assert message.startswith("memory_store: link_batch 2 links") and ids[0] in message and ids[2] in message


def test_a_typed_link_added_by_hand_becomes_an_edge(runtime: Memory, vault: Path) -> None:
    """Issue 5: "a person adding a typed link by hand creates the edge once the watcher sees it"."""
    a, b = thought_ids(runtime, "hand source", "hand target")
    source = parts(runtime).lookup.entry(a)
    target = parts(runtime).lookup.entry(b)
    assert source is not None and target is not None
    runtime.start_watching()
    text = (vault / source.path).read_text(encoding="utf-8")
    hand_write(
        vault,
        source.path,
        text.replace("---\nhand source", f'supports: ["[[{target.slug}]]"]\n---\nhand source'),
    )
    found = wait_for(lambda: parts(runtime).graph.find(edge_id(a, "supports", b)), timeout=20)
    assert found.source_id == a and found.target_id == b
    upstream = runtime.recall_get(a, include_edges=True).item.extra["upstream"]  # type: ignore[union-attr]
    assert [row["edge"]["type"] for row in upstream] == ["supports"]


def test_retype_after_a_rebuild_still_finds_the_edge(runtime: Memory) -> None:
    a, b = thought_ids(runtime, "retype a", "retype b")
    old = runtime.link(a, b, "supports").item["id"]  # type: ignore[index]
    preview = runtime.retype(old, "references", False, None)
    done = runtime.retype(old, "references", True, preview.item["preview_token"])  # type: ignore[index]
    assert done.item["new_edge_id"] == edge_id(a, "references", b)  # type: ignore[index]
    assert parts(runtime).graph.find(old) is None


# -- Obsidian ---------------------------------------------------------------------------


def test_an_obsidian_reader_sees_the_notes_their_frontmatter_and_the_links(
    runtime: Memory, vault: Path
) -> None:
    """Issue 5: "Obsidian compatibility checked by a third-party reader of Obsidian vaults"."""
    otools = pytest.importorskip("obsidiantools.api")
    a = created(runtime, NewThought("Cache responses for five minutes", title="Cache policy", tags=["ops"]))
    b = created(runtime, NewThought("The default TTL is 300 seconds", title="TTL defaults"))
    c = created(runtime, NewThought("Purge the CDN after a deploy", title="CDN purge"))
    runtime.link(a.id, b.id, "supports")
    runtime.link(b.id, c.id, "related")
    reader = otools.Vault(vault).connect().gather()
    assert {"cache-policy", "ttl-defaults"} <= set(reader.md_file_index)
    front = reader.front_matter_index["cache-policy"]
    assert front["id"] == a.id and front["tags"] == ["ops"] and front["supports"] == ["[[ttl-defaults]]"]
    assert reader.front_matter_index["ttl-defaults"]["related"] == ["[[cdn-purge]]"]
    # Each link names a note the reader knows, the way Obsidian resolves a [[name]] link.
    for note, key in (("cache-policy", "supports"), ("ttl-defaults", "related")):
        for value in reader.front_matter_index[note][key]:
            assert value.strip("[]") in reader.md_file_index
    assert "Cache responses for five minutes" in reader.readable_text_index["cache-policy"]
