"""A person's own properties that share a name with one of vaultmem's keys (found by a helper playing
a person whose notes have odd content, 2026-12-03).

In a vault adopted in place the person's notes are "searched, read and linked exactly as before"
(docs/architecture.md, "Adopting a person's vault"). Their properties are their vocabulary, and
several common ones are also names of vaultmem's keys: Obsidian Web Clipper's default template
writes `source: "<page url>"`, task and project notes carry `status: in-progress` or `status: Done`,
a template leaves an empty `tags:` item, a task lists its projects as links. Each of those made the
whole note malformed: out of search and the graph, health `error`, and doctor told the person to
"fix it by hand". Through the real surfaces: the CLI as a subprocess, and `vaultmem serve` with its
watcher on the files.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from _support import ServeProcess, call_tool, cli, git, persons_vault
from mcp_harness import wait_for

#: The person's notes, each with a word found nowhere else.
PERSONS_NOTES: dict[str, tuple[bytes, str]] = {
    # Obsidian Web Clipper's default template.
    "Clippings/How sourdough works.md": (
        b'---\ntitle: "How sourdough works"\nsource: "https://example.com/sourdough"\n'
        b'author:\n  - "[[Jane Baker]]"\npublished: 2024-04-30\ncreated: 2024-05-01\n'
        b'description: "A guide"\ntags:\n  - "clippings"\n---\n'
        b"A starter needs flour, water and zebracorn patience.\n",
        "zebracorn",
    ),
    "Projects/Kitchen.md": (b"---\nstatus: in-progress\n---\nRedo the giraffeplan.\n", "giraffeplan"),
    "Projects/Garden.md": (b"---\nstatus: Done\n---\nThe okapiroadmap is finished.\n", "okapiroadmap"),
    "Daily/2024-05-01.md": (b"---\ntags:\n  - \n---\nWalked the narwhaldog.\n", "narwhaldog"),
    "Tasks/Paint.md": (
        b'---\nproject:\n  - "[[Kitchen]]"\n  - "[[Garden]]"\nsource:\n  - shop\n---\nBuy quokkapaint.\n',
        "quokkapaint",
    ),
}


def searched(config: Path, vault: Path, word: str) -> list[str]:
    result = cli(config, "search", "--json", "--vault", str(vault), word)
    assert result.returncode == 0, result.stderr
    return [hit["slug"] for hit in json.loads(result.stdout)["results"]]


def test_a_persons_properties_named_like_vaultmems_keys_keep_the_note_searched(tmp_path: Path) -> None:
    config = tmp_path / "config"
    vault = persons_vault(tmp_path, {rel: data for rel, (data, _) in PERSONS_NOTES.items()})
    # The same status in vaultmem's own folder is still refused: there it is vaultmem's key.
    own = "Memory/memory/semantic/odd-status.md"
    (vault / own).parent.mkdir(parents=True, exist_ok=True)
    (vault / own).write_bytes(b"---\nid: 0b9a4d7e-4f3c-4c1e-9f00-000000000001\nstatus: in-progress\n---\nx\n")
    reindex = cli(config, "reindex", "--vault", str(vault))
    assert reindex.returncode == 0, reindex.stderr
    for rel, (data, word) in PERSONS_NOTES.items():
        assert searched(config, vault, word)[:1] == [rel.rsplit("/", 1)[1].removesuffix(".md")], rel
        assert (vault / rel).read_bytes() == data  # never rewritten
    doctor = json.loads(cli(config, "doctor", "--json", "--vault", str(vault)).stdout)
    assert list(doctor["malformed"]) == [own]
    assert "in-progress" in doctor["malformed"][own]


def test_a_status_the_person_sets_in_obsidian_keeps_the_note_searched_and_linked(tmp_path: Path) -> None:
    vault = persons_vault(
        tmp_path, {"Kitchen.md": b"Redo the giraffeplan.\n", "Home.md": b"See [[Kitchen]] hubmarker.\n"}
    )
    server = ServeProcess(vault, tmp_path / "config")
    try:

        def call(tool: str, **arguments: Any) -> dict[str, Any]:
            return asyncio.run(call_tool(server, tool, **arguments))

        def slugs(word: str) -> list[str]:
            return [hit["slug"] for hit in call("memory_search", query=word)["results"]]

        def links_of_home() -> list[str]:
            (hit,) = call("memory_search", query="hubmarker", limit=1)["results"]
            item = call("memory_recall", action="get", thought_id=hit["id"], include_edges=True)["item"]
            return [edge["thought"]["content"] for edge in item["upstream"]]

        wait_for(lambda: links_of_home() == ["Redo the giraffeplan."])
        edited = b"---\nstatus: in-progress\nsource: https://example.com/plan\n---\nRedo the giraffeplan.\n"
        (vault / "Kitchen.md").write_bytes(edited)
        wait_for(lambda: "Kitchen.md" in git(vault, "log", "-1", "--name-only", "--format="))
        assert slugs("giraffeplan")[:1] == ["Kitchen"]
        assert links_of_home() == ["Redo the giraffeplan."]
        health = call("memory_status", action="health")["item"]
        assert next(c for c in health["checks"] if c["name"] == "malformed_notes")["ok"] is True
        assert (vault / "Kitchen.md").read_bytes() == edited
    finally:
        assert server.stop() == 0


def test_a_link_in_a_persons_property_to_a_note_not_written_yet_is_obsidians_idiom(tmp_path: Path) -> None:
    """Web Clipper writes `author: "[[Jane Baker]]"`, a note most people never write: doctor listed it
    with the typed links that fail it (exit 1), and health warned, while the same link in the body
    passes. It is listed with the text's links now, and so is a typed property the person wrote
    (`supports:`, `related:`: their words in their file); one vaultmem wrote still fails
    (test_day_one_person_links.py)."""
    config = tmp_path / "config"
    vault = persons_vault(
        tmp_path,
        {
            "Clip.md": b'---\nauthor:\n  - "[[Jane Baker]]"\nup: "[[Roadmap]]"\n---\nA clipped page.\n',
            "Body.md": b"Next: [[Roadmap]]\n",
        },
    )
    doctor = cli(config, "doctor", "--json", "--vault", str(vault))
    report = json.loads(doctor.stdout)
    assert report["dangling_links"] == []
    assert sorted(map(tuple, (d.values() for d in report["dangling_text_links"]))) == [
        ("Body.md", "Roadmap"), ("Clip.md", "Jane Baker"), ("Clip.md", "Roadmap"),
    ]  # fmt: skip
    assert report["ok"] is True and doctor.returncode == 0
    (vault / "Typed.md").write_bytes(b'---\nsupports: "[[Nowhere]]"\n---\nA claim.\n')
    report = json.loads(cli(config, "doctor", "--json", "--vault", str(vault)).stdout)
    assert report["dangling_links"] == []  # (ok is false: Typed.md is not committed yet)
    assert {"path": "Typed.md", "target": "Nowhere"} in report["dangling_text_links"]


def test_a_link_in_a_persons_property_named_like_vaultmems_key_is_an_edge(tmp_path: Path) -> None:
    """`project: "[[Kitchen]]"` in a person's note: Obsidian draws the link, doctor judged it as one,
    but the graph left it out (vaultmem's `project` is a name in its own notes)."""
    vault = persons_vault(
        tmp_path,
        {
            "Kitchen.md": b"The kitchen project.\n",
            "Tiles.md": b'---\nproject: "[[Kitchen]]"\n---\nBuy wombattiles.\n',
        },
    )
    server = ServeProcess(vault, tmp_path / "config")
    try:

        def call(tool: str, **arguments: Any) -> dict[str, Any]:
            return asyncio.run(call_tool(server, tool, **arguments))

        def links_of_tiles() -> list[tuple[str, str]]:
            (hit,) = call("memory_search", query="wombattiles", limit=1)["results"]
            item = call("memory_recall", action="get", thought_id=hit["id"], include_edges=True)["item"]
            return [(e["edge"]["type"], e["thought"]["content"]) for e in item["upstream"]]

        wait_for(lambda: links_of_tiles() == [("links_to", "The kitchen project.")])
    finally:
        assert server.stop() == 0


def test_a_persons_note_whose_properties_yaml_cannot_read_or_with_a_byte_of_another_encoding_is_searched(
    tmp_path: Path,
) -> None:
    """`title: Meeting: Q3 plans` (a colon in a value: not YAML), a tab-indented list, and an old
    Windows-1252 é in a person's note each dropped the note from search; Obsidian flags such
    properties and still shows and searches the note. Now the text is searched, doctor lists the
    properties as unreadable without failing, and the files stay as they were. In vaultmem's own
    folder the same YAML is still malformed, and a binary file is still refused."""
    config = tmp_path / "config"
    notes = {
        "Meetings/Q3.md": b"---\ntitle: Meeting: Q3 plans\n---\nWe agreed on the pangolinbudget.\n",
        "Lists/Tabs.md": b"---\ntags:\n\t- work\n---\nThe tapirlist is here.\n",
        "Old/Cafe.md": b"Le caf\xe9 sert un axolotlcroissant.\n",
        "Old/Binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe",
    }
    vault = persons_vault(tmp_path, notes)
    own = "Memory/memory/semantic/broken.md"
    (vault / own).parent.mkdir(parents=True, exist_ok=True)
    (vault / own).write_bytes(b"---\ntitle: Meeting: Q3 plans\n---\nx\n")
    reindex = cli(config, "reindex", "--vault", str(vault))
    assert reindex.returncode == 0, reindex.stderr
    assert searched(config, vault, "pangolinbudget")[:1] == ["Q3"]
    assert searched(config, vault, "tapirlist")[:1] == ["Tabs"]
    assert searched(config, vault, "axolotlcroissant")[:1] == ["Cafe"]
    doctor = cli(config, "doctor", "--json", "--vault", str(vault))
    report = json.loads(doctor.stdout)
    assert sorted(report["unreadable_properties"]) == ["Lists/Tabs.md", "Meetings/Q3.md"]
    assert sorted(report["malformed"]) == sorted(["Old/Binary.md", own])
    assert "properties YAML cannot read" in cli(config, "doctor", "--vault", str(vault)).stdout
    for rel, data in notes.items():
        assert (vault / rel).read_bytes() == data  # never rewritten
