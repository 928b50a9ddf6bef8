"""A person's links as Obsidian reads them, in a vault adopted in place (found by a helper playing a
person whose vault links in every way Obsidian allows, 2026-12-03).

Through the real surfaces: the CLI as a subprocess (`vaultmem init`, `doctor`) and `vaultmem serve`
answering `memory_recall get` with its edges. Every file of the person's stays byte-identical.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from _support import ServeProcess, call_tool, cli, persons_vault
from mcp_harness import wait_for


def unchanged(vault: Path, files: dict[str, bytes]) -> bool:
    return all((vault / rel).read_bytes() == data for rel, data in files.items())


def test_a_persons_related_property_to_a_note_not_written_yet_is_listed_without_failing(
    tmp_path: Path,
) -> None:
    # `related:` and `parent:` are common property names in a person's templates (and names of
    # vaultmem's typed links): a link to a note not written yet is Obsidian's idiom there too.
    files = {
        "Projects/Kitchen.md": b'---\nrelated:\n  - "[[Plumbing plan]]"\nparent: "[[Home]]"\n---\nRedo it.\n',
        "Home.md": b"Home.\n",
    }
    config = tmp_path / "config"
    vault = persons_vault(tmp_path, files)
    doctor = cli(config, "doctor", "--json", "--vault", str(vault))
    assert doctor.returncode == 0, doctor.stdout
    report = json.loads(doctor.stdout)
    assert report["dangling_links"] == []
    assert report["dangling_text_links"] == [{"path": "Projects/Kitchen.md", "target": "Plumbing plan"}]
    # A typed link to nothing in vaultmem's own folder is still a failure: vaultmem wrote it.
    own = vault / "Memory/memory/semantic/claim.md"
    own.parent.mkdir(parents=True, exist_ok=True)
    own.write_bytes(b'---\nid: 0b9a4d7e-4f3c-4c1e-9f00-000000000002\nsupports: ["[[Nothing]]"]\n---\nx\n')
    failing = json.loads(cli(config, "doctor", "--json", "--vault", str(vault)).stdout)
    assert failing["ok"] is False
    assert failing["dangling_links"] == [
        {"path": "Memory/memory/semantic/claim.md", "property": "supports", "target": "Nothing"}
    ]
    assert unchanged(vault, files)


#: Markdown links as Obsidian and the tools beside it write them (each target's body names it).
MARKDOWN_LINKED: dict[str, bytes] = {
    "Books/Black Swan (book).md": b"Black swan.\n",  # Obsidian keeps ( ) and writes spaces as %20
    "Meetings/Standup (2024-05-01).md": b"Standup.\n",
    "Areas/Health/Sleep.md": b"Sleep.\n",  # linked from the vault's root: /Areas/Health/Sleep.md
    "Note.md": b"Root note.\n",  # ./Note.md from Work/ is Work/Note.md, never this one
    "Work/Note.md": b"Work note.\n",
    "People/Dr. Smith.md": b"Dentist.\n",  # a dot in the name, linked without .md
    "Tech/Node.js.md": b"Runtime.\n",
    "Alpha.md": b"Alpha.\n",
    "Bravo.md": b"Bravo.\n",
    "Library/book.epub": b"PK\x03\x04",  # files of the vault that are not notes
    "Diagrams/flow.drawio": b"<mxfile/>",
    "Work/Plan.md": (
        b"[swan](../Books/Black%20Swan%20(book).md)\n[standup](../Meetings/Standup%20(2024-05-01).md#Actions)\n"
        b"[sleep](/Areas/Health/Sleep.md#Tips) [here](./Note.md) [dentist](../People/Dr.%20Smith)\n"
        b"[node](../Tech/Node.js) [a](../Alpha.md 'the first') [b](../Bravo.md (the second))\n"
        b"[[book.epub]] ![[flow.drawio]] [data](../Library/book.epub) planmarker\n"
    ),
}


def test_every_markdown_link_obsidian_follows_is_an_edge_and_no_file_is_dangling(tmp_path: Path) -> None:
    config = tmp_path / "config"
    vault = persons_vault(tmp_path, MARKDOWN_LINKED)
    server = ServeProcess(vault, config)
    try:

        def call(tool: str, **arguments: Any) -> dict[str, Any]:
            return asyncio.run(call_tool(server, tool, **arguments))

        (hit,) = call("memory_search", query="planmarker", limit=1)["results"]

        def linked() -> list[str]:
            item = call("memory_recall", action="get", thought_id=hit["id"], include_edges=True)["item"]
            return sorted(edge["thought"]["content"].strip() for edge in item["upstream"])

        wanted = [
            "Alpha.",
            "Black swan.",
            "Bravo.",
            "Dentist.",
            "Runtime.",
            "Sleep.",
            "Standup.",
            "Work note.",
        ]
        wait_for(lambda: linked() == wanted)
    finally:
        server.stop()
    doctor = cli(config, "doctor", "--json", "--vault", str(vault))
    assert doctor.returncode == 0, doctor.stdout
    assert json.loads(doctor.stdout)["dangling_text_links"] == []  # the epub and the drawio exist
    assert unchanged(vault, MARKDOWN_LINKED)


def test_doctor_prints_the_first_fifty_of_a_kind_and_how_many_more(tmp_path: Path) -> None:
    """A person's vault links to hundreds of notes not written yet (Obsidian's idiom): doctor printed
    every one, and what needed the person (a malformed note, a secret) scrolled off the screen."""
    files = {"Ideas.md": "".join(f"- [[Someday {i:03d}]]\n" for i in range(120)).encode()}
    config = tmp_path / "config"
    vault = persons_vault(tmp_path, files)
    shown = cli(config, "doctor", "--vault", str(vault))
    assert shown.returncode == 0, shown.stdout + shown.stderr
    listed = [line for line in shown.stdout.splitlines() if line.startswith("  Ideas.md: [[Someday")]
    assert len(listed) == 50 and listed[0] == "  Ideas.md: [[Someday 000]]"
    assert "  ... 70 more (`--json` lists all)" in shown.stdout.splitlines()
    every = json.loads(cli(config, "doctor", "--json", "--vault", str(vault)).stdout)["dangling_text_links"]
    assert len(every) == 120
