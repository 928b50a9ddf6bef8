"""The tools' contract as an independent client met it on day one (issue 13, items 3, 6, 12, 14, 15,
19 and 21): the SDK client against a real daemon over HTTP, one session per call (``Wire``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import note_files
from graph_wire import Wire
from mcp_harness import running_daemon, structured

from vaultmem.notes.frontmatter import parse
from vaultmem.server.daemon import Daemon


@pytest.fixture
def daemon(vault: Path, tmp_path: Path) -> Iterator[Daemon]:
    with running_daemon(vault, tmp_path / "token") as running:
        yield running


@pytest.fixture
def wire(daemon: Daemon) -> Wire:
    return Wire(daemon)


def memory(wire: Wire, tool: str, **arguments: Any) -> dict[str, Any]:
    """The result of one of the four memory tools (their own shapes, not the graph envelope)."""
    return structured(wire.call(tool, **arguments))


def note_named(vault: Path, slug: str) -> Path:
    [path] = [p for p in note_files(vault) if p.stem == slug]
    return path


# -- item 6: slugs of non-Latin titles --------------------------------------------------------------


@pytest.mark.parametrize(
    ("title", "slug"),
    [("Привет мир", "privet-mir"), ("東京の天気", "dong-jing-no-tian-qi"), ("Ελληνικά", "ellinika")],
)
def test_a_non_latin_title_gives_a_transliterated_file_name(
    wire: Wire, vault: Path, title: str, slug: str
) -> None:
    """Issue 13 item 6: every one of these titles became `note.md`."""
    appended = memory(wire, "memory_append", content=f"about {title}", kind="reference", title=title)
    captured = memory(wire, "memory_capture", content=f"aside on {title}", title=title)
    created = wire.store(action="create", content=f"thought on {title}", title=title)["item"]
    assert appended["slug"] == slug
    assert parse(note_named(vault, slug).read_text(encoding="utf-8")).meta["title"] == title
    # A name already taken grows by the next meaningful word of the note (the collision rule).
    assert captured["slug"].startswith(f"{slug}-") and created["slug"].startswith(f"{slug}-")
    assert len({appended["slug"], captured["slug"], created["slug"]}) == 3
