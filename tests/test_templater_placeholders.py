"""A Templater template's placeholders are no tags and no links (through the CLI as a subprocess).

``tags: <% tp.file.folder() %>`` gave the tags ``<%``, ``tp.file.folder()`` and ``%>``, and
``[[<% tp.date.yesterday() %>]]`` was a link to a note not written yet that doctor listed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import snapshot

TEMPLATE = """---
tags: <% tp.file.folder() %>
related: [daily, "<% tp.file.title %>", "log/<% tp.date.now('YYYY') %>"]
up: "[[<% tp.file.folder() %>]]"
---
# <% tp.file.title %>
Yesterday: [[<% tp.date.yesterday() %>]] and [[Weekly review]]
<%* tR += "#fromscript [[From script]]" %>
marmalade recipe #cooking
"""
LISTED = """---
tags: [daily, "<% tp.file.folder() %>", "project/<% tp.file.title %>"]
---
quince jelly notes
"""


def _cli(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).with_name("vaultmem")), "--vault", str(vault), *args],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        env={**os.environ, "VAULTMEM_EMBEDDER": "fake"},  # the test is about tags and links
    )  # fmt: skip


def _tags(vault: Path, query: str) -> list[str]:
    done = _cli(vault, "search", "--json", query)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)["results"]
    assert results, done.stdout
    return list(results[0]["tags"])


def test_templater_expressions_in_a_template_are_neither_tags_nor_links(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "Templates").mkdir(parents=True)
    (vault / "Templates" / "Daily.md").write_text(TEMPLATE, encoding="utf-8")
    (vault / "Templates" / "Listed.md").write_text(LISTED, encoding="utf-8")
    assert _cli(vault, "init").returncode == 0
    before = snapshot(vault)
    assert _tags(vault, "marmalade") == ["cooking"]
    assert _tags(vault, "quince") == ["daily"]
    doctor = _cli(vault, "doctor")
    assert "<%" not in doctor.stdout and "From script" not in doctor.stdout, doctor.stdout
    assert "Weekly review" in doctor.stdout  # a real link to a note not written yet is still named
    assert {p: b for p, b in snapshot(vault).items() if p.startswith("Templates/")} == {
        p: b for p, b in before.items() if p.startswith("Templates/")
    }
