"""What MCP clients other than the Python SDK meet at the daemon: the TypeScript SDK (the client of
most hosts, and of the MCP Inspector), and a host's own JSON-RPC over HTTP or stdio.

The TypeScript SDK's ``callTool`` checks an answer's ``structuredContent`` against the tool's
published output schema whenever it is present, error answers included, and throws instead of
returning the answer on a mismatch; the Python SDK skips the check for ``isError`` answers. The
checks here are that client's, done with ``jsonschema`` on what the daemon sent.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from conftest import note_files
from graph_wire import Wire
from mcp_harness import Lines, fake_stdio_command, mcp_client, running_daemon, stdio_env, wait_for
from test_server_http import INITIALIZE, post

from vaultmem.mcp.tools import TOOL_NAMES
from vaultmem.notes.frontmatter import parse
from vaultmem.server.batches import batch_lines
from vaultmem.server.daemon import Daemon
from vaultmem.server.surrogates import replace_lone_surrogates


@pytest.fixture
def daemon(vault: Path, tmp_path: Path) -> Iterator[Daemon]:
    with running_daemon(vault, tmp_path / "token") as running:
        yield running


def published_output_schemas(daemon: Daemon) -> dict[str, dict[str, Any]]:
    """Each tool's output schema, as ``tools/list`` gives it to a client."""
    schemas: dict[str, dict[str, Any]] = {}

    async def main() -> None:
        async with mcp_client(daemon.url, daemon.token()) as client:
            for tool in (await client.list_tools()).tools:
                assert tool.output_schema is not None, tool.name
                schemas[tool.name] = tool.output_schema

    anyio.run(main)
    return schemas


def schema_problem(schema: dict[str, Any], structured: dict[str, Any] | None) -> str | None:
    """What the TypeScript SDK's check finds wrong with an answer (None: it accepts it)."""
    if structured is None:
        return None  # an error without structured content passes; a success without it does not
    error = jsonschema.exceptions.best_match(jsonschema.Draft7Validator(schema).iter_errors(structured))
    return None if error is None else error.message


#: One failing call per tool: a refusal of the input schema, or of the tool itself.
FAILURES: list[tuple[str, dict[str, Any]]] = [
    ("memory_search", {"query": "deploy", "limit": 0}),
    ("memory_search", {"query": "deploy", "kind": "banana"}),
    ("memory_append", {"content": "Restart after a port change.", "kind": "banana"}),
    ("memory_append", {"content": "Restart after a port change."}),
    ("memory_capture", {"content": 5}),
    ("memory_forget", {"id": "01a22ad9-1ef8-7092-b2d8-c97e494c971d"}),
    ("memory_forget", {"id": "nope"}),
    ("memory_recall", {"action": "get", "thought_id": "01a22ad9-1ef8-7092-b2d8-c97e494c971d"}),
    ("memory_store", {"action": "create"}),
    ("memory_supersede", {"action": "archive"}),
    ("memory_manage", {"action": "rename"}),
    ("memory_reflect", {"action": "reflect"}),
    ("memory_status", {"action": "vibes"}),
    ("memory_primers", {"action": "purge"}),
    ("edge_review", {"action": "approve"}),
    ("retention_review", {"action": "list", "limit": "all"}),
    ("memory_crystallize", {"action": "graph", "status": "alive"}),
]


def test_every_tools_error_answer_fits_its_published_output_schema(daemon: Daemon) -> None:
    """Found with the TypeScript SDK (1.32) and the MCP Inspector CLI: every error of
    memory_search, memory_append, memory_forget (and a schema refusal of memory_capture) carried
    ``structuredContent = {result: {error}}`` while the tool's schema asked for its own result
    (``{results, total, cursor}``...), so the client threw "Structured content does not match the
    tool's output schema" and the host never showed the message that said what to do."""
    schemas = published_output_schemas(daemon)
    assert {tool for tool, _ in FAILURES} == set(TOOL_NAMES) - {"memory_guide"}
    wire = Wire(daemon)
    for tool, arguments in FAILURES:
        result = wire.call(tool, **arguments)
        assert result.is_error, (tool, arguments, result.structured_content)
        message = result.content[0].text  # type: ignore[union-attr]
        assert schema_problem(schemas[tool], result.structured_content) is None, (tool, message)
        assert result.structured_content is not None, (tool, message)  # the classification stays
        error = result.structured_content["result"]["error"]
        assert error["message"] == message and error["statusCode"] in (400, 404), (tool, error)


def test_the_widened_schemas_still_hold_each_tool_to_its_own_result(daemon: Daemon) -> None:
    """A success is checked against the tool's own result as before: a search answer missing
    ``total`` would be refused, and real answers are accepted."""
    schemas = published_output_schemas(daemon)
    wire = Wire(daemon)
    appended = wire.call("memory_append", content="Staging listens on 6543.", kind="reference")
    searched = wire.call("memory_search", query="staging")
    assert not appended.is_error and not searched.is_error
    assert schema_problem(schemas["memory_append"], appended.structured_content) is None
    assert schema_problem(schemas["memory_search"], searched.structured_content) is None
    assert searched.structured_content is not None
    short = {k: v for k, v in searched.structured_content.items() if k != "total"}
    assert schema_problem(schemas["memory_search"], short) is not None
    assert schema_problem(schemas["memory_forget"], {"id": "x", "status": "gone", "already_deleted": False})


# -- text cut in the middle of an emoji -------------------------------------------------------------

#: What ``JSON.stringify`` writes for ``"Deploy notes 🚀".slice(0, 14)``: the emoji's first half,
#: escaped (a JavaScript string is UTF-16; slicing it by length cut the pair).
CUT_CALL = (
    b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_append",'
    b'"arguments":{"content":"Deploy notes \\ud83d","kind":"reference","title":"Cut \\ude80 title"}}}'
)


def the_note_saying(vault: Path, words: str) -> str:
    [text] = [t for t in (p.read_text(encoding="utf-8") for p in note_files(vault)) if words in t]
    return text


def test_text_cut_in_the_middle_of_an_emoji_is_written_over_http_with_a_replacement_character(
    daemon: Daemon, vault: Path
) -> None:
    """Found with the TypeScript SDK: the whole request was refused with a JSON-RPC parse error
    ("unexpected end of hex escape"), which the SDK throws as a transport error: no tool ran, and
    no message said what was wrong."""
    opened = post(daemon, token=daemon.token())
    session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    answer = post(daemon, token=daemon.token(), content=CUT_CALL, headers=session)
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert not result.get("isError"), result
    text = the_note_saying(vault, "Deploy notes")
    assert "Deploy notes \ufffd" in text and "Cut \ufffd title" in text


@contextlib.contextmanager
def stdio_server(
    vault: Path, *lines: str, argv: list[str] | None = None, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[str], Lines]]:
    """A stdio server (the fake embedder's, or ``argv`` in ``env``) sent ``lines``; it must exit 0
    once its input closes."""
    command, args = fake_stdio_command(vault)
    process = subprocess.Popen(
        argv or [command, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env or stdio_env(),
        encoding="utf-8",
    )
    assert process.stdin is not None and process.stdout is not None
    replies = Lines(process.stdout)
    try:
        for line in lines:
            process.stdin.write(line + "\n")
        process.stdin.flush()
        yield process, replies
        process.stdin.close()
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        replies.thread.join(timeout=30)
        process.stdout.close()


def test_text_cut_in_the_middle_of_an_emoji_is_answered_over_stdio(vault: Path) -> None:
    """Over stdio the SDK's reader dropped the line it could not parse: the call was never answered,
    and the host waited for its own timeout (the TypeScript SDK's: 60 s)."""
    client = {"name": "t", "version": "0"}
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
    messages = (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    )
    with stdio_server(vault, *map(json.dumps, messages), CUT_CALL.decode("ascii")) as (_process, replies):
        reply = json.loads(replies.until(r'"id":\s*2\b', timeout=30).string)
        assert not reply["result"].get("isError"), reply
    assert "Deploy notes \ufffd" in the_note_saying(vault, "Deploy notes")


@pytest.mark.parametrize(
    ("sent", "read"),
    [
        (b'{"a":"x\\ud83d"}', '{"a": "x\ufffd"}'),  # a lone first half
        (b'{"a":"\\ude80x","\\udc00":1}', '{"a": "\ufffdx", "\ufffd": 1}'),  # lone second halves
        (b'{"a":"\\ud83d\\ude80"}', None),  # a whole pair, as an ASCII-only writer escapes 🚀
        (b'{"a":"\\\\ud83d"}', None),  # an escaped backslash, then the letters ud83d
        (b'{"a":"\\ud83d"', None),  # not JSON: left to the SDK's parser to answer
        (b"[" * 100_000 + b'"\\ud83d"' + b"]" * 100_000, None),  # too deep to read here
    ],
)
def test_only_a_lone_surrogate_is_replaced_and_everything_else_passes_byte_for_byte(
    sent: bytes, read: str | None
) -> None:
    got = replace_lone_surrogates(sent)
    if read is None:
        assert got is sent
    else:
        assert json.loads(got) == json.loads(read)


# -- JSON-RPC batches (protocol 2025-03-26) ---------------------------------------------------------

#: A 2025-03-26 client's batch: a ping, a write and a notification in one JSON array.
BATCH = [
    {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "tools/call",
        "params": {"name": "memory_append", "arguments": {"content": "Batched fix.", "kind": "fix"}},
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def test_a_batch_over_http_is_answered_message_by_message_in_one_array(daemon: Daemon, vault: Path) -> None:
    """Protocol 2025-03-26 lets a client batch; the SDK answered a batch with a 400 carrying
    pydantic's validation dump, and nothing in it ran."""
    hello = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": "2025-03-26"}}
    opened = post(daemon, token=daemon.token(), content=json.dumps(hello))
    session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-03-26"}
    answer = post(daemon, token=daemon.token(), content=json.dumps(BATCH), headers=session)
    assert answer.status_code == 200, answer.text
    ping, append = answer.json()
    assert ping == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert append["id"] == 4 and not append["result"]["isError"], append
    assert "Batched fix." in the_note_saying(vault, "Batched fix.")
    empty = post(daemon, token=daemon.token(), content="[]", headers=session)
    assert empty.status_code == 400 and "batch is empty" in empty.json()["error"]["message"]
    odd = post(daemon, token=daemon.token(), content=json.dumps([1, BATCH[0], "x"]), headers=session)
    assert odd.status_code == 200, odd.text  # the ping ran; the two members that are no message say so
    first, pong, last = odd.json()
    assert pong == {"jsonrpc": "2.0", "id": 3, "result": {}}
    for bad, at in ((first, 0), (last, 2)):
        assert bad["id"] is None and bad["error"]["code"] == -32600, bad
        assert bad["error"]["message"].startswith(f"batch member {at} is not a JSON-RPC message"), bad
        assert len(bad["error"]["message"]) < 200  # not pydantic's dump
    only_bad = post(daemon, token=daemon.token(), content="[1, 2]", headers=session)
    assert only_bad.status_code == 400 and len(only_bad.json()) == 2
    unknown = {**session, "mcp-session-id": "x"}
    gone = post(daemon, token=daemon.token(), content=json.dumps(BATCH[:1]), headers=unknown)
    assert gone.status_code == 404  # refused alike, as one message would be


def test_a_batch_over_stdio_is_answered_one_line_per_request(vault: Path) -> None:
    """Over stdio the SDK dropped the batch's line: none of its requests was ever answered."""
    hello = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": "2025-03-26"}}
    lines = (json.dumps(hello), json.dumps(BATCH), json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"}))
    with stdio_server(vault, *lines) as (_process, replies):
        answered = {json.loads(replies.until(r'"id":\s*[345]\b', timeout=30).string)["id"] for _ in range(3)}
        assert answered == {3, 4, 5}
    assert "Batched fix." in the_note_saying(vault, "Batched fix.")


def test_only_a_json_array_is_taken_apart() -> None:
    assert batch_lines(b'[{"id": 1}, {"id": 2}]') == [b'{"id": 1}', b'{"id": 2}']
    for line in (b'{"id": 1}', b"[not json", b"[]", b"  ", b'"[x]"'):
        assert batch_lines(line) == [line]


# -- a request id used twice at once ------------------------------------------------------------------


def test_a_request_id_still_being_answered_is_refused_and_the_first_call_still_gets_its_answer(
    daemon: Daemon, vault: Path
) -> None:
    """A host that numbers its requests per agent and shares one session between two (a gateway,
    a proxy) sent a second request with the id of one still running: the SDK matches an answer to
    its POST by id, so the first POST was never answered, while its write was done."""
    opened = post(daemon, token=daemon.token())
    session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    append = {
        "name": "memory_append",
        "arguments": {"content": "Written once, answered once.", "kind": "fix"},
    }
    guide = {"name": "memory_guide", "arguments": {}}
    lock_file = vault / ".git" / "vaultmem-write.lock"  # the vault's write lock (reliability row 70)
    holder = subprocess.Popen(  # another process writing: the append waits for the vault's lock
        [sys.executable, "-c", HOLD_LOCK, str(lock_file)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline() == b"held\n"
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(post, daemon, token=daemon.token(), content=call(7, append), headers=session)
            wait_for(lambda: sessions_of(daemon)["in_use"] == 1)
            second = post(daemon, token=daemon.token(), content=call(7, guide), headers=session)
            assert second.status_code == 409, second.text
            assert "request id 7 is already used" in second.json()["error"]["message"]
            holder.stdin.close()  # the other process is done
            answered = first.result(timeout=60)
    finally:
        holder.kill()
        holder.wait(timeout=30)
        holder.stdout.close()
    assert answered.status_code == 200 and not answered.json()["result"]["isError"], answered.text
    assert the_note_saying(vault, "Written once, answered once.")
    again = post(daemon, token=daemon.token(), content=call(7, guide), headers=session)
    assert again.status_code == 200  # the id is free once its request is answered


#: Holds an flock on argv[1] until its standard input closes.
HOLD_LOCK = (
    "import fcntl, sys\n"
    "f = open(sys.argv[1], 'a')\n"
    "fcntl.flock(f, fcntl.LOCK_EX)\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)


def call(request_id: int, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


def sessions_of(daemon: Daemon) -> dict[str, Any]:
    assert daemon.memory is not None and daemon.memory._status.sessions is not None
    return daemon.memory._status.sessions()


# -- text that is JSON ------------------------------------------------------------------------------


def test_a_text_argument_that_holds_json_is_stored_as_the_text_it_was(daemon: Daemon, vault: Path) -> None:
    """Found by sending realistic text through every tool: the SDK decodes a string holding JSON for
    every parameter not declared plain ``str``, so a thought whose content was a JSON snippet was
    refused ("content must be text, not {'port': 6543}"), a merge's ``merged_content`` and a recall
    ``query`` of ``[1, 2]`` too, and ``title: "null"`` became no title. A list sent as its JSON
    text (``tags: '["a", "b"]'``, as Claude Desktop does) is still read as the list."""
    wire = Wire(daemon)
    for content in ('{"port": 6543}', "[1, 2]", "null"):
        created = wire.store(action="create", content=content, tags='["config", "json"]')["item"]
        assert created["content"] == content and created["tags"] == ["config", "json"], created
    found = wire.recall(action="search", query="[1, 2]")["items"]
    assert [hit["thought"]["content"] for hit in found][:1] == ["[1, 2]"]
    appended = wire.call("memory_append", content="The staging port is 6543.", kind="reference", title="null")
    assert not appended.is_error, appended.content
    assert parse(the_note_saying(vault, "The staging port is 6543.")).meta["title"] == "null"


# -- the stdio server's first start -----------------------------------------------------------------

#: ``vaultmem mcp`` (fake embedder) whose start's reconcile is held until the file argv[2] exists,
#: standing in for the first start of a vault of thousands of notes; calls wait 3 s for it.
HELD_START_SERVER = (
    "import pathlib, sys, time\n"
    "from vaultmem.config import Settings\n"
    "from vaultmem.index.embedder import FakeEmbedder\n"
    "from vaultmem.memory import Memory\n"
    "from vaultmem.mcp import validation\n"
    "from vaultmem.server.daemon import run_stdio\n"
    "release, reconcile = pathlib.Path(sys.argv[2]), Memory.reconcile\n"
    "def held(self, *args, **kwargs):\n"
    "    deadline = time.monotonic() + 60\n"
    "    while not release.exists() and time.monotonic() < deadline:\n"
    "        time.sleep(0.02)\n"
    "    return reconcile(self, *args, **kwargs)\n"
    "Memory.reconcile = held\n"
    "validation.START_WAIT = 3.0\n"
    "run_stdio(Settings.resolve(sys.argv[1], durable=False), embedder=FakeEmbedder())\n"
)


def test_the_stdio_server_answers_initialize_while_its_first_start_still_indexes(
    vault: Path, tmp_path: Path
) -> None:
    """Found with the TypeScript SDK's stdio client: the first start of a vault of 2,200 notes (the
    real model) answered ``initialize`` only after embedding every note, past the 60 s the SDK
    gives a request, so the host reported the server failed (a second start, 44 s, connected). Now
    ``initialize`` is answered at once; a call made meanwhile waits for the start, and is refused
    as retryable (503, nothing ran) if it has not finished by then."""
    release = tmp_path / "release"
    held_start = [sys.executable, "-c", HELD_START_SERVER, str(vault), str(release)]
    try:
        with stdio_server(vault, argv=held_start) as (process, replies):

            def send(message: dict[str, Any]) -> None:
                assert process.stdin is not None
                process.stdin.write(json.dumps(message) + "\n")
                process.stdin.flush()

            def answer(request_id: int) -> dict[str, Any]:
                reply: dict[str, Any] = json.loads(
                    replies.until(rf'"id":\s*{request_id}\b', timeout=30).string
                )
                return reply

            send({**INITIALIZE, "id": 1})
            assert answer(1)["result"]["serverInfo"]["name"] == "vaultmem"  # the start is still held
            send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_guide"}})
            refused = answer(2)["result"]
            assert refused["isError"] and refused["structuredContent"]["result"]["error"]["retryable"] is True
            assert "still bringing its search index up to date" in refused["content"][0]["text"]
            append = {
                "name": "memory_append",
                "arguments": {"content": "Written after the start.", "kind": "fix"},
            }
            for attempt in range(3, 8):  # a host retries a retryable refusal
                send({"jsonrpc": "2.0", "id": attempt, "method": "tools/call", "params": append})
                release.touch()
                written = answer(attempt)["result"]
                if not written["isError"]:
                    break
            assert not written["isError"], written
    finally:
        release.touch()
    assert the_note_saying(vault, "Written after the start.")
