"""Scenario 7: hostile input, through MCP and in vault files.

Each input is refused or quarantined within 100 ms of CPU time (the process's, so a loaded machine
does not make the test flaky while a quadratic path still fails it) and bounded memory; no existing file is
rewritten; nothing is written outside the vault; the server keeps serving. A hypothesis fuzz then
drives every tool's arguments through the MCP server object: no unhandled exception, no protocol
error, and nothing ever written outside the vault.
"""

from __future__ import annotations

import contextlib
import os
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from layers import parts, sync_path
from mcp import Client

from vaultmem.config import Settings
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.mcp.tools import build_mcp_server
from vaultmem.memory import Memory

BUDGET_S = 0.1
MEMORY_BUDGET = 64 * 1024 * 1024
BOMB = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]" for i in range(8)]
)
HOSTILE_FILES: dict[str, bytes] = {
    "alias-bomb": f"---\n{BOMB}\n---\nboom\n".encode(),
    "ten-mb-frontmatter": b"---\n" + b"k: " + b"v" * (10 * 1024 * 1024) + b"\n---\nb\n",
    "yaml-list": b"---\n- a\n- b\n---\nbody\n",
    "bom-crlf": "\ufeff---\r\ntitle: BOM and CRLF\r\n---\r\nbody\r\n".encode(),
    "json-frontmatter": b'---\n{"title": "json", "status": "active"}\n---\nbody\n',
    "python-object": b"---\nx: !!python/object/apply:os.system ['touch /tmp/pwned']\n---\nbody\n",
    "duplicate-keys": b"---\ntitle: one\ntitle: two\n---\nbody\n",
    "nul-bytes": b"---\ntitle: a\x00b\n---\nbo\x00dy\n",
    "ten-mb-body": b"---\ntitle: big\n---\n" + b"word " * (2 * 1024 * 1024),
}
#: Titles, slugs, projects and tags a model (or an attacker driving one) might send.
HOSTILE_NAMES = [
    "../../../etc/passwd",
    "/etc/passwd",
    "C:\\Windows\\system32",
    "a\x00b",
    "CON",
    "nul.txt",
    "trailing dots...",
    "x" * 300,
    "é" * 160,  # 320 bytes of UTF-8
    unicodedata.normalize("NFD", "Café crème"),
    ".hidden",
    "---\nid: 0190a5f0-0000-7000-8000-000000000001\n---",
]


@pytest.fixture
def runtime(vault: Path, tmp_path: Path) -> Iterator[Memory]:
    settings = Settings.resolve(vault, tmp_path / "state", durable=False)
    with Memory(settings, embedder=FakeEmbedder()) as opened:
        opened.reconcile()
        yield opened


def outside(tmp_path: Path) -> set[str]:
    """Every path under tmp_path but the vault and the state directory (must never change)."""
    return {
        p.relative_to(tmp_path).as_posix()
        for p in tmp_path.rglob("*")
        if p.relative_to(tmp_path).parts[0] not in ("vault", "state")
    }


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> int:
    """Reset the kernel's peak-RSS mark (VmHWM) and return the current RSS. (tracemalloc is no
    use here: stopping it while LanceDB's threads allocate crashes CPython 3.11.)"""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")
    return _status("VmRSS")


def measured(fn: Any) -> tuple[Any, float, int]:
    """``fn()``, its wall time, and how far the process's peak RSS rose above its RSS before."""
    base = _reset_peak()
    started = time.process_time()
    result = fn()
    return result, time.process_time() - started, _status("VmHWM") - base


def test_hostile_files_are_quarantined_quickly_and_left_untouched(
    vault: Path, tmp_path: Path, runtime: Memory
) -> None:
    folder = vault / "memory" / "semantic"
    secret = tmp_path / "secret.md"
    secret.write_text("---\ntitle: secret\n---\nnot in the vault\n", encoding="utf-8")
    os.symlink(secret, folder / "link-out.md")
    for name, data in HOSTILE_FILES.items():
        (folder / f"{name}.md").write_bytes(data)
    before, out_before = snapshot(vault), outside(tmp_path)
    slow = {}
    for rel in sorted(p.relative_to(vault).as_posix() for p in folder.iterdir()):
        outcome, elapsed, peak = measured(lambda rel=rel: sync_path(runtime, rel))
        assert peak < MEMORY_BUDGET, (rel, peak)
        if elapsed > BUDGET_S:
            slow[rel] = (outcome, round(elapsed, 3))
    assert slow == {}
    runtime.reconcile()  # and a full reconcile over them
    problems = parts(runtime).catalog.problems
    for name in ("alias-bomb", "ten-mb-frontmatter", "yaml-list", "python-object", "ten-mb-body"):
        assert f"memory/semantic/{name}.md" in problems, name
    assert "memory/semantic/link-out.md" in problems
    assert snapshot(vault) == before and outside(tmp_path) == out_before
    assert not Path("/tmp/pwned").exists()
    assert runtime.append("still serving", "reference")["deduplicated"] is False


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    result = await client.call_tool(tool, arguments)
    data = dict(result.structured_content or {})
    return (not result.is_error and data.get("success", True) is not False), data


def test_hostile_arguments_through_mcp_are_refused_quickly(
    vault: Path, tmp_path: Path, runtime: Memory
) -> None:
    server = build_mcp_server(runtime)
    calls: list[tuple[str, dict[str, Any]]] = []
    for name in HOSTILE_NAMES:
        calls += [
            ("memory_append", {"content": f"title test {name!r}", "kind": "reference", "title": name}),
            ("memory_append", {"content": f"project test {name!r}", "kind": "reference", "project": name}),
            ("memory_append", {"content": f"tag test {name!r}", "kind": "reference", "tags": [name]}),
            ("memory_capture", {"content": f"capture test {name!r}", "title": name, "project": name}),
            ("memory_capture", {"content": f"cwd test {name!r}", "cwd": name, "source_id": name}),
            ("memory_forget", {"id": name}),
            ("memory_search", {"query": name, "project": name, "kind": name}),
        ]
    calls += [
        ("memory_append", {"content": "x" * (10 * 1024 * 1024), "kind": "reference"}),
        ("memory_capture", {"content": "y" * (10 * 1024 * 1024)}),
        ("memory_search", {"query": "q " * 500_000}),
        ("memory_search", {"query": "longest allowed query " * 181}),
        ("memory_search", {"query": "z" * 1_000_000}),
        ("memory_forget", {"id": "0" * 1_000_000}),
    ]
    timings: list[tuple[float, str]] = []
    peaks: list[tuple[int, str]] = []

    async def session() -> None:
        async with Client(server) as client:
            await client.call_tool("memory_search", {"query": "warm up"})
            for tool, arguments in calls:
                before = {p: d for p, d in snapshot(vault).items()}
                _outcome, elapsed, peak = await _measured_async(_call(client, tool, arguments))
                timings.append((elapsed, f"{tool} {str(arguments)[:60]}"))
                peaks.append((peak, f"{tool} {str(arguments)[:60]}"))
                after = snapshot(vault)
                assert all(after.get(p) == d for p, d in before.items())  # nothing rewritten
                new = set(after) - set(before)
                for rel in new:  # an accepted write lands in its class or project space, safely named
                    assert rel.startswith(("memory/", "desk/projects/", "personal/", "Projects/")), rel
                    assert "\x00" not in rel and ".." not in rel.split("/")
            ok, _ = await _call(client, "memory_append", {"content": "still serving", "kind": "reference"})
            assert ok

    out_before = outside(tmp_path)
    anyio.run(session)
    assert outside(tmp_path) == out_before
    print(sorted(peaks)[-4:], sorted(timings)[-4:])
    slowest = max(timings)
    assert slowest[0] < BUDGET_S, sorted(timings)[-5:]
    assert max(peaks)[0] < MEMORY_BUDGET, sorted(peaks)[-3:]


async def _measured_async(awaitable: Any) -> tuple[Any, float, int]:
    base = _reset_peak()
    started = time.process_time()
    result = await awaitable
    return result, time.process_time() - started, _status("VmHWM") - base


# -- fuzz -----------------------------------------------------------------------------------------

TEXT = st.one_of(
    st.text(max_size=60),
    st.sampled_from(HOSTILE_NAMES),
    st.text(alphabet=st.sampled_from('./\\\x00:*?"<>|~ -_aZé\u0301\u202e\ufeff\n\r\t'), max_size=40),
)
VALUE = st.one_of(st.none(), TEXT, st.integers(), st.booleans(), st.lists(TEXT, max_size=4), st.floats())
TOOLS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "memory_append": {
        "content": TEXT, "kind": st.one_of(TEXT, st.sampled_from(["reference", "fix", "decision"])),
        "project": VALUE, "title": VALUE, "tags": VALUE, "idempotency_key": VALUE,
    },
    "memory_capture": {
        "content": TEXT, "kind": VALUE, "title": VALUE, "tags": VALUE, "instructions": VALUE,
        "source_url": VALUE, "source_id": VALUE, "project": VALUE, "cwd": VALUE,
    },
    "memory_search": {
        "query": TEXT, "scope": VALUE, "project": VALUE, "kind": VALUE, "limit": VALUE,
        "include_deleted": VALUE, "cursor": VALUE,
    },
    "memory_forget": {"id": VALUE, "reason": VALUE},
}  # fmt: skip


def arguments_for(tool: str) -> st.SearchStrategy[dict[str, Any]]:
    fields = TOOLS[tool]
    return st.fixed_dictionaries({}, optional={**fields, "unexpected": VALUE})


FUZZ_CASES = int(os.environ.get("VAULTMEM_FUZZ_CASES", "0"))


@pytest.mark.parametrize("tool", list(TOOLS))
def test_fuzzed_arguments_never_crash_a_tool(vault: Path, tmp_path: Path, tool: str) -> None:
    fuzz(vault, tmp_path, tool, FUZZ_CASES or 300)


@pytest.mark.slow
@pytest.mark.parametrize("tool", list(TOOLS))
def test_fuzzed_arguments_never_crash_a_tool_long(vault: Path, tmp_path: Path, tool: str) -> None:
    fuzz(vault, tmp_path, tool, FUZZ_CASES or 2000)


def fuzz(vault: Path, tmp_path: Path, tool: str, cases: int) -> None:
    settings_ = Settings.resolve(vault, tmp_path / "state", durable=False)
    with Memory(settings_, embedder=FakeEmbedder(), background_commits=False) as opened:
        opened.reconcile()
        server = build_mcp_server(opened)
        out_before = outside(tmp_path)
        crashes: list[str] = []

        @settings(max_examples=cases, deadline=None, suppress_health_check=list(HealthCheck))
        @given(arguments=arguments_for(tool))
        def run(arguments: dict[str, Any]) -> None:
            async def one() -> None:
                async with Client(server, raise_exceptions=True) as client:
                    result = await client.call_tool(tool, arguments)
                    if result.is_error:
                        text = " ".join(getattr(b, "text", "") for b in result.content)
                        if "Error executing tool" in text and "Traceback" in text:
                            crashes.append(text)
                        assert "Internal" not in text or "validation" in text.lower(), text

            anyio.run(one)

        run()
        assert crashes == []
        assert outside(tmp_path) == out_before
