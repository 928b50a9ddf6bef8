"""The files Obsidian's popular plugins put in a person's vault, adopted in place (found by a helper
playing a long-time Obsidian user with Excalidraw, Kanban, Dataview, Templater and Tasks, 2026-12-04).

Through the real surfaces: the CLI as a subprocess (`vaultmem init`, `doctor`) and `vaultmem serve`
with an MCP client. Every file of the person's stays byte-identical.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import re
import string
import zlib
from pathlib import Path
from typing import Any

from _support import ServeProcess, call_tool, cli, git, persons_vault
from mcp_harness import wait_for


def unchanged(vault: Path, files: dict[str, bytes]) -> bool:
    return all((vault / rel).read_bytes() == data for rel, data in files.items())


def excalidraw_note(name: str, text_elements: str, seed: int) -> bytes:
    """A drawing as the Excalidraw plugin saves it by default: its text elements in Markdown, the
    drawing itself compressed (base64, 256 characters a line) in a fenced block inside ``%%``."""
    rng = random.Random(seed)
    elements = [
        {
            "id": "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(21)),
            "type": rng.choice(["rectangle", "ellipse", "arrow", "text"]),
            "x": rng.uniform(-900, 900),
            "y": rng.uniform(-900, 900),
            "seed": rng.randint(1, 2**31),
            "versionNonce": rng.randint(1, 2**31),
            "strokeColor": "#1e1e1e",
        }
        for _ in range(150)
    ]
    drawing = json.dumps({"type": "excalidraw", "version": 2, "elements": elements}).encode()
    packed = base64.b64encode(zlib.compress(drawing, 9)).decode()
    lines = "\n\n".join(packed[i : i + 256] for i in range(0, len(packed), 256))
    return (
        "---\nexcalidraw-plugin: parsed\ntags: [excalidraw]\n---\n"
        "==⚠  Switch to EXCALIDRAW VIEW in the MORE OPTIONS menu of this document. ⚠==\n\n\n"
        f"# Excalidraw Data\n\n## Text Elements\n{text_elements}\n\n"
        "## Embedded Files\n1f2e3d4c5b6a79880716253443526170819a0b1c: [[Pasted image 1.png]]\n\n"
        f"%%\n## Drawing\n```compressed-json\n{lines}\n```\n%%"
    ).encode()


def test_an_excalidraw_drawing_is_no_secret_but_a_key_typed_into_it_is(tmp_path: Path) -> None:
    # The drawing's compressed block is base64 of the drawing (what the Text Elements section
    # already shows in words): every 256-character line of it looked like a random key, so every
    # drawing gave doctor and health dozens to thousands of "secrets" and doctor never passed.
    drawing = excalidraw_note("Garden Layout", "Beds and paths of the [[Garden Plan]] ^a1b2c3d4", seed=1)
    files = {"Excalidraw/Garden Layout.excalidraw.md": drawing, "Garden Plan.md": b"Tomatoes by the fence.\n"}
    vault = persons_vault(tmp_path / "clean", files)
    doctor = cli(tmp_path / "clean/config", "doctor", "--json", "--vault", str(vault))
    assert json.loads(doctor.stdout)["secrets"] == []
    assert doctor.returncode == 0, doctor.stdout
    assert unchanged(vault, files)
    # A key typed into a drawing's text box is in its Text Elements, in plain text: still found.
    rng = random.Random(5)
    key = "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))
    files["Excalidraw/Deploy.excalidraw.md"] = excalidraw_note("Deploy", f"CI token {key} ^e5f6a7b8", seed=2)
    vault = persons_vault(tmp_path / "keyed", files)
    doctor = cli(tmp_path / "keyed/config", "doctor", "--json", "--vault", str(vault))
    assert [(s["path"], s["kind"]) for s in json.loads(doctor.stdout)["secrets"]] == [
        ("Excalidraw/Deploy.excalidraw.md", "github-token")
    ]
    assert unchanged(vault, files)


def pasted_log(lines: int) -> bytes:
    return b"".join(
        b"2024-03-01T12:%02d:%02d.%06dZ INFO pipeline.worker[%d] processed batch %d request_id=%016x\n"
        % (k % 60, k % 60, k, k % 17, k, k * 2654435761 % 2**64)
        for k in range(lines)
    )


def test_a_persons_note_over_the_size_cap_is_searched_and_linked_by_its_start(tmp_path: Path) -> None:
    # A pasted log, an Excalidraw drawing saved uncompressed: Obsidian opens, searches and links
    # them. vaultmem reported each as malformed ("split it or move it out of the vault"): doctor
    # failed and health said error for a valid note of the person's, its name found nothing, and
    # the links to it were listed as notes not written yet.
    log = b"# Incident\n\nzeppelinmarker: the workers stalled.\n\n" + pasted_log(30_000)
    drawing = (
        b"---\nexcalidraw-plugin: parsed\ntags: [excalidraw]\n---\n# Excalidraw Data\n\n## Text Elements\n"
        b"Whiteboard session about the blimpmarker rollout ^w1\n\n%%\n## Drawing\n```json\n"
        + json.dumps(
            {"type": "excalidraw", "elements": [{"id": f"e{k}", "x": k} for k in range(60_000)]}, indent="\t"
        ).encode()
        + b"\n```\n%%"
    )
    files = {
        "Logs/Incident.md": log,
        "Excalidraw/Whiteboard.excalidraw.md": drawing,
        "Home.md": b"[[Incident]] and ![[Whiteboard.excalidraw]] homemarker\n",
    }
    assert all(len(data) > 2 * 2**20 for rel, data in files.items() if rel != "Home.md")
    config = tmp_path / "config"
    vault = persons_vault(tmp_path, files)
    doctor = cli(config, "doctor", "--json", "--vault", str(vault))
    report = json.loads(doctor.stdout)
    assert report["malformed"] == {}
    assert report["read_in_part"] == ["Excalidraw/Whiteboard.excalidraw.md", "Logs/Incident.md"]
    assert report["dangling_text_links"] == []
    assert doctor.returncode == 0, doctor.stdout
    server = ServeProcess(vault, config)
    try:

        def call(tool: str, **arguments: Any) -> dict[str, Any]:
            return asyncio.run(call_tool(server, tool, **arguments))

        def top(query: str) -> str:
            return str(call("memory_search", query=query, limit=1)["results"][0]["slug"])

        assert top("zeppelinmarker") == "Incident"
        assert top("blimpmarker") == "Whiteboard.excalidraw"
        home = call("memory_search", query="homemarker", limit=1)["results"][0]["id"]
        item = call("memory_recall", action="get", thought_id=home, include_edges=True)["item"]
        assert sorted(edge["thought"]["content"][:12] for edge in item["upstream"]) == [
            "# Excalidraw",
            "# Incident\n\n",
        ]
        # The person appends to the log past the part read: the change is still seen and committed.
        with (vault / "Logs/Incident.md").open("ab") as f:
            f.write(b"2024-03-02T00:00:00.000000Z INFO the workers resumed\n")
        wait_for(lambda: "Incident" in git(vault, "log", "-1", "--format=%s"))
    finally:
        server.stop()
    del files["Logs/Incident.md"]
    assert unchanged(vault, files)


def test_an_image_pasted_and_a_canvas_edited_while_the_daemon_runs_are_committed_with_the_note(
    tmp_path: Path,
) -> None:
    # Obsidian saves a pasted image into attachments/ beside the note's edit; Canvas, Excalidraw's
    # SVG export and a PDF a person drops in are files too. The watcher committed only notes: those
    # files waited for vaultmem's next start (the commit of the note named an image git did not
    # have), and meanwhile doctor failed and health warned "uncommitted changes" with the advice
    # to wait for the watcher's commit, which never came.
    files = {"Board.canvas": b'{"nodes":[],"edges":[]}', "Garden.md": b"Beds.\n"}
    config = tmp_path / "config"
    vault = persons_vault(tmp_path, files)
    server = ServeProcess(vault, config)
    try:
        image = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 400
        (vault / "attachments").mkdir()
        (vault / "attachments/Pasted image 20240501.png").write_bytes(image)
        (vault / "Garden.md").write_bytes(b"Beds.\n![[Pasted image 20240501.png]]\n")
        (vault / "Board.canvas").write_bytes(
            b'{"nodes":[{"id":"a","type":"file","file":"Garden.md"}],"edges":[]}'
        )

        def committed() -> bool:
            return git(vault, "status", "--porcelain", "--untracked-files=all").strip() == ""

        wait_for(committed)
        shown = git(vault, "log", "--name-only", "--format=%s", "-2")
        assert "attachments/Pasted image 20240501.png" in shown and "Board.canvas" in shown
        for k in range(20):  # many at once (a folder of scans dropped in): read in one batch
            (vault / f"attachments/scan {k:02d}.pdf").write_bytes(b"%PDF-1.7\n" + bytes([k]) * 5000)
        wait_for(committed)
        health = asyncio.run(call_tool(server, "memory_status", action="health"))
        assert {c["name"]: c["ok"] for c in health["item"]["checks"]}["uncommitted_changes"] is True
    finally:
        server.stop()
    doctor = cli(config, "doctor", "--json", "--vault", str(vault))
    assert json.loads(doctor.stdout)["uncommitted"] == []


def test_an_excalidraw_drawings_data_is_neither_searched_nor_embedded(tmp_path: Path) -> None:
    # Saved uncompressed (a setting of the plugin's), a drawing's JSON is hundreds of windows of
    # "strokeColor", "roughness" and coordinates (~2,100 for a 2 MiB drawing, about a minute of a
    # reindex on two cores), each embedded and ranked for queries its shapes' names happened to
    # match; compressed, windows of base64. What a person reads of a drawing, its Text Elements,
    # is what is searched.
    elements = [
        {"id": f"el{k:05d}", "type": "rectangle", "x": k, "y": -k, "strokeColor": "#1e1e1e", "roughness": 1,
         "text": "kitchen cupboard"}
        for k in range(4000)
    ]  # fmt: skip
    drawing = (
        "---\nexcalidraw-plugin: parsed\ntags: [excalidraw]\n---\n# Excalidraw Data\n\n## Text Elements\n"
        "Floorplan of the quartzmarker kitchen ^t1\n\n%%\n## Drawing\n```json\n"
        + json.dumps({"type": "excalidraw", "elements": elements}, indent="\t")
        + "\n```\n%%"
    ).encode()
    files = {"Excalidraw/Floorplan.excalidraw.md": drawing, "Cupboards.md": b"The kitchen cupboard doors.\n"}
    config = tmp_path / "config"
    vault = persons_vault(tmp_path, files)
    reindex = cli(config, "reindex", "--vault", str(vault))
    assert reindex.returncode == 0, reindex.stderr
    assert re.search(r"; 2 chunks embedded", reindex.stdout), reindex.stdout  # one for each note
    server = ServeProcess(vault, config)
    try:

        def call(tool: str, **arguments: Any) -> dict[str, Any]:
            return asyncio.run(call_tool(server, tool, **arguments))

        (hit,) = call("memory_search", query="quartzmarker", limit=1)["results"]
        assert hit["slug"] == "Floorplan.excalidraw"
        content = call("memory_recall", action="get", thought_id=hit["id"])["item"]["content"]
        assert "quartzmarker" in content and "strokeColor" not in content
        slugs = [h["slug"] for h in call("memory_search", query="kitchen cupboard", limit=5)["results"]]
        assert slugs[0] == "Cupboards"
    finally:
        server.stop()
    assert unchanged(vault, files)


def test_obsidians_settings_rewritten_while_the_daemon_runs_fail_neither_doctor_nor_health(
    tmp_path: Path,
) -> None:
    # Obsidian and its plugins rewrite files under .obsidian/ as the person works (a plugin's
    # data.json on each setting, graph.json when the graph is zoomed). vaultmem does not watch that
    # folder (workspace.json is rewritten every few seconds) and commits it when it starts: until
    # then doctor failed and health warned "uncommitted changes", with the advice to wait for the
    # watcher's commit, for as long as Obsidian was open.
    files = {
        ".obsidian/app.json": b'{"attachmentFolderPath": "attachments"}',
        ".obsidian/plugins/obsidian-excalidraw-plugin/data.json": b'{"library2": []}',
        "Garden.md": b"Beds.\n",
    }
    config = tmp_path / "config"
    vault = persons_vault(tmp_path, files)
    server = ServeProcess(vault, config)
    try:
        (vault / ".obsidian/plugins/obsidian-excalidraw-plugin/data.json").write_bytes(b'{"library2": [1]}')
        (vault / ".obsidian/graph.json").write_bytes(b'{"scale": 1.4}')
        health = asyncio.run(call_tool(server, "memory_status", action="health"))
        assert {c["name"]: c["ok"] for c in health["item"]["checks"]}["uncommitted_changes"] is True
        doctor = cli(config, "doctor", "--json", "--vault", str(vault))
        report = json.loads(doctor.stdout)
        assert report["uncommitted"] == []
        assert report["committed_at_start"] == [
            ".obsidian/graph.json",
            ".obsidian/plugins/obsidian-excalidraw-plugin/data.json",
        ]
        assert doctor.returncode == 0, doctor.stdout
    finally:
        server.stop()
    # vaultmem's next start commits them, as before.
    ServeProcess(vault, config).stop()
    assert git(vault, "status", "--porcelain", "--", ".obsidian").strip() == ""


def test_a_persons_own_id_property_shared_by_two_notes_is_not_vaultmems_id(tmp_path: Path) -> None:
    # `id:` is a common property of a person's own: a Zettelkasten template's minute stamp (two
    # notes made in one minute share it), Templater's `<% … %>` left in every template, a book's
    # number. vaultmem took it for its own note id: the second note of each pair was "malformed:
    # has the same id as …; give one of them a new id", and doctor failed, for valid notes of the
    # person's that vaultmem never writes. Its own ids are UUIDs.
    stamp = b'---\nid: <% tp.file.creation_date("YYYYMMDDHHmmss") %>\n---\n'
    files = {
        "Templates/Daily.md": stamp + b"# <% tp.date.now() %>\n",
        "Templates/Meeting.md": stamp + b"Agenda for <% tp.file.title %>\n",
        "Zettel/Spaced practice.md": b"---\nid: 202405010930\n---\nSpaced practice beats cramming. ^z1\n",
        "Zettel/Interleaving.md": b"---\nid: 202405010930\n---\nInterleaving mixes topics, walrusmarker.\n",
        "Home.md": b"[[Interleaving]] and [[Meeting]]\n",
    }
    config = tmp_path / "config"
    vault = persons_vault(tmp_path, files)
    doctor = cli(config, "doctor", "--json", "--vault", str(vault))
    report = json.loads(doctor.stdout)
    assert report["malformed"] == {}
    assert doctor.returncode == 0, doctor.stdout
    found = json.loads(cli(config, "search", "--json", "--vault", str(vault), "walrusmarker").stdout)
    assert [(hit["slug"], len(hit["id"])) for hit in found["results"]] == [("Interleaving", 36)]
    assert unchanged(vault, files)
