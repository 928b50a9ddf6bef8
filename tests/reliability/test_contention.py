"""Scenario 3: contention. 8 MCP clients x 50 writes with overlapping idempotency keys, against a
real daemon, while a "person" appends lines to the same notes, holds git's ``index.lock`` and runs
``git commit`` in a loop.

Pass: one note per key; no lost update (every line the person wrote is still there, every forget
and every reinforce counted); every acknowledged write in git; the person's live lock is never
deleted (their own unlink of it would fail); bounded retries (the run ends within its timeout).
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio
from _support import git, notes_by_id, temp_files
from mcp_harness import mcp_client, running_daemon

from vaultmem.filing.rules import idempotency_tag

CLIENTS, WRITES, KEYS = 8, 50, 60
FACTS = [f"Shared fact {n}: the release train leaves at {n}:00." for n in range(3)]


class Person:
    """Edits notes by hand and runs git, as a person in a terminal would, until told to stop."""

    def __init__(self, vault: Path, known: dict[str, str], lock: threading.Lock) -> None:
        self.vault = vault
        self.known = known  # key -> note id, as the clients learn them
        self.known_lock = lock
        self.markers: dict[str, list[str]] = defaultdict(list)  # note id -> lines appended
        self.stop = threading.Event()
        self.locks_held = 0
        self.commits = 0
        self.errors: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        rng = random.Random(8)
        index_lock = self.vault / ".git" / "index.lock"
        n = 0
        while not self.stop.is_set():
            n += 1
            with self.known_lock:
                ids = sorted(set(self.known.values()))
            paths = {i: rel for i, (rel, _m, _b) in notes_by_id(self.vault).items()}
            for note_id in rng.sample(ids, min(3, len(ids))):
                line = f"\nperson edit {n} of {note_id[:8]}\n"
                with open(self.vault / paths[note_id], "a", encoding="utf-8") as handle:
                    handle.write(line)  # a direct, appending save
                self.markers[note_id].append(line.strip())
            try:
                fd = os.open(index_lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass  # vaultmem's git holds it right now
            else:
                inode = os.fstat(fd).st_ino
                self.locks_held += 1
                time.sleep(rng.uniform(0.02, 0.15))  # a person's git, holding the lock
                os.close(fd)
                try:
                    if os.stat(index_lock).st_ino != inode:
                        self.errors.append("index.lock was replaced while the person held it")
                    os.unlink(index_lock)
                except FileNotFoundError:
                    self.errors.append("index.lock was deleted while the person held it")
            git(self.vault, "add", "-A", check=False)
            self.commits += _commit(self.vault)


#: A write that read a note the person then saved is refused as retryable ("run the same call
#: again", ChangedOnDisk); an agent runs it again. Bounded: more than this many refusals in a row fails.
RETRIES = 5


async def call(session: Any, tool: str, arguments: dict[str, Any]) -> Any:
    """Call a tool, running it again (boundedly) when the daemon says the refusal is retryable."""
    for _ in range(RETRIES):
        result = await session.call_tool(tool, arguments)
        text = " ".join(getattr(part, "text", "") for part in result.content or [])
        if not (result.is_error and "run the same call again" in text):
            return result
        RETRIED[tool] = RETRIED.get(tool, 0) + 1
    return result


RETRIED: dict[str, int] = {}


def _commit(vault: Path) -> bool:
    import subprocess

    result = subprocess.run(
        ["git", "-c", "user.name=Person", "-c", "user.email=p@p", "commit", "-q", "-m", "by hand"],
        cwd=vault,
        capture_output=True,
        check=False,
    )
    return result.returncode == 0


def test_8_clients_x_50_writes_with_a_person_editing_and_committing(vault: Path, tmp_path: Path) -> None:
    acks: list[tuple[str, str, dict[str, Any]]] = []  # (tool, key or fact, result)
    forgotten: set[str] = set()
    known: dict[str, str] = {}
    known_lock = threading.Lock()
    person = Person(vault, known, known_lock)

    with running_daemon(vault, tmp_path / "token", git_lock_timeout=10.0) as daemon:
        url, token = daemon.url, daemon.token()

        async def client(c: int) -> None:
            rng = random.Random(c)
            async with mcp_client(url, token) as session:
                for i in range(WRITES):
                    if i % 10 == 9:
                        fact = FACTS[rng.randrange(len(FACTS))]
                        result = await call(session, "memory_append", {"content": fact, "kind": "reference"})
                        assert not result.is_error, result.content
                        acks.append(("fact", fact, dict(result.structured_content or {})))
                        continue
                    if i % 10 == 4 and known:
                        with known_lock:
                            target = rng.choice(sorted(known.values()))
                        result = await call(session, "memory_forget", {"id": target})
                        assert not result.is_error, result.content
                        forgotten.add(target)
                        continue
                    key = f"key-{(c * 13 + i * 7) % KEYS}"
                    result = await call(
                        session,
                        "memory_append",
                        {"content": f"client {c} write {i}", "kind": "fix", "idempotency_key": key},
                    )
                    assert not result.is_error, result.content
                    data = dict(result.structured_content or {})
                    acks.append(("key", key, data))
                    with known_lock:
                        known.setdefault(key, data["id"])

        async def main() -> None:
            async with anyio.create_task_group() as group:
                for c in range(CLIENTS):
                    group.start_soon(client, c)

        person.thread.start()
        started = time.monotonic()
        try:
            anyio.run(main)
        finally:  # a failing client must not leave the person's git looping on index.lock
            elapsed = time.monotonic() - started
            person.stop.set()
            person.thread.join(timeout=60)
        assert not person.thread.is_alive()
    print(
        f"contention: {len(acks) + len(forgotten)} calls in {elapsed:.1f}s; the person held index.lock "
        f"{person.locks_held} times and committed {person.commits} times; retried after a refusal: {RETRIED}"
    )
    assert person.errors == []
    assert person.locks_held > 5

    notes = notes_by_id(vault)
    # One note per key, and every acknowledgement of a key names it.
    ids_per_key: dict[str, set[str]] = defaultdict(set)
    for tool, key, result in acks:
        if tool == "key":
            ids_per_key[key].add(result["id"])
    assert all(len(ids) == 1 for ids in ids_per_key.values())
    by_tag: dict[str, list[str]] = defaultdict(list)
    for note_id, (_rel, meta, _body) in notes.items():
        for tag in meta.get("tags") or []:
            if tag.startswith("idem-"):
                by_tag[tag].append(note_id)
    for key, ids in ids_per_key.items():
        assert by_tag[idempotency_tag(key)] == list(ids)
    # No lost update: the person's lines, the forgets, and each reinforce of a shared fact.
    for note_id, lines in person.markers.items():
        body = notes[note_id][2]
        assert all(line in body for line in lines), f"a hand edit of {note_id} was lost"
    for note_id in forgotten:
        assert notes[note_id][1]["status"] == "deleted"
    for fact in FACTS:
        told = [r for tool, f, r in acks if tool == "fact" and f == fact]
        if told:
            (twin,) = {r["id"] for r in told}
            assert notes[twin][1]["occurrences"] == len(told)
    # Every acknowledged write in git, nothing left over. (The person's `git add -A` may commit a
    # note before vaultmem does; then the person's commit holds it, and vaultmem's finds it done.)
    assert git(vault, "status", "--porcelain", "--untracked-files=all").strip() == ""
    tracked = set(git(vault, "ls-files").split("\n"))
    for note_id in {next(iter(ids)) for ids in ids_per_key.values()} | forgotten:
        assert notes[note_id][0] in tracked
    assert temp_files(vault) == []
    assert not (vault / ".git" / "index.lock").exists()
