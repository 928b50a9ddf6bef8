"""A link keeps resolving to the note it was made for, however names change later (issue 13, item 13):
the SDK client against a real daemon over HTTP, with a person's hand edits on the real files."""

from __future__ import annotations

import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import hand_write
from graph_wire import Wire
from mcp_harness import running_daemon, stdio_env, structured, wait_for

from vaultmem.index.embedder import FakeEmbedder
from vaultmem.notes.frontmatter import parse
from vaultmem.notes.links import typed_links
from vaultmem.server.daemon import Daemon

VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))
X_PATH = "memory/semantic/caching-policy.md"
CLASH_PATH = "Projects/alpha/caching-policy.md"  # a shorter path: Obsidian's closest match for the bare name


@pytest.fixture
def daemon(vault: Path, tmp_path: Path) -> Iterator[Daemon]:
    (vault / "Projects" / "alpha").mkdir(parents=True)
    # A wide fake embedder: only thoughts sharing their words are neighbours (edge_review proposals).
    with running_daemon(vault, tmp_path / "token", embedder=FakeEmbedder(dim=2048)) as running:
        yield running


@pytest.fixture
def wire(daemon: Daemon) -> Wire:
    return Wire(daemon)


def links_of(vault: Path, rel: str, edge_type: str) -> list[str]:
    return list(parse((vault / rel).read_text(encoding="utf-8")).meta.get(edge_type) or [])


def path_of(wire: Wire, note_id: str) -> str:
    return str(wire.recall(action="get", thought_id=note_id, fields=["path"])["item"]["path"])


def upstream(wire: Wire, note_id: str) -> list[tuple[str, str]]:
    got = wire.recall(action="get", thought_id=note_id, include_edges=True)["item"]
    return [(row["edge"]["type"], row["thought"]["id"]) for row in got["upstream"]]


def graph_edges(wire: Wire) -> set[tuple[str, str, str]]:
    return {
        (e["source"], e["target"], e["type"]) for e in wire.ok("memory_crystallize", action="graph")["edges"]
    }


def memory(wire: Wire, tool: str, **arguments: Any) -> dict[str, Any]:
    return structured(wire.call(tool, **arguments))


def searched(wire: Wire, query: str) -> list[dict[str, Any]]:
    return list(memory(wire, "memory_search", query=query)["results"])


def confirmed(wire: Wire, tool: str, **arguments: Any) -> dict[str, Any]:
    preview = wire.ok(tool, **arguments)
    token = preview["meta"]["preview"]["token"]
    return wire.ok(tool, **arguments, confirm=True, preview_token=token)


def test_a_link_keeps_its_note_when_another_note_takes_its_name(
    wire: Wire, vault: Path, daemon: Daemon
) -> None:
    """Issue 13 item 13: link Y->X (written `[[x-slug]]`), then a note with X's title appears in
    another project folder. unlink and retype answered not_found, an edge_review rollback was
    skipped, the link stayed in Y's file, and recall and the graph still showed the edge."""
    words = "clashword clashworda clashwordb clashwordc"
    x = wire.create(f"{words} the policy", title="Caching policy")
    y = wire.create("Who relies on the cache", title="Cache users")
    z = wire.create(f"{words} a neighbour", title="Cache neighbour")
    assert path_of(wire, x) == X_PATH
    edge = wire.store(action="link", source_id=y, target_id=x, edge_type="supports")["item"]
    proposal = next(
        p
        for p in wire.ok("edge_review", action="enqueue", thought_id=z)["item"]["proposals"]
        if {p["source_id"], p["target_id"]} == {z, x}
    )
    holder = path_of(wire, proposal["source_id"])
    links_before = typed_links(parse((vault / holder).read_text(encoding="utf-8")).meta)
    applied = confirmed(wire, "edge_review", action="apply", proposal_id=proposal["id"])["item"]
    assert applied["status"] == "accepted"
    assert links_of(vault, "memory/semantic/cache-users.md", "supports") == ["[[caching-policy]]"]

    # vaultmem itself never takes a name another note has, in any folder...
    appended = memory(
        wire,
        "memory_append",
        content="Alpha's rules.",
        kind="reference",
        title="Caching policy",
        project="alpha",
    )
    assert appended["slug"] != "caching-policy"
    # ...but a person (or a sync client) may: a second caching-policy.md, closer to the vault root.
    hand_write(vault, CLASH_PATH, "---\ntitle: Caching policy\n---\nAlpha keeps nothing cached.\n")
    wait_for(lambda: "caching-policy" in [h["slug"] for h in searched(wire, "alpha keeps nothing cached")])

    assert upstream(wire, y) == [("supports", x)]
    assert (y, x, "supports") in graph_edges(wire)
    retype = wire.store(action="retype", edge_id=edge["id"], new_type="references")["item"]
    assert retype["status"] == "preview" and retype["target_id"] == x
    unlinked = confirmed(wire, "memory_store", action="unlink", edge_id=edge["id"])["item"]
    assert unlinked == {"status": "deleted", "edge_id": edge["id"]}
    assert links_of(vault, "memory/semantic/cache-users.md", "supports") == []
    assert upstream(wire, y) == [] and (y, x, "supports") not in graph_edges(wire)

    rolled = confirmed(wire, "edge_review", action="rollback", proposal_id=proposal["id"])
    assert [row["status"] for row in rolled["items"]] == ["reverted"]
    assert typed_links(parse((vault / holder).read_text(encoding="utf-8")).meta) == links_before
    assert (vault / CLASH_PATH).read_text(encoding="utf-8").endswith("Alpha keeps nothing cached.\n")


def test_a_link_follows_its_note_through_a_rename_outside_obsidian_and_a_restart(
    vault: Path, tmp_path: Path
) -> None:
    """Item 13: "a rename or clash never orphans an edge". The target is renamed by a file manager
    (Obsidian, which would rewrite the link, is not running); Y's `[[caching-policy]]` now names no
    file, yet the edge is still Y's, after a restart too (rebuilt from the vault alone), and unlink
    removes it from Y's file."""
    with running_daemon(vault, tmp_path / "token") as running:
        wire = Wire(running)
        x = wire.create("The cache keeps entries for an hour.", title="Caching policy")
        y = wire.create("Who relies on the cache", title="Cache users")
        edge = wire.store(action="link", source_id=y, target_id=x, edge_type="depends_on")["item"]
        (vault / X_PATH).rename(vault / "memory/semantic/cache-ttl.md")

        def moved() -> bool:  # until the watcher has seen the rename, the old path cannot be read
            got = wire.call("memory_recall", action="get", thought_id=x, fields=["path"])
            return (
                not got.is_error
                and (got.structured_content or {})["result"]["item"]["path"] == "memory/semantic/cache-ttl.md"
            )

        wait_for(moved)
        assert upstream(wire, y) == [("depends_on", x)]
    with running_daemon(vault, tmp_path / "token") as restarted:
        wire = Wire(restarted)
        assert upstream(wire, y) == [("depends_on", x)]
        assert (
            wire.recall(action="get", thought_id=x, include_edges=True)["item"]["downstream"][0]["edge"]["id"]
            == edge["id"]
        )
        assert (
            confirmed(wire, "memory_store", action="unlink", edge_id=edge["id"])["item"]["status"]
            == "deleted"
        )
    assert links_of(vault, "memory/semantic/cache-users.md", "depends_on") == []


def test_a_typed_link_names_a_note_whose_file_name_macos_wrote_decomposed(
    vault: Path, tmp_path: Path
) -> None:
    """macOS writes `Café crème.md` with the é decomposed (NFD); a link typed as `[[Café crème]]`
    is composed (NFC), and Obsidian resolves it (it indexes names composed). The link was not an
    edge, and doctor would have called it dangling. Case and form both fold, through a path too."""
    decomposed = unicodedata.normalize("NFD", "Café crème")
    assert decomposed != "Café crème"
    hand_write(vault, f"notes/{decomposed}.md", "The café's own notes: opening hours, the roaster.\n")
    hand_write(
        vault,
        "notes/Menu.md",
        "Prices follow [[Café crème]], see [[notes/CAFÉ CRÈME|the café]] and [[Crème brûlée]].\n",
    )
    hand_write(vault, f"notes/{unicodedata.normalize('NFD', 'Crème brûlée')}.md", "A dessert.\n")
    with running_daemon(vault, tmp_path / "token") as daemon:
        wire = Wire(daemon)
        listed = wire.recall(action="list", limit=50, status="all", compact=False)["items"]
        by_name = {unicodedata.normalize("NFC", t["path"]): t["id"] for t in listed}
        menu = by_name["notes/Menu.md"]
        got = wire.recall(action="get", thought_id=menu, include_edges=True, compact=False)["item"]
        linked = {unicodedata.normalize("NFC", row["thought"]["path"]) for row in got["upstream"]}
        assert linked == {"notes/Café crème.md", "notes/Crème brûlée.md"}
    doctor = subprocess.run(
        [VAULTMEM, "doctor", "--vault", str(vault)],
        capture_output=True, text=True, env=stdio_env(), timeout=120, check=False,
    )  # fmt: skip
    assert "Café" not in doctor.stdout and "Crème" not in doctor.stdout, doctor.stdout
