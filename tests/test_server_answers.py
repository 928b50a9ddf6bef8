"""What the daemon answers a client that got something wrong, through real HTTP against a real
daemon: a missing token (how to get one), a session the daemon no longer holds, a protocol version
it does not speak, and malformed ``tools/call`` or ``prompts/get`` requests (each a JSON-RPC error
whose message says what to send instead); and every tool parameter a client's schema converter
reads has a type."""

from __future__ import annotations

import json
import logging
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import yaml
from mcp_harness import mcp_client, running_daemon, stdio_env, tls_context
from test_server_http import INITIALIZE, MCP_HEADERS

from vaultmem.memory import Memory
from vaultmem.server.daemon import Daemon
from vaultmem.server.token import token_path

VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    monkeypatch.delenv("VAULTMEM_TOKEN_FILE", raising=False)
    return home


@pytest.fixture
def daemon(vault: Path, config_home: Path) -> Iterator[Daemon]:
    """A daemon whose token is where `vaultmem token` looks for it (the user's config directory)."""
    with running_daemon(vault, token_path(vault)) as running:
        yield running


def send(daemon: Daemon, body: Any, *, token: str | None = None, **headers: str) -> httpx2.Response:
    sent = dict(MCP_HEADERS)
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    sent.update(headers)
    with httpx2.Client(timeout=30, verify=tls_context()) as client:
        return client.post(daemon.url, headers=sent, content=json.dumps(body))


def test_a_request_without_a_token_is_told_the_command_that_prints_this_vaults_token(
    daemon: Daemon, vault: Path, config_home: Path
) -> None:
    response = send(daemon, INITIALIZE)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="vaultmem"'
    message = response.json()["error"]
    assert daemon.token() not in message
    command = message.split("`vaultmem ", 1)[1].split("`", 1)[0]
    assert command == f"--vault {shlex.quote(str(vault))} token"
    done = subprocess.run(
        [VAULTMEM, *shlex.split(command)],
        capture_output=True,
        text=True,
        timeout=60,
        env=stdio_env(XDG_CONFIG_HOME=str(config_home)),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == daemon.token()  # the command the message names gives the right one
    assert send(daemon, INITIALIZE, token=done.stdout.strip()).status_code == 200


def test_the_command_a_401_names_for_an_agents_own_token_makes_one_this_daemon_accepts(
    vault: Path, config_home: Path, tmp_path: Path
) -> None:
    """The 401's second command, run as written in a shell (the daemon's vault, at a path with a
    space, a quote and an accent, is not the default one and ``$VAULTMEM_VAULT`` is unset): it made
    a token for ``~/vaultmem-vault`` that this daemon refused."""
    odd = tmp_path / "Jo's vault \u00e9t\u00e9"
    vault.rename(odd)
    with running_daemon(odd, token_path(odd)) as daemon:
        message = send(daemon, INITIALIZE).json()["error"]
        command = message.split("`vaultmem ", 2)[2].split("`", 1)[0]
        assert command == f"--vault {shlex.quote(str(odd))} token add NAME", message
        done = subprocess.run(
            [VAULTMEM, *shlex.split(command.replace("NAME", "cursor"))],
            capture_output=True,
            text=True,
            timeout=60,
            env=stdio_env(XDG_CONFIG_HOME=str(config_home), HOME=str(tmp_path / "home")),
        )
        assert done.returncode == 0, done.stderr
        assert send(daemon, INITIALIZE, token=done.stdout.strip()).status_code == 200


def open_session(daemon: Daemon, token: str) -> str:
    response = send(daemon, INITIALIZE, token=token)
    assert response.status_code == 200
    session = response.headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
    assert send(daemon, initialized, token=token, **headers).status_code == 202
    return session


LIST_TOOLS = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}


def test_a_session_the_daemon_no_longer_holds_gets_404_saying_why_and_to_initialize_again(
    vault: Path, config_home: Path
) -> None:
    """The transport spec: 404 for an unknown session, upon which the client "MUST start a new
    session by sending a new InitializeRequest without a session ID attached"; the SDK said only
    "Session not found", which the TypeScript SDK's client does not act on."""
    with running_daemon(vault, token_path(vault)) as before:
        token = before.token()
        session = open_session(before, token)
    with running_daemon(vault, token_path(vault)) as daemon:  # the daemon restarted
        headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
        response = send(daemon, LIST_TOOLS, token=token, **headers)
        assert response.status_code == 404
        message = response.json()["error"]["message"]
        assert session[:8] in message and "restarted" in message and "idle" in message
        assert "initialize" in message and "without the mcp-session-id header" in message
        # Doing what it says works; a session ended by its client is told the same.
        fresh = open_session(daemon, token)
        assert (
            send(daemon, LIST_TOOLS, token=token, **{**headers, "mcp-session-id": fresh}).status_code == 200
        )
        with httpx2.Client(timeout=30, verify=tls_context()) as client:
            ended = client.delete(
                daemon.url, headers={"Authorization": f"Bearer {token}", "mcp-session-id": fresh}
            )
        assert ended.status_code < 300
        gone = send(daemon, LIST_TOOLS, token=token, **{**headers, "mcp-session-id": fresh})
        assert gone.status_code == 404 and "initialize" in gone.json()["error"]["message"]


@pytest.mark.parametrize("version", ["2000-01-01", "2099-01-01", "not-a-version"])
def test_a_protocol_version_the_daemon_does_not_speak_gets_400_naming_those_it_does(
    daemon: Daemon, version: str
) -> None:
    """The transport spec: "If the server receives a request with an invalid or unsupported
    MCP-Protocol-Version, it MUST respond with 400 Bad Request"; before a session and inside one.
    Such a request was routed as the 2026 protocol and told about a missing ``params._meta``."""
    token = daemon.token()
    session = open_session(daemon, token)
    for headers in ({}, {"mcp-session-id": session}):
        for body in (LIST_TOOLS, INITIALIZE):
            response = send(daemon, body, token=token, **{**headers, "mcp-protocol-version": version})
            assert response.status_code == 400, response.text
            answer = response.json()
            assert answer["id"] == body["id"]
            error = answer["error"]
            assert error["code"] == -32022  # the spec's UnsupportedProtocolVersionError
            for spoken in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"):
                assert spoken in error["message"] and spoken in error["data"]["supported"]
            assert error["data"]["requested"] == version and "_meta" not in error["message"]
    spoken = {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    assert send(daemon, LIST_TOOLS, token=token, **spoken).status_code == 200


def _untyped(schema: dict[str, Any], where: str) -> list[str]:
    """Every property (nested ones and ``$defs`` too) with neither a ``type`` nor an ``anyOf`` /
    ``oneOf`` whose members all have one (or a ``$ref``, a ``const`` or an ``enum``)."""

    def typed(node: dict[str, Any]) -> bool:
        if any(key in node for key in ("type", "$ref", "const", "enum")):
            return True
        members = node.get("anyOf") or node.get("oneOf")
        return bool(members) and all(isinstance(m, dict) and typed(m) for m in members)

    found: list[str] = []
    for name, node in (schema.get("properties") or {}).items():
        if not typed(node):
            found.append(f"{where}.{name}")
        for member in [node, *node.get("anyOf", []), *node.get("oneOf", [])]:
            if isinstance(member, dict):
                found += _untyped(member, f"{where}.{name}")
                if isinstance(member.get("items"), dict):
                    found += _untyped(member["items"], f"{where}.{name}[]")
    for name, node in (schema.get("$defs") or {}).items():
        found += _untyped(node, f"{where}.$defs.{name}")
    return found


def test_every_parameter_of_every_tool_has_a_type(daemon: Daemon) -> None:
    """Strict schema converters (an OpenAI function definition) refuse a property without a type;
    the retired inputs (``top_k``, ``dry_run``, ...) had none. They are ``null`` now: the graph
    document's "never-valued tombstones"; sent anyway, they still get the migration message."""

    async def listed() -> tuple[list[Any], str]:
        async with mcp_client(daemon.url, daemon.token()) as client:
            tools = (await client.list_tools()).tools
            retired = await client.call_tool("memory_recall", {"action": "search", "query": "x", "top_k": 5})
        return tools, " ".join(getattr(block, "text", "") for block in retired.content)

    tools, refusal = anyio.run(listed)
    assert len(tools) >= 15
    untyped = [path for tool in tools for path in _untyped(tool.input_schema, tool.name)]
    assert untyped == []
    recall = next(t for t in tools if t.name == "memory_recall").input_schema["properties"]
    assert recall["top_k"]["type"] == "null" and "use limit" in recall["top_k"]["description"]
    assert "limit" in refusal and "top_k" in refusal


def rpc(daemon: Daemon, token: str, session: str, method: str, params: Any) -> dict[str, Any]:
    """One JSON-RPC request of ``session``; the error it was answered."""
    body = {"jsonrpc": "2.0", "id": 11, "method": method, "params": params}
    headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
    response = send(daemon, body, token=token, **headers)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["id"] == 11 and "result" not in answer, answer
    return dict(answer["error"])


def test_a_tools_call_whose_arguments_are_a_json_string_is_refused_saying_to_send_the_object(
    daemon: Daemon, vault: Path
) -> None:
    """A naive OpenAI-to-MCP bridge passes the function call's ``arguments`` (a string of JSON) on
    as it came; the SDK answered a bare ``-32602 "Invalid request parameters"``. Refused, not
    parsed: nothing is written. A missing ``name`` is told what to send the same way."""
    token = daemon.token()
    session = open_session(daemon, token)
    before = sorted(p.name for p in vault.rglob("*.md"))
    content = json.dumps({"content": "bridged fact", "kind": "reference"})
    error = rpc(daemon, token, session, "tools/call", {"name": "memory_append", "arguments": content})
    assert error["code"] == -32602
    assert "arguments must be a JSON object" in error["message"] and "not a string" in error["message"]
    assert sorted(p.name for p in vault.rglob("*.md")) == before  # refused, never parsed and run
    error = rpc(daemon, token, session, "tools/call", {"name": "memory_search", "arguments": ["x"]})
    assert error["code"] == -32602 and "must be a JSON object" in error["message"]
    for params in ({"arguments": {"query": "x"}}, {"name": 5, "arguments": {}}):
        error = rpc(daemon, token, session, "tools/call", params)
        assert error["code"] == -32602
        assert "params.name" in error["message"] and "memory_search" in error["message"]
    # A well-formed call still runs.
    body = {"jsonrpc": "2.0", "id": 12, "method": "tools/call"}
    body["params"] = {"name": "memory_search", "arguments": {"query": "x"}}
    headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
    assert "result" in send(daemon, body, token=token, **headers).json()


def test_prompts_get_of_an_unknown_prompt_is_an_invalid_params_error_naming_the_prompts(
    daemon: Daemon,
) -> None:
    """The SDK answered error code 0; the spec's code for an unknown prompt name is -32602. Over
    the pre-2026 handshake and through the SDK's own client (the 2026 protocol it speaks first)."""
    token = daemon.token()
    error = rpc(daemon, token, open_session(daemon, token), "prompts/get", {"name": "nope"})
    assert error["code"] == -32602
    assert "no prompt named 'nope'" in error["message"] and "no prompts" in error["message"]

    async def through_the_client() -> Any:
        async with mcp_client(daemon.url, token) as client:
            with pytest.raises(Exception) as raised:
                await client.get_prompt("nope")
        return raised.value

    refused = anyio.run(through_the_client)
    assert getattr(refused, "code", None) == -32602, refused


def test_a_write_its_client_cancels_after_it_began_lands_whole_and_the_daemon_logs_that_it_did(
    vault: Path, config_home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``notifications/cancelled`` for a write already running: the spec lets a receiver ignore a
    cancel for a request that cannot be cancelled, and a write is not stopped halfway, so it lands
    whole while the SDK answers -32800. That outcome was hidden (a retry without an idempotency key
    wrote it twice); the daemon's log now says the write landed, naming the request and the note."""
    entered, release = threading.Event(), threading.Event()
    append = Memory.append

    def held(self: Memory, *args: Any, **kwargs: Any) -> Any:
        entered.set()  # the write has begun: its client cancels it now
        assert release.wait(30)
        return append(self, *args, **kwargs)

    monkeypatch.setattr(Memory, "append", held)
    with running_daemon(vault, token_path(vault)) as daemon, caplog.at_level(logging.WARNING):
        token = daemon.token()
        session = open_session(daemon, token)
        headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
        arguments = {"content": "The staging cluster runs on port 6543.", "kind": "reference"}
        call = {"jsonrpc": "2.0", "id": 21, "method": "tools/call"}
        call["params"] = {"name": "memory_append", "arguments": arguments}
        answered: list[httpx2.Response] = []
        caller = threading.Thread(target=lambda: answered.append(send(daemon, call, token=token, **headers)))
        caller.start()
        assert entered.wait(30)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
        cancel["params"] = {"requestId": 21, "reason": "the user pressed stop"}
        assert send(daemon, cancel, token=token, **headers).status_code == 202
        ping = send(daemon, {"jsonrpc": "2.0", "id": 22, "method": "ping"}, token=token, **headers)
        assert "result" in ping.json()  # the session's messages are taken in order: the cancel was
        release.set()
        caller.join(30)
        assert answered and answered[0].json()["error"]["code"] == -32800  # the SDK's answer
        notes = [p for p in vault.rglob("*.md") if "port 6543" in p.read_text(encoding="utf-8")]
        assert len(notes) == 1  # the write landed whole
        note_id = yaml.safe_load(notes[0].read_text(encoding="utf-8").split("---\n")[1])["id"]
    landed = [r.getMessage() for r in caplog.records if "cancelled after it had begun" in r.getMessage()]
    assert len(landed) == 1, [r.getMessage() for r in caplog.records]
    assert "memory_append (request 21" in landed[0] and note_id in landed[0]
    assert "idempotency key" in landed[0]
