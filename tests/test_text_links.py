"""Links and tags written in a note's text (issue 16, item 2): what counts as a link, how a link
resolves (as Obsidian resolves it), and how the edge graph keeps up with the files."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FakeClock, hand_write
from layers import parts, sync_path
from mcp_harness import structured
from upkeep_wire import LocalWire, local_runtime

from vaultmem.config import Settings
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.memory import Memory
from vaultmem.notes.links import TEXT_LINK, text_refs
from vaultmem.vault.catalog import Catalog
from vaultmem.vault.layout import VaultLayout


def links(body: str, meta: dict[str, object] | None = None) -> list[str]:
    return list(text_refs(body, meta).links)


def tags(body: str) -> list[str]:
    return list(text_refs(body).tags)


# -- what is a link ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "target"),
    [
        ("[[Note]]", "Note"),
        ("[[Note|shown text]]", "Note"),
        ("[[Note#Heading]]", "Note"),
        ("[[Note#^block-id|shown]]", "Note"),
        ("[[folder/Note]]", "folder/Note"),
        ("[[Note.md]]", "Note"),
        ("![[Embedded note]]", "Embedded note"),
        ("| a | [[Note\\|shown in a table]] |", "Note"),
        ("[text](Note.md)", "Note"),
        ("[text](folder/My%20Note.md#Part)", "folder/My Note"),
        ("[text](<folder/My Note.md>)", "folder/My Note"),
        ("[text](../up/Note.md)", "../up/Note"),
        ("[text](Note)", "Note"),
        ("[text](Books/Black%20Swan%20(book).md)", "Books/Black Swan (book)"),
        ("[text](Note.md 'a title')", "Note"),
        ("[text](Note.md (a title))", "Note"),
        ("[text](/folder/Note.md)", "/folder/Note"),
        ("[text](Dr.%20Smith)", "Dr. Smith"),
        ("> [!note] A callout\n> with [[Note]] inside", "Note"),
    ],
)
def test_every_form_of_link_obsidian_draws_is_a_link(body: str, target: str) -> None:
    assert links(body) == [target]


@pytest.mark.parametrize(
    "body",
    [
        "`[[In inline code]]`",
        "`` a ` [[In a double-backtick span]] ``",
        "```\n[[In a fence]]\n```",
        "~~~~markdown\n[[In a tilde fence]]\n~~~~",
        "> ```\n> [[In a quoted fence]]\n> ```",
        "%% [[In a comment]] %%",
        "<!-- [[In an HTML comment]] -->",
        "[[#A heading of this note]]",
        "![[picture.png]] ![[scan.PDF]] [[board.canvas]]",
        "[site](https://example.com/Note.md) [mail](mailto:a@b.c) [here](#heading)",
        "[data](table.csv)",
    ],
)
def test_code_comments_attachments_and_urls_hold_no_note_link(body: str) -> None:
    assert links(body) == []


def test_text_after_an_unclosed_fence_or_backtick_is_still_read_as_text() -> None:
    assert links("A stray ` backtick, then [[Note]]") == ["Note"]
    assert links("%% an unclosed comment marker, then [[Note]]") == ["Note"]


def test_a_long_run_of_unmatched_backticks_is_read_in_one_pass() -> None:
    """Backtick runs of every length from 1 to 3000, none closed: CommonMark's rule (a run closes
    at the next run of the same length) in one pass, where a regex search per run is quadratic."""
    body = " x ".join("`" * n for n in range(1, 3001)) + " [[After them]]"
    assert links(body) == ["After them"]


def test_a_persons_property_links_count_and_vaultmems_own_keys_do_not() -> None:
    meta = {
        "up": "[[Projects]]",
        "see": ["[[A]]", "[[B|b]]"],
        "supports": ["[[Typed]]"],
        "aliases": ["[[x]]"],
    }
    assert links("body [[C]]", meta) == ["C", "Projects", "A", "B"]


# -- what is a tag ----------------------------------------------------------------------------------


def test_body_tags_follow_obsidians_rules() -> None:
    body = (
        "#start of a line, a #nested/tag, #y1984, #2024-01 and #café.\n"
        "# A heading\n##Not a heading nor a tag\n"
        "Not tags: #1984, x#y, https://example.com/page#fragment, [[Note#Heading]], `#code`\n"
        "```\n#fenced\n```\n"
    )
    assert tags(body) == ["start", "nested/tag", "y1984", "2024-01", "café"]


# -- how a link resolves ----------------------------------------------------------------------------


def catalog_of(root: Path, files: dict[str, str]) -> Catalog:
    for rel, text in files.items():
        hand_write(root, rel, text)
    catalog = Catalog(VaultLayout(root, root / ".state"))
    catalog.scan()
    return catalog


def resolved(catalog: Catalog, target: str, source: str) -> str | None:
    entry = catalog.resolve_link(target, source=source)
    return entry.path if entry is not None else None


def test_links_resolve_the_way_obsidian_resolves_them(tmp_path: Path) -> None:
    catalog = catalog_of(
        tmp_path,
        {
            "Unique.md": "u",
            "a/Shared.md": "s",
            "b/c/Shared.md": "s",
            "b/c/here.md": "h",
            "x/y/Deep.md": "d",
            "Target.md": "---\naliases: [Other name, Shared]\n---\nt",
            "q/Named.md": "---\naliases: Nickname\n---\nn",
            "Twin.md": "t",
            "b/c/Twin.md": "t",
        },
    )
    assert resolved(catalog, "Unique", "b/c/here.md") == "Unique.md"  # a unique name
    assert resolved(catalog, "unique", "b/c/here.md") == "Unique.md"  # case-insensitively
    assert resolved(catalog, "Shared", "Unique.md") == "a/Shared.md"  # the shortest path
    assert resolved(catalog, "Shared", "b/c/here.md") == "b/c/Shared.md"  # the linking note's folder first
    assert resolved(catalog, "b/c/Shared", "Unique.md") == "b/c/Shared.md"  # a vault path
    assert resolved(catalog, "y/Deep", "Unique.md") == "x/y/Deep.md"  # the end of a path
    assert resolved(catalog, "../../x/y/Deep", "b/c/here.md") == "x/y/Deep.md"  # relative (Markdown)
    assert resolved(catalog, "Other name", "Unique.md") == "Target.md"  # an alias
    assert resolved(catalog, "nickname", "Unique.md") == "q/Named.md"  # alias: a single text
    assert resolved(catalog, "Shared", "q/Named.md") == "a/Shared.md"  # a file name wins over an alias
    assert resolved(catalog, "Nowhere", "Unique.md") is None
    assert resolved(catalog, "./Twin", "b/c/here.md") == "b/c/Twin.md"  # ./: the folder first
    assert resolved(catalog, "/a/Shared", "b/c/here.md") == "a/Shared.md"  # /: from the vault's root
    assert resolved(catalog, "/y/Deep", "Unique.md") is None  # ... only


# -- the edge graph keeps up with the files ---------------------------------------------------------


def test_text_links_are_edges_that_follow_the_files_as_the_watcher_sees_them(vault: Path) -> None:
    hand_write(vault, "notes/Hub.md", "Links to [[Spoke]] and [[Later]].\n")
    hand_write(vault, "notes/Spoke.md", "---\naliases: [Wheel]\n---\nA spoke.\n")
    memory = Memory(Settings.resolve(vault, durable=False), embedder=FakeEmbedder())
    try:
        memory.reconcile()
        graph, catalog = parts(memory).graph, parts(memory).catalog

        def targets(rel: str) -> set[str]:
            entry = catalog.by_path(rel)
            assert entry is not None
            ids = {
                e.target_id for e in graph.outgoing(parts(memory).lookup.id_of(entry)) if e.type == TEXT_LINK
            }
            return {e.path for e in catalog.entries() if parts(memory).lookup.id_of(e) in ids}

        assert targets("notes/Hub.md") == {"notes/Spoke.md"}
        hand_write(vault, "notes/Later.md", "Written after the link.\n")  # Obsidian: a click on the link
        assert sync_path(memory, "notes/Later.md") == "indexed"
        assert targets("notes/Hub.md") == {"notes/Spoke.md", "notes/Later.md"}
        hand_write(vault, "notes/Hub.md", "Now [[Wheel]] only.\n")  # by its alias
        assert sync_path(memory, "notes/Hub.md") == "indexed"
        assert targets("notes/Hub.md") == {"notes/Spoke.md"}
        (vault / "notes" / "Spoke.md").unlink()  # deleted in a file manager
        assert sync_path(memory, "notes/Spoke.md") == "removed"
        assert targets("notes/Hub.md") == set()
    finally:
        memory.close()


# -- through the tools ------------------------------------------------------------------------------


def _ids(wire: LocalWire) -> dict[str, str]:
    listed = wire.recall(action="list", limit=500, status="all", compact=False)
    return {t["path"]: t["id"] for t in listed["items"]}


def test_a_link_in_a_notes_text_is_refused_by_unlink_unlink_batch_and_retype(
    vault: Path, clock: FakeClock
) -> None:
    hand_write(vault, "notes/Hub.md", "See [[Spoke]].\n")
    hand_write(vault, "notes/Spoke.md", "A spoke.\n")
    before = (vault / "notes" / "Hub.md").read_bytes()
    with local_runtime(vault, clock) as memory:
        wire = LocalWire(memory)
        ids = _ids(wire)
        got = wire.recall(action="get", thought_id=ids["notes/Hub.md"], include_edges=True)["item"]
        (row,) = got["upstream"]
        edge = row["edge"]
        assert edge["type"] == "links_to" and edge["target_id"] == ids["notes/Spoke.md"]
        for arguments in (
            {"action": "unlink", "edge_id": edge["id"]},
            {"action": "unlink", "edge_id": edge["id"], "confirm": True},
            {"action": "retype", "edge_id": edge["id"], "new_type": "supports"},
            {"action": "unlink_batch", "edge_ids": [edge["id"]], "confirm": True},
        ):
            message, error = wire.error("memory_store", **arguments)
            assert "written in the note's text" in message and "notes/Hub.md" in message, arguments
            assert error is not None and error["statusCode"] == 400
        preview = wire.store(action="unlink_batch", edge_ids=[edge["id"]])
        assert preview["items"][0]["status"] == "failed"
        assert "written in the note's text" in preview["items"][0]["error"]
        # A typed link beside it is an agent's to make: the pair rule counts typed links only.
        typed = wire.store(
            action="link",
            source_id=ids["notes/Spoke.md"],
            target_id=ids["notes/Hub.md"],
            edge_type="supports",
        )
        assert typed["item"]["type"] == "supports"
    assert (vault / "notes" / "Hub.md").read_bytes() == before


def test_a_merge_moves_typed_edges_and_leaves_the_links_of_a_notes_text_where_they_are(
    vault: Path, clock: FakeClock
) -> None:
    hand_write(vault, "notes/Reader.md", "I read [[Old idea]].\n")
    hand_write(
        vault, "memory/semantic/Old idea.md", "---\nid: 01a20000-0000-7000-8000-0000000000c1\n---\nOld.\n"
    )
    hand_write(
        vault, "memory/semantic/New idea.md", "---\nid: 01a20000-0000-7000-8000-0000000000c2\n---\nNew.\n"
    )
    reader = (vault / "notes" / "Reader.md").read_bytes()
    with local_runtime(vault, clock) as memory:
        wire = LocalWire(memory)
        wire.confirm(
            "memory_supersede",
            action="merge",
            source_id="01a20000-0000-7000-8000-0000000000c1",
            target_id="01a20000-0000-7000-8000-0000000000c2",
        )
    assert (vault / "notes" / "Reader.md").read_bytes() == reader
    assert "links_to" not in (vault / "memory" / "semantic" / "New idea.md").read_text(encoding="utf-8")


def test_body_tags_filter_searches_and_show_among_the_tags(vault: Path, clock: FakeClock) -> None:
    hand_write(vault, "notes/Sourdough.md", "---\ntags: [baking]\n---\nFeed the starter daily. #kitchen\n")
    hand_write(vault, "notes/Bagels.md", "Boil the bagels before baking them.\n")
    with local_runtime(vault, clock) as memory:
        wire = LocalWire(memory)
        found = wire.recall(action="search", query="baking starter bagels", tag="kitchen", min_relevance=0)
        assert [i["thought"]["tags"] for i in found["items"]] == [["baking", "kitchen"]]
        assert [t["tags"] for t in wire.recall(action="list", tag="kitchen")["items"]] == [
            ["baking", "kitchen"]
        ]
        searched = structured(wire.call("memory_search", query="starter"))
        assert searched["results"][0]["tags"] == ["baking", "kitchen"]


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("Walk daily. #health\n", ()),  # before body tags counted
        ("Walk daily, $n #steps$ of them. #health\n", ("steps", "health")),  # a tag read inside math
    ],
)
def test_a_reconcile_writes_again_an_index_row_whose_tags_the_note_no_longer_has(
    vault: Path, text: str, written: tuple[str, ...]
) -> None:
    """A row an earlier version wrote with other tags (none before body tags counted; the tag from
    inside math, or the ``tg`` of ``#tg🚀rocket``) is brought up to date at the next start, nothing
    re-embedded, and left alone after that."""
    hand_write(vault, "notes/Plan.md", text)
    memory = Memory(Settings.resolve(vault, durable=False), embedder=FakeEmbedder())
    try:
        memory.reconcile()
        index = parts(memory).index
        (row,) = index.records_for_paths(["notes/Plan.md"])
        index.upsert([row.but(tags=written)])  # as an earlier version wrote it
        assert index.records_for_paths(["notes/Plan.md"])[0].tags == written
        assert memory.reconcile().indexed == ["notes/Plan.md"]
        assert index.records_for_paths(["notes/Plan.md"])[0].tags == ("health",)
        assert memory.reconcile().indexed == []
    finally:
        memory.close()


def test_health_counts_the_links_to_notes_not_written_yet_without_a_warning(
    vault: Path, clock: FakeClock
) -> None:
    hand_write(vault, "notes/Plans.md", "Next: [[A note not written yet]] and [[Plans]].\n")
    with local_runtime(vault, clock) as memory:
        item = LocalWire(memory).ok("memory_status", action="health")["item"]
    assert item["dangling_text_links"] == 1
    assert next(c for c in item["checks"] if c["name"] == "dangling_links")["ok"] is True
