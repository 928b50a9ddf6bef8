"""What the daemon answers a client that got something wrong, through real HTTP against a real
daemon: a missing token (how to get one), a session the daemon no longer holds, a protocol version
it does not speak, and malformed ``tools/call`` or ``prompts/get`` requests (each a JSON-RPC error
whose message says what to send instead); and every tool parameter a client's schema converter
reads has a type."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp_harness import mcp_client, running_daemon, stdio_env, tls_context
from test_server_http import INITIALIZE, MCP_HEADERS

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
