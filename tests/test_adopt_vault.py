"""Adopting the vault a person already has (issue 16, items 1 and 2): `vaultmem init` in place, and
the person's links and tags as the agents' graph.

The first test is the issue's must-show, through the surfaces a person uses: the CLI as a
subprocess (`init`, `reindex`, `doctor`), the daemon as a subprocess with the real model, a real
MCP client for a session of agent writes and reads, and a hand edit the watcher sees.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from conftest import git, hand_write
from graph_wire import Wire
from mcp_harness import structured, wait_for
from test_init_in_place import hashes, run
from test_server_process import serve_process

pytestmark = pytest.mark.model

#: A person's Obsidian vault: nested folders, every form of body link, aliases, frontmatter and body
#: tags, a callout, an embed, notes without frontmatter, two notes sharing a name, an image, and
#: Obsidian's own folder.
PERSONS_VAULT: dict[str, str] = {
    ".obsidian/app.json": '{"alwaysUpdateLinks": true}\n',
    ".obsidian/workspace.json": '{"main": {"id": "a1"}}\n',
    "Home.md": (
        "# Home\n\nWelcome to my garden #garden.\n\n"
        "- The project: [[Apollo#Goals]]\n"
        "- What I read: [[Reading list|my reading]]\n"
        "- Health: [the plan](Areas/Health%20Plan.md)\n"
        "- The old one: [[Old/Archive/Apollo]]\n\n"
        "![[Diagram]]\n![[sketch.png]]\n\n"
        "Not links: `[[Inline code]]` and\n\n```\n[[In a fence]] #notatag\n```\n"
    ),
    "Projects/Apollo.md": (
        "---\naliases: [Moonshot]\ntags: [project]\nstatus-of-mine: green\n---\n"
        "# Apollo\n\n## Goals\n\n> [!note] Why\n> Because of [[Reading list]].\n"
    ),
    "Old/Archive/Apollo.md": "An older Apollo, with the same name in a deeper folder.\n",
    "Reading list.md": "- Gödel, Escher, Bach\n- [[Home]]\n",
    "Areas/Health Plan.md": "---\ntags: health\n---\nWalk daily. Back to [[Home]].\n",
    "Areas/Diagram.md": "A diagram note, embedded from Home.\n",
    "Areas/sketch.png": "\x89PNG not really\n",
    "Journal/2024/2024-03-01.md": "Talked about [[Moonshot]] today; see [[Someday]] and [[Never written]].\n",
}


class _Served:
    """What :class:`graph_wire.Wire` needs of a daemon, for one started as a process."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self._token = token

    def token(self) -> str:
        return self._token


def test_a_persons_vault_adopted_in_place_keeps_every_file_and_gives_the_agents_its_links(
    tmp_path: Path,
) -> None:
    """Issue 16 must-show: init, reindex, the daemon and a session of agent writes over MCP leave
    every one of the person's files byte-identical and nothing new at the root but vaultmem's one
    folder and .gitignore entries; body links answer as edges, and an alias link resolves."""
    vault = tmp_path / "garden"
    config = tmp_path / "config"
    for rel, text in PERSONS_VAULT.items():
        hand_write(vault, rel, text)
    before = hashes(vault)
    root_before = {p.name for p in vault.iterdir()}

    made = run("init", str(vault), home=config)
    assert made.returncode == 0, made.stderr
    assert "Memory" in made.stdout
    indexed = run("reindex", "--vault", str(vault), home=config)
    assert indexed.returncode == 0, indexed.stderr

    with serve_process(vault, config) as (process, url, token):
        wire = Wire(_Served(url, token))  # type: ignore[arg-type]
        listed = wire.recall(action="list", limit=500, status="all", compact=False)
        by_path = {t["path"]: t["id"] for t in listed["items"]}
        assert set(PERSONS_VAULT) - {
            ".obsidian/app.json",
            ".obsidian/workspace.json",
            "Areas/sketch.png",
        } <= set(by_path)  # the person's notes are searchable and readable as before
        home, apollo = by_path["Home.md"], by_path["Projects/Apollo.md"]

        # Body links of every form answer as links_to edges (get include_edges).
        got = wire.recall(action="get", thought_id=home, include_edges=True, compact=False)["item"]
        upstream = {row["thought"]["path"]: row["edge"]["type"] for row in got["upstream"]}
        assert upstream == {
            "Projects/Apollo.md": "links_to",  # [[Apollo#Goals]]: the shortest of two paths
            "Reading list.md": "links_to",  # [[Reading list|my reading]]
            "Areas/Health Plan.md": "links_to",  # a Markdown link, URL-encoded
            "Old/Archive/Apollo.md": "links_to",  # [[folder/Note]]
            "Areas/Diagram.md": "links_to",  # an embed
        }
        downstream = {row["thought"]["path"] for row in got["downstream"]}
        assert downstream == {"Reading list.md", "Areas/Health Plan.md"}

        # The alias link: [[Moonshot]] is Projects/Apollo.md, which lists it under aliases:.
        daily = by_path["Journal/2024/2024-03-01.md"]
        chain = wire.recall(action="chain", thought_id=daily, compact=False)["item"]
        assert [row["thought"]["path"] for row in chain["upstream"]][:1] == ["Projects/Apollo.md"]
        context = wire.recall(action="context", thought_id=apollo, compact=False)["item"]
        assert {row["thought"]["path"] for row in context["chain"]["downstream"]} >= {
            "Home.md",
            "Journal/2024/2024-03-01.md",
        }
        # Body #tags and frontmatter tags both filter.
        tagged = wire.recall(action="list", tag="garden", status="all", compact=False)["items"]
        assert [t["path"] for t in tagged] == ["Home.md"]
        assert "garden" in next(t for t in listed["items"] if t["id"] == home)["tags"]

        # A session of agent writes: all of them land in Memory/.
        appended = structured(
            wire.call("memory_append", content="Apollo reviews happen on Thursdays.", kind="convention")
        )
        stored = wire.ok("memory_store", action="create", content="Apollo needs a launch checklist.")
        agent_note = stored["item"]["id"]
        link = wire.ok(
            "memory_store", action="link", source_id=agent_note, target_id=apollo, edge_type="references"
        )
        assert structured(wire.call("memory_capture", content="Maybe rename Apollo to Artemis?"))["success"]
        graph = wire.ok("memory_crystallize", action="graph", limit=200)
        types = {(e["source"], e["target"], e["type"]) for e in graph["edges"]}
        assert (home, apollo, "links_to") in types and (agent_note, apollo, "references") in types

        # The person's links are read-only; their notes are not the agents' to change.
        body_edge = next(
            row["edge"]["id"] for row in got["upstream"] if row["thought"]["path"] == "Reading list.md"
        )
        message, _ = wire.error("memory_store", action="unlink", edge_id=body_edge, confirm=True)
        assert "written in the note's text" in message and "Home.md" in message
        message, _ = wire.error("memory_store", action="link", source_id=apollo, target_id=appended["id"])
        assert "outside vaultmem's folder Memory/" in message
        message, _ = wire.error("memory_forget", id=home)
        assert "never changes it" in message

        # The person creates the note a link was waiting for: the edge appears.
        hand_write(vault, "Journal/Someday.md", "Someday, a rocket.\n")
        wait_for(
            lambda: (
                "Journal/Someday.md"
                in _paths(
                    wire.recall(action="get", thought_id=daily, include_edges=True, compact=False)["item"]
                )
            ),
            timeout=30,
        )
        assert link["item"]["type"] == "references" and appended["slug"]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0

    after = hashes(vault)
    assert {rel: after[rel] for rel in before} == before  # every one of the person's files, byte for byte
    new_at_root = {p.name for p in vault.iterdir()} - root_before
    assert new_at_root == {"Memory", ".gitignore", ".git"}  # .git: the vault had no repository
    new_files = sorted(set(after) - set(before))
    assert all(
        rel.startswith("Memory/") or rel in (".gitignore", "Journal/Someday.md") for rel in new_files
    ), new_files
    assert (vault / ".gitignore").read_text(encoding="utf-8").splitlines()[1:] == [
        "/Memory/.vaultmem/",
        ".vaultmem-tmp-*",
        ".obsidian/workspace.json",
        ".obsidian/workspace-mobile.json",
        "/.trash/",
        ".DS_Store",
    ]
    notes = [rel for rel in new_files if rel.endswith(".md") and not rel.startswith("Memory/.vaultmem")]
    assert any(rel.startswith("Memory/memory/procedural/") for rel in notes)  # the contract's routing
    first = git(vault, "rev-list", "--max-parents=0", "HEAD").strip()
    assert sorted(git(vault, "ls-tree", "-r", "--name-only", first).splitlines()) == sorted(
        set(PERSONS_VAULT) - {".obsidian/workspace.json"}
    )  # the person's files as the first commit (Obsidian's per-device layout aside)
    assert git(vault, "status", "--porcelain", "--untracked-files=all").strip() == ""

    doctor = run("doctor", "--vault", str(vault), "--json", home=config)
    report = json.loads(doctor.stdout)
    assert report["layout"]["kind"] == "in place" and report["layout"]["home"] == "Memory"
    assert report["layout"]["person_notes"] == len(by_path) + 1  # Journal/Someday.md came since
    assert {"path": "Journal/2024/2024-03-01.md", "target": "Never written"} in report["dangling_text_links"]
    assert "Memory/" in run("doctor", "--vault", str(vault), home=config).stdout


def _paths(item: dict[str, Any]) -> set[str]:
    return {row["thought"]["path"] for row in item["upstream"]}
