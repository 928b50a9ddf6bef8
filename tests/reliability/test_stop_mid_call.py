"""A supervisor's SIGTERM while a long tool call runs (issue 13, item 18): a real `vaultmem serve`
process, and a real MCP client that holds its event stream open as hosts do; and a bulk_create
retried with its idempotency key, over HTTP."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import anyio
from _support import ServeProcess, git
from mcp_harness import mcp_client, running_daemon, wait_for

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

    lock_file = vault / ".git" / "vaultmem-write.lock"
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


def test_a_bulk_create_retried_with_its_idempotency_key_writes_each_row_once(
    vault: Path, tmp_path: Path
) -> None:
    """The other half of item 18: a client that lost its answer can retry the same batch."""
    key = "import-2026-12-01-batch-7"
    rows = [{"content": f"Retry-safe fact {i}: the shelf holds {i} jars."} for i in range(3)]

    with running_daemon(vault, tmp_path / "token") as daemon:

        async def run() -> list[Any]:
            async with mcp_client(daemon.url, daemon.token()) as client:
                answers = []
                for thoughts in (rows[:2], rows, rows):  # a partial first call, then two retries
                    arguments = {"action": "bulk_create", "thoughts": thoughts, "idempotency_key": key}
                    answers.append((await client.call_tool("memory_store", arguments)).structured_content)
                refused = await client.call_tool(
                    "memory_store", {"action": "create", "content": "one", "idempotency_key": key}
                )
                answers.append(refused)
                return answers

        first, second, third, refused = anyio.run(run)
    ids = [[row["thought"]["id"] for row in answer["result"]["items"]] for answer in (first, second, third)]
    assert ids[1][:2] == ids[0] and ids[2] == ids[1]  # the same thoughts answered again
    assert [row.get("replayed", False) for row in second["result"]["items"]] == [True, True, False]
    assert {k: second["result"]["meta"]["counts"][k] for k in ("created", "replayed", "failed")} == {
        "created": 3, "replayed": 2, "failed": 0
    }  # fmt: skip
    assert third["result"]["meta"]["counts"]["replayed"] == 3
    files = sorted((vault / "memory").rglob("retry-safe-fact-*.md"))
    assert len(files) == 3
    added = git(
        vault, "log", "--diff-filter=A", "--name-only", "--format=", "--", "*retry-safe-fact-*"
    ).split()
    assert sorted(added) == [f.relative_to(vault).as_posix() for f in files]  # each written once
    assert not any(key in f.read_text(encoding="utf-8") for f in files)  # stored hashed only
    assert all(not t.startswith("idem-") for r in third["result"]["items"] for t in r["thought"]["tags"])
    assert refused.is_error and "bulk_create only" in str(refused.content)
