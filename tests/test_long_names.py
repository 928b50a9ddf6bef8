"""A note renamed by the person to a long, legal name still takes every write.

Found by a helper attacking renames (2026-12-03): a name of 76 Japanese characters (231 bytes; a
file system takes 255) made every write to the note fail with "File name too long; check the disk
and retry": the temp file of an atomic write was named after the note plus ~30 bytes. The SDK
client against a real daemon over HTTP, the watcher on the real files.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from graph_wire import Wire
from mcp_harness import running_daemon, structured, wait_for

from vaultmem.vault.atomic import NAME_MAX, TEMP_PREFIX, temp_name


@pytest.mark.parametrize("characters", [76, 84])  # 231 bytes with ".md", and 255: the most there is
def test_writes_to_a_note_with_a_long_name_succeed(vault: Path, tmp_path: Path, characters: int) -> None:
    with running_daemon(vault, tmp_path / "token") as daemon:
        wire = Wire(daemon)
        a = wire.create("Alpha words about the kiln")
        b = wire.create("Bravo words about the glaze")
        old = vault / wire.recall(action="get", thought_id=b, fields=["path"])["item"]["path"]
        new = old.with_name("長" * characters + ".md")
        assert len(os.fsencode(new.name)) == 3 * characters + 3 <= NAME_MAX
        old.rename(new)
        rel = new.relative_to(vault).as_posix()

        def moved() -> bool:  # a read in the debounce after a rename may answer that the old name is gone
            got = wire.call("memory_recall", action="get", thought_id=b, fields=["path"])
            return not got.is_error and (got.structured_content or {})["result"]["item"]["path"] == rel

        wait_for(moved)
        time.sleep(1.0)  # past the watcher's debounce: the old name's deletion is handled too

        wire.store(action="link", source_id=b, target_id=a, edge_type="supports")
        wire.store(action="update", thought_id=b, content="Bravo words about the glaze, updated")
        assert "updated" in new.read_text("utf-8")
        forgotten = structured(wire.call("memory_forget", id=b, reason="obsolete"))
        assert forgotten["status"] == "deleted" and "status: deleted" in new.read_text("utf-8")
        assert [p.name for p in new.parent.iterdir() if p.name.startswith(TEMP_PREFIX)] == []


def test_a_temp_name_fits_the_file_system_and_cuts_at_a_character() -> None:
    for name in ("short.md", "長" * 84 + ".md", "é" * 200 + ".md", "x" * 255):
        made = temp_name(name, ".kept")
        assert len(os.fsencode(made)) <= NAME_MAX
        assert made.startswith(TEMP_PREFIX) and made.endswith(".kept")
        made.encode("utf-8")  # never half a character
