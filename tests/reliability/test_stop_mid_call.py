"""A supervisor's SIGTERM while a long tool call runs (issue 13, item 18): a real `vaultmem serve`
process, and a real MCP client that holds its event stream open as hosts do."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import anyio
from _support import ServeProcess, git
from mcp_harness import mcp_client, wait_for

from vaultmem.vault.init import init_vault
from vaultmem.vault.locks import ProcessLock

ROWS = 50
#: uvicorn's own stop waits 5 s for connections, then cancels what is left: the call below lasts longer.
LONG_CALL = 6.5


def holds_open(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` open (Linux)."""
    fds = Path(f"/proc/{pid}/fd")
    for fd in fds.iterdir():
        try:
            if os.readlink(fd) == str(path):
                return True
        except OSError:
            continue  # closed meanwhile
    return False


def test_sigterm_during_a_long_bulk_create_still_answers_the_call(tmp_path: Path) -> None:
    """The call used to finish and commit while its answer was dropped (uvicorn's stop gave up
    after 5 s, since the client's event stream never closes): a retry would have written every
    row twice. Now the event streams end at once and the call is answered before the exit.

    The call is made long by holding the vault's cross-process write lock, as another vaultmem
    process writing would; the daemon has the lock file open exactly while it waits for it."""
    vault, _ = init_vault(tmp_path / "vault")
    daemon = ServeProcess(vault, tmp_path / "config")
    thoughts = [{"content": f"Bulk fact number {i}: the kettle holds {i} ml."} for i in range(ROWS)]
    answer: dict[str, Any] = {}

    def call() -> None:
        async def run() -> None:
            async with mcp_client(daemon.url, daemon.token, mode="legacy") as client:
                # As hosts do, and so that the client checks the answer without asking for the
                # tool list again, from a daemon that will be gone by then.
                await client.list_tools()
                answer["result"] = await client.call_tool(
                    "memory_store", {"action": "bulk_create", "thoughts": thoughts}
                )

        try:
            anyio.run(run)
        except BaseException as exc:  # reported by the assertion below
            answer["error"] = exc

    lock_file = vault / ".vaultmem" / "write.lock"
    client = threading.Thread(target=call)
    try:
        with ProcessLock(lock_file):
            client.start()
            wait_for(lambda: holds_open(daemon.pid, lock_file), timeout=60)  # the call waits for it
            daemon.process.send_signal(signal.SIGTERM)
            time.sleep(LONG_CALL)  # the call's own length, past uvicorn's 5 s (not a synchronisation)
        code = daemon.stop(timeout=120)
    finally:
        daemon.kill()
        client.join(timeout=120)
    assert code == 0
    assert "error" not in answer, answer["error"]
    result = answer["result"]
    assert not result.is_error, result.content
    assert result.structured_content["result"]["meta"]["counts"]["created"] == ROWS
    assert len(list((vault / "memory").rglob("bulk-fact-number-*.md"))) == ROWS
    assert "bulk_create" in git(vault, "log", "--format=%s")
