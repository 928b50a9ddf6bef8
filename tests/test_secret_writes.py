"""The secret guard on every agent write (issue 18, item 4), through MCP over HTTP against a real
daemon: a write holding an AWS key, a PEM private key, a GitHub token and a password in a URL is
refused in ``refuse`` mode, with nothing written, and stored with markers in ``redact`` mode, the
answer saying so; the secret is then nowhere in the vault, its git history or the index. A clean
write with long random-looking ids goes through; a secret a person adds by hand is reported by
health and doctor and left in their file."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import git, snapshot, write_vault_contract
from graph_wire import Wire
from mcp_harness import running_daemon
from secret_samples import MAKERS, clean_texts

from vaultmem.filing.secrets import LABELS
from vaultmem.server.daemon import Daemon

_RNG = random.Random(1818)
SECRETS = [
    MAKERS[name](_RNG)
    for name in ("aws access key id", "rsa private key", "github classic token", "password in a url")
]
CONTENT = "Deploy notes for the staging cluster.\n\n" + "\n\n".join(s.text for s in SECRETS) + "\n"
FRAGMENTS = [fragment for s in SECRETS for fragment in s.fragments]
KINDS = ["aws-access-key", "private-key", "github-token", "url-password"]


@pytest.fixture
def wire(vault: Path, tmp_path: Path) -> Iterator[Wire]:
    with running_daemon(vault, tmp_path / "token") as daemon:
        yield Wire(daemon)


def answer(wire: Wire, tool: str, **arguments: Any) -> dict[str, Any]:
    """A memory tool's result (its fields at the top of the structured content)."""
    result = wire.call(tool, **arguments)
    assert not result.is_error, result.content
    data = dict(result.structured_content or {})
    assert json.loads(result.content[0].text) == data  # type: ignore[union-attr]
    return data


def redact_mode(vault: Path) -> None:
    write_vault_contract(vault, lambda t: t.replace("mode: refuse", "mode: redact"))


def thought(wire: Wire, content: str) -> str:
    return str(wire.ok("memory_store", action="create", content=content)["item"]["id"])


def leaks(vault: Path, daemon: Daemon) -> list[str]:
    """Where a fragment of the secrets is: vault files, every version in git, the state directory."""
    found: list[str] = []
    history = git(vault, "log", "-p", "--all", "--format=%H %an %B")
    found += [f"git history: {f[:8]}" for f in FRAGMENTS if f in history]
    for path in vault.rglob("*"):
        if path.is_file() and ".git" not in path.relative_to(vault).parts:
            data = path.read_bytes()
            found += [f"{path.relative_to(vault)}: {f[:8]}" for f in FRAGMENTS if f.encode() in data]
    assert daemon.settings.state_dir.is_relative_to(vault)  # the index files were searched above
    return found


def merge_call(wire: Wire, a: str, b: str) -> Callable[[], Any]:
    def call() -> Any:
        preview = wire.ok(
            "memory_supersede", action="merge", source_id=b, target_id=a, merged_content=CONTENT
        )
        token = preview["item"]["preview_token"]
        return wire.call(
            "memory_supersede", action="merge", source_id=b, target_id=a, merged_content=CONTENT,
            confirm=True, preview_token=token,
        )  # fmt: skip

    return call


WRITES: dict[str, Callable[[Wire, str, str], Callable[[], Any]]] = {
    "memory_append": lambda w, a, b: lambda: w.call("memory_append", content=CONTENT, kind="reference"),
    "memory_store create": lambda w, a, b: lambda: w.call("memory_store", action="create", content=CONTENT),
    "memory_store update": lambda w, a, b: (
        lambda: w.call("memory_store", action="update", thought_id=a, content=CONTENT)
    ),
    "memory_store bulk_create": lambda w, a, b: (
        lambda: w.call(
            "memory_store", action="bulk_create", thoughts=[{"content": "A clean row."}, {"content": CONTENT}]
        )
    ),
    "memory_reflect summary": lambda w, a, b: (
        lambda: w.call("memory_reflect", action="reflect", summary=CONTENT)
    ),
    "memory_reflect decisions": lambda w, a, b: (
        lambda: w.call("memory_reflect", action="reflect", decisions=[CONTENT])
    ),
    "memory_supersede merge": merge_call,
    "memory_crystallize cluster": lambda w, a, b: (
        lambda: w.call("memory_crystallize", action="cluster", thought_ids=[a, b], title=SECRETS[2].secret)
    ),
    "retention_review compact": lambda w, a, b: (
        lambda: w.call(
            "retention_review", action="compact", source_ids=[b], summary={"content": CONTENT}, confirm=True
        )
    ),
    "memory_manage create": lambda w, a, b: (
        lambda: w.call(
            "memory_manage", action="create", name="Deploys", local_path="/srv/deploys", description=CONTENT
        )
    ),
    "memory_forget reason": lambda w, a, b: lambda: w.call("memory_forget", id=a, reason=CONTENT),
}


@pytest.mark.parametrize("tool", list(WRITES))
def test_refuse_mode_refuses_a_write_holding_secrets_and_writes_nothing(
    wire: Wire, vault: Path, tool: str
) -> None:
    a, b = thought(wire, "Deploys go out on Tuesdays."), thought(wire, "Deploys go out weekly.")
    wire.daemon.memory.flush()  # type: ignore[union-attr]
    before, head = snapshot(vault), git(vault, "rev-parse", "HEAD")
    result = WRITES[tool](wire, a, b)()
    assert result.is_error
    error = result.structured_content["result"]["error"]
    assert error["statusCode"] == 400 and not error["retryable"]
    message = error["message"]
    assert "Nothing was written" in message
    if tool != "memory_crystallize cluster":  # the cluster's title holds only the GitHub token
        for kind in KINDS:
            assert LABELS[kind] in message, (kind, message)
        assert "content line 3" in message or "text line" in message or "reason line 3" in message, message
    assert not [f for f in FRAGMENTS if f in message]  # never echoes the secret
    wire.daemon.memory.flush()  # type: ignore[union-attr]
    assert snapshot(vault) == before and git(vault, "rev-parse", "HEAD") == head
    assert leaks(vault, wire.daemon) == []


def test_memory_capture_answers_the_refusal_as_its_error(wire: Wire, vault: Path) -> None:
    """memory_capture never errors (the memory-tools contract): the refusal is its {success: false, error}."""
    before = snapshot(vault)
    refused = answer(wire, "memory_capture", content=CONTENT, source_url="https://example.org/deploys")
    assert refused["success"] is False and LABELS["private-key"] in refused["error"]
    assert snapshot(vault) == before


def test_redact_mode_stores_markers_says_so_and_leaves_no_trace_of_the_secrets(
    wire: Wire, vault: Path
) -> None:
    redact_mode(vault)
    appended = answer(
        wire, "memory_append", content=CONTENT, kind="reference", tags=["deploy", SECRETS[2].secret]
    )
    assert sorted({r["kind"] for r in appended["redacted"]}) == sorted(KINDS)
    assert {r["field"] for r in appended["redacted"]} == {"content", "tags[1]"}
    created = wire.ok("memory_store", action="create", content=CONTENT, title=f"Key {SECRETS[0].secret}")
    assert {r["kind"] for r in created["meta"]["redacted"]} == set(KINDS)
    assert any("redacted" in w for w in created["meta"]["warnings"])
    target = created["item"]["id"]
    updated = wire.ok("memory_store", action="update", thought_id=target, content=CONTENT + "Second draft.\n")
    assert {r["kind"] for r in updated["meta"]["redacted"]} == set(KINDS)
    wire.ok("memory_reflect", action="reflect", summary=CONTENT)
    wire.daemon.memory.flush()  # type: ignore[union-attr]
    note = wire.ok("memory_recall", action="get", thought_id=target, compact=False)["item"]
    for kind in KINDS:
        assert f"[REDACTED:{kind}]" in note["content"]
    assert note["title"] == "Key [REDACTED:aws-access-key]" and "redacted-aws-access-key" in note["slug"]
    hits = answer(wire, "memory_search", query="deploy notes staging cluster")["results"]
    assert hits and not [f for f in FRAGMENTS for h in hits if f in h["snippet"]]
    tags = wire.ok("memory_recall", action="get", thought_id=appended["id"])["item"]["tags"]
    assert tags == ["deploy"]  # a tag that held the token is dropped
    assert leaks(vault, wire.daemon) == []
    assert git(vault, "status", "--porcelain") == ""


def test_a_clean_write_with_long_random_looking_ids_is_not_refused(wire: Wire) -> None:
    texts = clean_texts()
    content = "\n".join(texts[name] for name in ("order id", "git sha", "uuid v4", "sha256 hex", "nanoid"))
    written = answer(wire, "memory_append", content=content, kind="reference")
    assert "redacted" not in written
    captured = answer(
        wire, "memory_capture", content="Read later", source_id="npm:" + "x7Gk2PqL9vRt4WmZ8sNc3YhB5dJf6QaE"
    )
    assert captured["success"] is True


def test_a_secret_added_by_hand_is_reported_by_health_and_doctor_and_the_file_is_kept(
    wire: Wire, vault: Path
) -> None:
    kept = answer(wire, "memory_append", content="The release checklist.", kind="workflow")
    wire.daemon.memory.flush()  # type: ignore[union-attr]
    note = next(vault.rglob("the-release-checklist.md"))
    with note.open("a", encoding="utf-8") as f:
        f.write(f"CI token: {SECRETS[2].secret}\n")  # a person's edit
    hand = note.read_bytes()
    health = wire.ok("memory_status", action="health", include_details=True)["item"]
    check = next(c for c in health["checks"] if c["name"] == "secrets_in_notes")
    rel = str(note.relative_to(vault))
    line = hand.decode().splitlines().index(f"CI token: {SECRETS[2].secret}") + 1  # of the file
    assert not check["ok"] and check["details"] == [
        {"path": rel, "kind": "github-token", "field": "body", "line": line}
    ]
    assert SECRETS[2].secret not in str(health)
    # An agent's write to that note is not refused for the person's secret, and keeps it as it is.
    wire.ok("memory_store", action="update", thought_id=kept["id"], tags=["release"])
    assert SECRETS[2].secret.encode() in note.read_bytes() and b"CI token" in hand
    doctor = subprocess.run(
        [str(Path(sys.executable).with_name("vaultmem")), "doctor", "--vault", str(vault)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    line = note.read_text(encoding="utf-8").splitlines().index(f"CI token: {SECRETS[2].secret}") + 1
    assert doctor.returncode == 1 and f"{rel}: github-token (body line {line})" in doctor.stdout
    assert SECRETS[2].secret not in doctor.stdout
