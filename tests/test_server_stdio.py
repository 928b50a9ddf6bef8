"""The stdio server stops cleanly: on end of input, SIGINT or SIGTERM, with every write committed."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from mcp_harness import fake_stdio_command, stdio_env


def rpc(process: subprocess.Popen[bytes], message: dict[str, Any]) -> dict[str, Any] | None:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write((json.dumps(message) + "\n").encode())
    process.stdin.flush()
    if "id" not in message:
        return None
    reply: dict[str, Any] = json.loads(process.stdout.readline())
    return reply


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGINT", "end of input"])
def test_the_stdio_server_stops_cleanly_and_commits_what_it_wrote(
    vault: Path, tmp_path: Path, stop: str
) -> None:
    command, args = fake_stdio_command(vault)
    process = subprocess.Popen(
        [command, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=stdio_env(),
    )
    try:
        client = {"name": "t", "version": "0"}
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
        rpc(process, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        rpc(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        arguments = {"content": "Written just before the stop.", "kind": "fix"}
        call = {"name": "memory_append", "arguments": arguments}
        reply = rpc(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        assert reply is not None
        note_id = reply["result"]["structuredContent"]["id"]
        if stop == "end of input":
            assert process.stdin is not None
            process.stdin.close()
        else:
            process.send_signal(getattr(signal, stop))
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None and not stream.closed:
                stream.close()
    assert note_id in git(vault, "log", "--format=%B")
    assert git(vault, "status", "--porcelain", "--untracked-files=all").strip() == ""
