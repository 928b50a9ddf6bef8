"""The files Obsidian's popular plugins put in a person's vault, adopted in place (found by a helper
playing a long-time Obsidian user with Excalidraw, Kanban, Dataview, Templater and Tasks, 2026-12-04).

Through the real surfaces: the CLI as a subprocess (`vaultmem init`, `doctor`) and `vaultmem serve`
with an MCP client. Every file of the person's stays byte-identical.
"""

from __future__ import annotations

import base64
import json
import random
import string
import zlib
from pathlib import Path

from _support import cli, persons_vault


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
