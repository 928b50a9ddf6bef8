"""A person's note read as Obsidian reads it (docs/reliability.md rows 119-122): a tag with an emoji
in it, links and tags inside math, a stray Templater ``<%`` in prose, and frontmatter closed by
``...``. Each is checked in the parser and through the tools, on a vault on disk."""

from __future__ import annotations

from pathlib import Path

from conftest import FakeClock, hand_write
from upkeep_wire import LocalWire, local_runtime

from vaultmem.notes.links import text_refs

# -- tags -------------------------------------------------------------------------------------------


def test_a_tag_runs_through_emoji_and_letters_of_any_script_and_ends_at_punctuation() -> None:
    body = (
        "Ready: #tg🚀rocket, #Status/🔥Active and #हिन्दी.\n"
        "Ends at punctuation: #done—said, #it’s, #end. Still none: #1984, x#y\n"
    )
    assert text_refs(body).tags == ("tg🚀rocket", "Status/🔥Active", "हिन्दी", "done", "it", "end")


def test_an_agent_finds_a_persons_emoji_tag_whole(vault: Path, clock: FakeClock) -> None:
    hand_write(vault, "notes/Launch.md", "Countdown checklist for the launch. #tg🚀rocket\n")
    with local_runtime(vault, clock) as memory:
        wire = LocalWire(memory)
        found = wire.recall(action="search", query="countdown launch", tag="tg🚀rocket", min_relevance=0)
        assert [i["thought"]["tags"] for i in found["items"]] == [["tg🚀rocket"]]
        assert wire.recall(action="list", tag="tg")["items"] == []
