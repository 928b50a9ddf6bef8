"""The writing session of each note, and the context step over it, through a real daemon and MCP
(issue 15: ranking that does not depend on every writer of a project writing in one order)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from conftest import note_files
from mcp import Client
from mcp_harness import mcp_client, running_daemon, structured

from vaultmem.config import Settings
from vaultmem.memory import Memory
from vaultmem.notes.frontmatter import parse


async def _append(client: Client, content: str, project: str = "trip") -> dict[str, Any]:
    args = {"content": content, "kind": "reference", "project": project}
    return structured(await client.call_tool("memory_append", args))


def _sessions(vault: Path) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for path in note_files(vault):
        meta = parse(path.read_text(encoding="utf-8")).meta
        if meta.get("kind") == "reference":
            found[str(meta["id"])] = (meta.get("source") or {}).get("session")
    return found


def test_each_mcp_client_stamps_its_notes_with_its_own_session_and_the_cli_with_none(
    vault: Path, tmp_path: Path
) -> None:
    with running_daemon(vault, tmp_path / "token") as daemon:

        async def main() -> list[str]:
            ids: list[str] = []
            async with (
                mcp_client(daemon.url, daemon.token()) as stateless,
                mcp_client(daemon.url, daemon.token(), mode="legacy") as legacy,
            ):
                for client in (stateless, legacy, stateless, legacy):
                    ids.append((await _append(client, f"note number {len(ids)} of the trip"))["id"])
            return ids

        ids = anyio.run(main)
    memory = Memory(Settings.resolve(vault, durable=False))
    try:
        by_hand = memory.append("written at the command line", kind="reference")["id"]
    finally:
        memory.close()
    sessions = _sessions(vault)
    assert sessions[ids[0]] == sessions[ids[2]] and sessions[ids[1]] == sessions[ids[3]]
    assert sessions[ids[0]] != sessions[ids[1]]
    assert all(len(str(sessions[i])) == 12 for i in ids)  # a hash: the session id itself is not kept
    assert sessions[by_hand] is None


def test_a_reply_written_by_the_same_session_is_found_by_its_question_while_another_writer_interleaves(
    vault: Path, tmp_path: Path
) -> None:
    """The reply shares no word with the question asked; it is the next note its session wrote, but
    two notes of another writer came between them in the project's time order."""
    chat = [  # a conversation moving from topic to topic
        "Training plan: a long run on Sunday and running intervals on Tuesday.",
        "What got you into running in the first place?",
        "Honestly it has been great for my mental health, I sleep better and worry less.",
        "Dinner tonight: pasta with a tomato sauce and basil from the garden.",
        "The pasta sauce needs more garlic and a longer simmer next time.",
        "Garden: the tomato plants need stakes before the basil crowds them.",
        "Booked the train to Lyon for the fourteenth, window seats.",
        "The Lyon train leaves at nine; we change trains in Paris.",
    ]
    other = [f"Invoice {n} for the office printer toner was paid on account {n * 7}." for n in range(16)]
    with running_daemon(vault, tmp_path / "token") as daemon:

        async def main() -> tuple[str, list[str]]:
            async with (
                mcp_client(daemon.url, daemon.token()) as runner,
                mcp_client(daemon.url, daemon.token()) as clerk,
            ):
                written = {}
                pending = list(other)
                for line in chat:
                    written[line] = (await _append(runner, line))["id"]
                    for _ in range(2):  # the other writer is faster
                        await _append(clerk, pending.pop(0))
                args = {"query": "what got you into running", "scope": "project", "project": "trip"}
                found = structured(await runner.call_tool("memory_search", args))
                return written[chat[2]], [hit["id"] for hit in found["results"]]

        reply, ranked = anyio.run(main)
    assert reply in ranked[:3], ranked


def test_the_lexical_leg_finds_a_short_reply_by_the_words_of_the_question_its_session_asked(
    vault: Path, tmp_path: Path
) -> None:
    """Through MCP: the reply ("Yes, every Sunday morning") says none of the question's words, yet
    the lexical leg finds it by them (the question is its context field: the note its session
    wrote just before it), and never by the words of another session's note written in between."""
    question = "Do you still run marathons with the club?"
    reply = "Yes, every Sunday morning."
    between = "The printer toner invoice was paid on account."
    with running_daemon(vault, tmp_path / "token") as daemon:

        async def main() -> tuple[str, dict[str, list[str]]]:
            async with (
                mcp_client(daemon.url, daemon.token()) as runner,
                mcp_client(daemon.url, daemon.token()) as clerk,
            ):
                await _append(runner, question)
                await _append(clerk, between)
                answer = (await _append(runner, reply))["id"]
                found: dict[str, list[str]] = {}
                for query in ("marathons club", "printer toner invoice"):
                    args = {"action": "search", "query": query, "compact": False, "min_relevance": 0}
                    result = await runner.call_tool("memory_recall", args)
                    assert not result.is_error and result.structured_content is not None, result.content
                    items = result.structured_content["result"]["items"]
                    found[query] = next(
                        (i["match_source"] for i in items if i["thought"]["id"] == answer), []
                    )
                return answer, found

        _answer, found = anyio.run(main)
    assert "bm25" in found["marathons club"], found
    assert "bm25" not in found["printer toner invoice"], found
