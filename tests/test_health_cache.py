"""A health check reads only the notes that changed since the last one (operations/note_facts.py).

``vaultmem doctor`` and ``memory_status`` health used to read and parse every note at every call
(9 s at 10k notes). What they need of a file (its secrets, its property links) is now kept by
content hash in ``<state>/health.cache``; these tests hold the answers equal to a full read, across
processes, after a person's edits and with a damaged cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from secret_samples import MAKERS

from vaultmem.config import Settings
from vaultmem.operations import note_facts
from vaultmem.operations.doctor import diagnose_vault
from vaultmem.operations.note_facts import FILE
from vaultmem.vault.init import init_vault

VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))
SECRET = next(iter(MAKERS.values()))  # one of the shared secret samples


def doctor(vault: Path) -> dict[str, object]:
    done = subprocess.run(
        [VAULTMEM, "doctor", "--json", "--vault", str(vault)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode in (0, 1), done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return report


def handmade(vault: Path) -> tuple[Path, str]:
    """A person's notes: one with a secret in its body and a property link to a note not written."""
    import random

    secret = SECRET(random.Random(4))
    notes = vault / "notes"
    notes.mkdir()
    leaky = notes / "deploy.md"
    leaky.write_text(f"---\nrelated: '[[Nowhere Yet]]'\n---\nDeploy with {secret.text}\n", encoding="utf-8")
    (notes / "plain.md").write_text("Just a plain note about tea.\n", encoding="utf-8")
    return leaky, secret.text


def test_doctor_twice_from_the_cache_then_after_a_hand_edit(tmp_path: Path) -> None:
    root, _ = init_vault(tmp_path / "vault")
    leaky, text = handmade(root)
    first = doctor(root)
    assert [s["path"] for s in first["secrets"]] == ["notes/deploy.md"]  # type: ignore[index]
    assert first["dangling_links"] == [
        {"path": "notes/deploy.md", "property": "related", "target": "Nowhere Yet"}
    ]
    state = Settings.resolve(root).state_dir
    assert (state / FILE).exists()
    second = doctor(root)  # a new process: from the cache
    assert second["secrets"] == first["secrets"] and second["dangling_links"] == first["dangling_links"]
    leaky.write_text("---\nrelated: '[[plain]]'\n---\nDeploy with the usual script.\n", encoding="utf-8")
    third = doctor(root)  # the person's edit is read again
    assert third["secrets"] == [] and third["dangling_links"] == []
    assert text not in json.dumps(first)


@pytest.mark.parametrize("damage", ["garbage", "empty", "another format"])
def test_a_damaged_cache_is_ignored(tmp_path: Path, damage: str) -> None:
    root, _ = init_vault(tmp_path / "vault")
    handmade(root)
    first = doctor(root)
    cache = Settings.resolve(root).state_dir / FILE
    if damage == "garbage":
        cache.write_bytes(os.urandom(200))
    elif damage == "empty":
        cache.write_bytes(b"")
    else:
        from vaultmem.vault.statefile import marshal_state

        cache.write_bytes(marshal_state((99, "rules", ())))
    again = doctor(root)
    assert again["secrets"] == first["secrets"] and again["dangling_links"] == first["dangling_links"]


def test_only_changed_notes_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = init_vault(tmp_path / "vault")
    leaky, _ = handmade(root)
    reads: list[str] = []
    real = note_facts.read_note_and_hash

    def counting(layout: object, rel: str) -> object:
        reads.append(rel)
        return real(layout, rel)  # type: ignore[arg-type]

    monkeypatch.setattr(note_facts, "read_note_and_hash", counting)
    settings = Settings.resolve(root)
    diagnose_vault(settings)
    assert sorted(reads) == ["notes/deploy.md", "notes/plain.md"]
    reads.clear()
    diagnose_vault(settings)
    assert reads == []
    leaky.write_text("Deploy with the usual script.\n", encoding="utf-8")
    diagnose_vault(settings)
    assert reads == ["notes/deploy.md"]


def test_the_daemons_health_check_and_the_cli_share_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """memory_status health through MCP after a CLI doctor: the same findings, no note re-read."""
    from graph_wire import Wire
    from mcp_harness import running_daemon

    root, _ = init_vault(tmp_path / "vault")
    handmade(root)
    first = doctor(root)
    reads: list[str] = []
    real = note_facts.read_note_and_hash
    monkeypatch.setattr(
        note_facts, "read_note_and_hash", lambda layout, rel: reads.append(rel) or real(layout, rel)
    )
    with running_daemon(root, tmp_path / "token") as daemon:
        health = Wire(daemon).ok("memory_status", action="health", include_details=True)["item"]
    check = next(c for c in health["checks"] if c["name"] == "secrets_in_notes")
    assert [d["path"] for d in check["details"]] == [s["path"] for s in first["secrets"]]  # type: ignore[union-attr]
    assert reads == []


def test_a_secret_pasted_under_a_restored_mtime_and_size_is_still_found(tmp_path: Path) -> None:
    """The catalog trusts mtime and size; doctor's check goes by the file's bytes, so an edit that
    keeps both (a tool that restores the mtime) cannot hide a secret behind the cache."""
    import random

    root, _ = init_vault(tmp_path / "vault")
    notes = root / "notes"
    notes.mkdir()
    note = notes / "pad.md"
    secret = SECRET(random.Random(8)).text
    filler = "x" * len(secret)
    note.write_text(f"Padding: {filler}\n", encoding="utf-8")
    assert doctor(root)["secrets"] == []
    st = note.stat()
    note.write_text(f"Padding: {secret}\n", encoding="utf-8")
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert note.stat().st_size == st.st_size and note.stat().st_mtime_ns == st.st_mtime_ns
    assert [s["path"] for s in doctor(root)["secrets"]] == ["notes/pad.md"]  # type: ignore[index]


def test_a_cache_written_whole_but_of_another_shape_is_ignored(tmp_path: Path) -> None:
    """The checksum says the file was written whole, not by whom: rows of the wrong shape (a link
    row of two fields, a number for a target) are refused, not reported or crashed on."""
    from vaultmem.vault.statefile import marshal_state, unmarshal_state

    root, _ = init_vault(tmp_path / "vault")
    handmade(root)
    first = doctor(root)
    cache = Settings.resolve(root).state_dir / FILE
    fmt, key, rows = unmarshal_state(cache.read_bytes())  # type: ignore[misc]
    for bad in ((("related", "t"),), (("related", 5, None),)):
        forged = tuple((path, digest, found, bad, none) for path, digest, found, _, none in rows)
        cache.write_bytes(marshal_state((fmt, key, forged)))
        again = doctor(root)
        assert again["secrets"] == first["secrets"] and again["dangling_links"] == first["dangling_links"]
    # an unreadable-properties field that is not text
    forged = tuple((path, digest, found, links, 5) for path, digest, found, links, _ in rows)
    cache.write_bytes(marshal_state((fmt, key, forged)))
    assert doctor(root)["unreadable_properties"] == first["unreadable_properties"]


def test_a_health_check_out_of_time_says_how_many_notes_it_did_not_read_and_the_next_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first health check of a state directory read every note: 50.7 s at 100k notes, past
    what an MCP client waits for one call. Now one call reads for a few seconds at most and says
    how many notes it left; the next goes on where it stopped (here the budget is none at first)."""
    from graph_wire import Wire
    from mcp_harness import running_daemon

    from vaultmem.operations import status

    root, _ = init_vault(tmp_path / "vault")
    handmade(root)
    monkeypatch.setattr(status, "HEALTH_READ_BUDGET_S", 0.0)
    with running_daemon(root, tmp_path / "token") as daemon:
        wire = Wire(daemon)

        def checks() -> dict[str, dict[str, object]]:
            health = wire.ok("memory_status", action="health", include_details=True)["item"]
            return {c["name"]: c for c in health["checks"]}

        first = checks()
        assert first["notes_not_checked_yet"]["count"] == 2 and not first["notes_not_checked_yet"]["ok"]
        assert "call health again" in str(first["notes_not_checked_yet"]["remediation"])
        assert first["secrets_in_notes"]["count"] == 0  # not read yet, so not found yet
        monkeypatch.setattr(status, "HEALTH_READ_BUDGET_S", 5.0)
        second = checks()
        assert second["notes_not_checked_yet"]["ok"] and second["notes_not_checked_yet"]["count"] == 0
        assert [d["path"] for d in second["secrets_in_notes"]["details"]] == ["notes/deploy.md"]  # type: ignore[union-attr]
    assert doctor(root)["secrets"][0]["path"] == "notes/deploy.md"  # type: ignore[index]
