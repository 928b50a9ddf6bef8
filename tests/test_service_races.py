"""A person's save that lands while vaultmem rewrites the same note is never overwritten.

A write reads the note, builds the new text and stages it (temp file, fsync) before renaming it
into place. A save in that window used to be replaced by a version built from the old text. The
pipeline now checks, under the write lock and just before the rename, that every file it replaces
still has the bytes its decision read; if not, nothing is written and a retryable error says so.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import OpenService, git_status, hand_write

from vaultmem.errors import ChangedOnDisk
from vaultmem.mcp.envelope import failure
from vaultmem.vault.atomic import TEMP_PREFIX
from vaultmem.vault.store import StagedWrite


def _edit_while_staging(monkeypatch: pytest.MonkeyPatch, root: Path, rel: str, data: bytes) -> None:
    """Make the next staging of ``rel`` happen just after a person saved ``data`` to it."""
    real_stage = StagedWrite.stage
    done = False

    def stage(self: StagedWrite) -> None:
        nonlocal done
        if self.rel == rel and not done:
            done = True
            hand_write(root, rel, data)
        real_stage(self)

    monkeypatch.setattr(StagedWrite, "stage", stage)


def test_a_save_during_a_forget_is_kept_and_the_forget_is_refused(
    vault: Path, open_service: OpenService, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = open_service()
    written = service.append("The heron nests by the weir.", "reference", title="heron")
    rel = service.catalog.by_id(written["id"]).path  # type: ignore[union-attr]
    saved = (vault / rel).read_bytes().replace(b"by the weir", b"by the old mill weir")
    _edit_while_staging(monkeypatch, vault, rel, saved)

    with pytest.raises(ChangedOnDisk, match="changed on disk"):
        service.forget(written["id"], "outdated")

    assert (vault / rel).read_bytes() == saved  # the person's save, byte for byte
    assert not list((vault / rel).parent.glob(f"{TEMP_PREFIX}*"))
    monkeypatch.undo()
    again = service.forget(written["id"], "outdated", wait_commit=True)  # the retry reads the save
    assert again["status"] == "deleted"
    text = (vault / rel).read_text(encoding="utf-8")
    assert "by the old mill weir" in text and "status: deleted" in text
    assert rel not in git_status(vault)


def test_a_save_during_a_reinforce_is_kept(
    vault: Path, open_service: OpenService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Appending the same content again reinforces the existing note (a rewrite of its file)."""
    service = open_service()
    first = service.append("Kettle descaling: use citric acid monthly.", "reference", title="kettle")
    rel = service.catalog.by_id(first["id"]).path  # type: ignore[union-attr]
    saved = (vault / rel).read_bytes() + b"\nAdded by hand: vinegar works too.\n"
    _edit_while_staging(monkeypatch, vault, rel, saved)
    with pytest.raises(ChangedOnDisk):
        service.append("Kettle descaling: use citric acid monthly.", "reference", title="kettle")
    assert (vault / rel).read_bytes() == saved


def test_the_error_is_a_retryable_conflict_on_the_wire() -> None:
    result = failure(ChangedOnDisk("notes/x.md changed on disk while vaultmem was writing it"))
    assert result.is_error
    assert result.structured_content is not None
    error = result.structured_content["result"]["error"]
    assert error["statusCode"] == 409 and error["retryable"] is True
