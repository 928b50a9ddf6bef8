"""Scenario 2: I/O faults at every write-path call site.

ENOSPC, EIO and EACCES are injected at the write of the temp file, its fsync, the rename over the
note, and the git commit; for a new note (append, capture) and a change to an existing one (forget).
Pass: a structured error (a VaultmemError, or capture's ``{success: false}``), the original file
byte-identical, no temp file, neither the daily cap nor the idempotency key consumed, and the service
still serving. A git failure comes after the note is durable: the write is acknowledged and the
commit is retried until git works again. A read-only vault (a real read-only bind mount) gives a
clear error while the watcher keeps running.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pathlib
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from _support import temp_files
from conftest import FakeClock, git, set_cap, snapshot
from layers import parts, watcher
from mcp import Client

from vaultmem.config import Settings
from vaultmem.errors import VaultmemError
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.mcp.tools import build_mcp_server
from vaultmem.memory import Memory
from vaultmem.vault import history

ERRNOS = [errno.ENOSPC, errno.EIO, errno.EACCES]
SITES = ["write", "fsync", "replace"]


class Faults:
    """Makes one call site fail with one errno, for files under the vault only."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, vault: Path) -> None:
        self.vault = str(vault.resolve())
        self.site: str | None = None
        self.code = errno.EIO
        self.hits = 0
        real_write, real_fsync, real_replace = os.write, os.fsync, pathlib.Path.replace
        real_run = history.subprocess.run

        def in_vault_fd(fd: int) -> bool:
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                return False
            return target.startswith(self.vault + os.sep) and "/.vaultmem/" not in target

        def fail() -> None:
            self.hits += 1
            raise OSError(self.code, os.strerror(self.code))

        def write(fd: int, data: Any) -> int:
            if self.site == "write" and in_vault_fd(fd):
                fail()
            return real_write(fd, data)

        def fsync(fd: int) -> None:
            if self.site == "fsync" and in_vault_fd(fd) and not os.path.isdir(f"/proc/self/fd/{fd}"):
                fail()
            real_fsync(fd)

        def replace(path: pathlib.Path, target: Any) -> pathlib.Path:
            name = str(target)
            if self.site == "replace" and name.startswith(self.vault) and "/.vaultmem/" not in name:
                fail()
            return real_replace(path, target)

        def run(args: Any, *a: Any, **kw: Any) -> subprocess.CompletedProcess[bytes]:
            if self.site == "commit" and "commit" in list(args):
                self.hits += 1
                message = f"fatal: unable to write new index file: {os.strerror(self.code)}"
                return subprocess.CompletedProcess(args, 128, b"", message.encode())
            return real_run(args, *a, **kw)  # type: ignore[no-any-return]

        monkeypatch.setattr(os, "write", write)
        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(pathlib.Path, "replace", replace)
        monkeypatch.setattr(history.subprocess, "run", run)

    @contextlib.contextmanager
    def at(self, site: str, code: int) -> Iterator[None]:
        self.site, self.code, self.hits = site, code, 0
        try:
            yield
        finally:
            self.site = None


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch, vault: Path) -> Faults:
    return Faults(monkeypatch, vault)


def durable_service(vault: Path, clock: FakeClock) -> Memory:
    """fsync on (the site under test); commits inline, so a git failure is seen at once."""
    return Memory(Settings.resolve(vault, durable=True), clock=clock, index=False, background_commits=False)


def unchanged(vault: Path, before: dict[str, bytes]) -> None:
    after = snapshot(vault)
    assert after == before, sorted(set(after.items()) ^ set(before.items()))[:3]
    assert temp_files(vault) == []


@pytest.mark.parametrize("code", ERRNOS, ids=errno.errorcode.get)
@pytest.mark.parametrize("site", SITES)
def test_a_failed_new_note_leaves_nothing_and_consumes_neither_cap_nor_key(
    vault: Path, clock: FakeClock, faults: Faults, site: str, code: int
) -> None:
    set_cap(vault, 1)  # a consumed cap would refuse the retry below
    service = durable_service(vault, clock)
    try:
        before = snapshot(vault)
        with faults.at(site, code):
            with pytest.raises(VaultmemError) as info:
                service.append("The build cache lives in /var/cache/b.", "reference", idempotency_key="k1")
            captured = service.capture("a thought about caches", title="Cache thought")
        assert faults.hits >= 1
        assert os.strerror(code) in str(info.value)
        assert captured["success"] is False and os.strerror(code) in captured["error"]
        unchanged(vault, before)
        retried = service.append("The build cache lives in /var/cache/b.", "reference", idempotency_key="k1")
        assert retried["deduplicated"] is False
        assert service.append("again", "reference", idempotency_key="k1")["id"] == retried["id"]
    finally:
        service.close()
    assert git(vault, "status", "--porcelain", "--untracked-files=all").strip() == ""


@pytest.mark.parametrize("code", ERRNOS, ids=errno.errorcode.get)
@pytest.mark.parametrize("site", SITES)
def test_a_failed_change_leaves_the_note_byte_identical(
    vault: Path, clock: FakeClock, faults: Faults, site: str, code: int
) -> None:
    service = durable_service(vault, clock)
    try:
        note = service.append("Deploys go out on Tuesdays.", "reference")
        before = snapshot(vault)
        with faults.at(site, code), pytest.raises(VaultmemError):
            service.forget(note["id"], reason="wrong day")
        with faults.at(site, code), pytest.raises(VaultmemError):
            service.append("Deploys go out on Tuesdays.", "reference")  # a reinforce
        unchanged(vault, before)
        assert service.forget(note["id"])["already_deleted"] is False
    finally:
        service.close()


@pytest.mark.parametrize("code", ERRNOS, ids=errno.errorcode.get)
def test_a_failed_commit_keeps_the_acknowledged_write_and_commits_it_later(
    vault: Path, clock: FakeClock, faults: Faults, code: int
) -> None:
    """The note is durable before git runs: a refused commit is retried, never lost."""
    service = durable_service(vault, clock)
    try:
        with faults.at("commit", code):
            first = service.append("Backups run at 02:00.", "reference", idempotency_key="b1")
        assert faults.hits >= 1
        assert service.note(first["id"]).body == "Backups run at 02:00.\n"
        assert temp_files(vault) == []
        second = service.append("Restores are tested monthly.", "reference")  # git works again
        log = git(vault, "log", "--format=%B")
        assert first["id"] in log and second["id"] in log
        assert service.append("x", "reference", idempotency_key="b1")["deduplicated"] is True
    finally:
        service.close()
    assert git(vault, "status", "--porcelain", "--untracked-files=all").strip() == ""


def test_a_fault_through_mcp_is_a_tool_error_and_the_server_keeps_serving(
    vault: Path, tmp_path: Path, faults: Faults
) -> None:
    settings = Settings.resolve(vault, tmp_path / "state", durable=True)
    with Memory(settings, embedder=FakeEmbedder()) as runtime:
        runtime.reconcile()
        server = build_mcp_server(runtime)
        before = snapshot(vault)

        async def session() -> dict[str, Any]:
            async with Client(server) as client:
                with faults.at("write", errno.ENOSPC):
                    failed = await client.call_tool(
                        "memory_append", {"content": "disk full test", "kind": "reference"}
                    )
                    captured = await client.call_tool("memory_capture", {"content": "disk full capture"})
                assert failed.is_error
                text = " ".join(getattr(b, "text", "") for b in failed.content)
                assert "disk is full" in text
                assert captured.structured_content is not None
                assert captured.structured_content["success"] is False
                unchanged(vault, before)
                arguments = {"content": "disk full test", "kind": "reference"}
                ok = await client.call_tool("memory_append", arguments)
                assert not ok.is_error and ok.structured_content is not None
                found = await client.call_tool("memory_search", {"query": "disk full test"})
                assert found.structured_content is not None
                return dict(ok.structured_content) | {"hits": found.structured_content["results"]}

        result = anyio.run(session)
        assert result["hits"][0]["id"] == result["id"]


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """A real read-only bind mount of ``path`` over itself (needs root; skipped otherwise)."""
    mounted = subprocess.run(["mount", "--bind", str(path), str(path)], capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip("cannot bind-mount here (needs root)")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], capture_output=True, check=True)
        yield
    finally:
        subprocess.run(["umount", str(path)], capture_output=True, check=True)


def test_a_read_only_vault_gives_a_clear_error_and_the_watcher_keeps_running(
    vault: Path, tmp_path: Path
) -> None:
    settings = Settings.resolve(vault, tmp_path / "state", durable=True, commit_quiet_period=0.2)
    with Memory(settings, embedder=FakeEmbedder()) as runtime:
        runtime.reconcile()
        runtime.start_watching()
        watching = watcher(runtime)
        before = snapshot(vault)
        with read_only(vault):
            with pytest.raises(VaultmemError, match="read-only file system"):
                runtime.append("Written to a read-only vault.", "reference")
            result = runtime.capture("captured on a read-only vault")
            assert result["success"] is False and "read-only" in result["error"]
        unchanged(vault, before)
        assert watching is not None and watching._thread is not None and watching._thread.is_alive()
        hand = vault / "memory" / "semantic" / "after-remount.md"
        hand.write_text("---\ntitle: After remount\n---\nThe vault is writable again.\n", encoding="utf-8")
        wait(lambda: "memory/semantic/after-remount.md" in parts(runtime).index.path_hashes())
        assert runtime.append("Written after the remount.", "reference")["deduplicated"] is False


def wait(predicate: Callable[[], bool], timeout: float = 15.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)
