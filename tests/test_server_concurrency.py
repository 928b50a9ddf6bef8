"""Many clients, and more than one process, on one vault: no errors, no lost writes, all in git."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from conftest import OpenService, git, note_files, set_cap
from layers import parts
from mcp import Client, StdioServerParameters
from mcp_harness import fake_stdio_command, mcp_client, running_daemon, stdio_env, structured

from vaultmem.notes.frontmatter import parse

VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))

CLIENTS = 8
OPS_PER_CLIENT = 50


def ids_in_git(vault: Path) -> set[str]:
    log = git(vault, "log", "--format=%B")
    return {line.split(": ", 1)[1] for line in log.splitlines() if line.startswith("id: ")}


def test_eight_clients_of_fifty_mixed_calls_lose_nothing_and_every_write_is_in_git(
    vault: Path, tmp_path: Path
) -> None:
    """Issue: "8 concurrent MCP clients x 50 mixed appends and searches: no errors, no lost writes,
    every write in git"."""
    set_cap(vault, 10_000)  # the default cap of 200 notes a day would refuse some of the 400 writes
    written: list[str] = []
    errors: list[str] = []

    with running_daemon(vault, tmp_path / "token") as daemon:
        url, token = daemon.url, daemon.token()

        async def one_client(n: int) -> None:
            rng = random.Random(n)
            async with mcp_client(url, token) as client:
                for i in range(OPS_PER_CLIENT):
                    if rng.random() < 0.6:
                        result = await client.call_tool(
                            "memory_append",
                            {"content": f"client {n} note {i}: {rng.random()}", "kind": "reference"},
                        )
                        if result.is_error:
                            errors.append(str(result.content))
                        else:
                            written.append(structured(result)["id"])
                    else:
                        result = await client.call_tool("memory_search", {"query": f"client {n} note"})
                        if result.is_error:
                            errors.append(str(result.content))

        async def main() -> None:
            with anyio.fail_after(240):
                async with anyio.create_task_group() as group:
                    for n in range(CLIENTS):
                        group.start_soon(one_client, n)

        anyio.run(main)
    # The daemon has stopped: its commit queue is flushed.
    assert errors == []
    assert len(written) == len(set(written)) > CLIENTS * OPS_PER_CLIENT // 3
    on_disk = {parse(p.read_text(encoding="utf-8")).meta.get("id") for p in note_files(vault)}
    assert set(written) <= on_disk
    assert set(written) <= ids_in_git(vault)
    assert git(vault, "status", "--porcelain", "--untracked-files=all").strip() == ""


def test_a_daemon_and_a_stdio_server_on_one_vault_never_lose_or_duplicate_a_write(
    vault: Path, tmp_path: Path
) -> None:
    """Issue: "Two processes on one vault (a daemon and a stdio server ...) never lose a write".

    Both processes write the same idempotency keys and the same contents at once: each key and
    each content must end up as exactly one note, which needs each process to see the other's
    writes before it decides (the write-generation check under the cross-process lock)."""
    rounds = 20
    results: dict[str, list[dict[str, Any]]] = {"http": [], "stdio": []}

    async def writer(client: Client, name: str) -> None:
        for i in range(rounds):
            keyed = await client.call_tool(
                "memory_append",
                {"content": f"{name} keyed {i}", "kind": "fix", "idempotency_key": f"key-{i}"},
            )
            shared = await client.call_tool(
                "memory_append", {"content": f"shared content {i}", "kind": "fix"}
            )
            results[name].extend([structured(keyed), structured(shared)])

    with running_daemon(vault, tmp_path / "token") as daemon:
        command, args = fake_stdio_command(vault)
        params = StdioServerParameters(command=command, args=args, env=stdio_env(), cwd=str(tmp_path))

        async def main() -> None:
            with anyio.fail_after(180):
                async with (
                    mcp_client(daemon.url, daemon.token()) as http,
                    Client(params, cache=None) as stdio,
                    anyio.create_task_group() as group,
                ):
                    group.start_soon(writer, http, "http")
                    group.start_soon(writer, stdio, "stdio")

        anyio.run(main)

    for i in range(rounds):
        keyed = {results[name][2 * i]["id"] for name in results}
        shared = {results[name][2 * i + 1]["id"] for name in results}
        assert len(keyed) == 1, f"idempotency key key-{i} wrote {len(keyed)} notes"
        assert len(shared) == 1, f"content {i} was written {len(shared)} times"
    all_ids = {r["id"] for rs in results.values() for r in rs}
    on_disk = {parse(p.read_text(encoding="utf-8")).meta.get("id") for p in note_files(vault)}
    assert all_ids <= on_disk and all_ids <= ids_in_git(vault)
    assert len(note_files(vault)) == 2 * rounds


def test_a_cli_write_after_the_state_directory_was_deleted_is_seen_by_the_next_write(
    open_service: OpenService,
) -> None:
    """The state directory is derived and may be deleted (`rm -rf .vaultmem`, `git clean -fdx`),
    even while a process has the vault open. That process kept its descriptor of the deleted write
    marker, so a CLI write (which made a new marker) went unseen: a retry of the CLI's idempotency
    key wrote a second note. (A daemon's watcher catches up soon after; a process without one, or
    a write inside the watcher's delay, did not.)"""
    service = open_service()
    service.append("The kiln fires at cone six.", "reference")
    vault = service.settings.vault
    shutil.rmtree(vault / ".vaultmem")
    _the_cli_and_the_service_write_one_note(service, vault, "glaze-1")


def _the_cli_and_the_service_write_one_note(service: Any, vault: Path, key: str) -> None:
    """`vaultmem append` with the idempotency key ``key``, then the same write through ``service``:
    one note, the CLI's."""
    done = subprocess.run(
        [VAULTMEM, "--vault", str(vault), "append", "--kind", "reference", "--idempotency-key", key,
         "--json", "Glazes mature at cone ten."],
        capture_output=True, text=True, env=stdio_env(), timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = json.loads(done.stdout)
    retried = service.append("Glazes mature at cone ten.", "reference", idempotency_key=key)
    assert retried["id"] == written["id"]
    assert len([p for p in note_files(vault) if "glaze" in p.name]) == 1


def test_a_cli_write_with_another_state_dir_is_seen_by_the_next_write(
    open_service: OpenService, tmp_path: Path
) -> None:
    """docs/sync.md keeps the state directory outside a synced folder (`VAULTMEM_STATE_DIR`); a
    shell without that variable runs its command with the default one. The write lock and the
    write marker lived in the state directory, so the two processes took different locks and never
    saw each other's writes: a retry of the CLI's idempotency key through the open process wrote a
    second note. They live in the git directory now, one per repository. And the state directory
    deleted while a process holds the lock leaves the lock held."""
    service = open_service(state_dir=str(tmp_path / "elsewhere"))
    service.append("The kiln fires at cone six.", "reference")
    vault = service.settings.vault
    _the_cli_and_the_service_write_one_note(service, vault, "glaze-2")
    assert (vault / ".vaultmem").is_dir()  # the CLI's own state directory, not the service's
    shutil.rmtree(tmp_path / "elsewhere")
    (vault / "vaultmem.yaml").write_text("write_lock_timeout: 0.5\n", encoding="utf-8")
    with parts(service).writer.exclusive():  # the service holds the write lock ...
        busy = subprocess.run(
            [VAULTMEM, "--vault", str(vault), "append", "--kind", "reference", "--json", "Cone 6 is 1222 C."],
            capture_output=True, text=True, timeout=120, check=False,
            env=stdio_env(VAULTMEM_STATE_DIR=str(tmp_path / "elsewhere")),
        )  # fmt: skip
    assert busy.returncode != 0 and "another vaultmem process" in busy.stderr, busy  # ... still
