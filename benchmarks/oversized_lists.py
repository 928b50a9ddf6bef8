"""How long a tool takes to refuse an oversized list argument (issue 13, item 15).

    python benchmarks/oversized_lists.py [--items 20000] [--repeat 3]

A real daemon (fake embedder: no list reaches the index) and the SDK's streamable-HTTP client send
every list-valued argument of every tool with ``--items`` entries (kept under the 1 MiB body cap),
and time each refusal as a host sees it (one ``call_tool`` round trip, the best of ``--repeat``).
Before the fix, 20,000 tags cost 11 s of CPU in a quadratic de-duplication before the 50-tag limit
refused them. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _common import machine
from mcp_harness import mcp_client, running_daemon

from vaultmem.vault.init import init_vault


def cases(n: int) -> list[tuple[str, str, dict[str, Any]]]:
    tags = [f"t{i}" for i in range(n)]
    ids = [f"0192f0c1-8d2e-7b3a-9c4d-{i:012d}" for i in range(n)]
    some = ids[: min(n, 5000)]  # rows of objects: kept under the body cap
    links = [{"source": i} for i in some]
    rows = [{"content": "x"}] * n
    return [
        ("memory_append", "tags", {"content": "x", "kind": "fix", "tags": tags}),
        ("memory_capture", "tags", {"content": "x", "tags": tags}),
        ("memory_store create", "tags", {"action": "create", "content": "x", "tags": tags}),
        ("memory_store link_batch", "links", {"action": "link_batch", "links": links}),
        ("memory_store unlink_batch", "edge_ids", {"action": "unlink_batch", "edge_ids": ids}),
        ("memory_store bulk_create", "thoughts", {"action": "bulk_create", "thoughts": rows}),
        ("memory_supersede archive_batch", "thought_ids", {"action": "archive_batch", "thought_ids": ids}),
        ("memory_supersede merge", "merged_tags",
         {"action": "merge", "source_id": ids[0], "target_id": ids[1], "merged_tags": tags}),
        ("memory_reflect reflect", "goals_add", {"action": "reflect", "goals_add": tags}),
        ("memory_reflect reflect", "decisions", {"action": "reflect", "decisions": tags}),
        ("edge_review apply_batch", "proposal_ids", {"action": "apply_batch", "proposal_ids": ids}),
        ("retention_review compact", "source_ids",
         {"action": "compact", "source_ids": ids, "summary": {"content": "s"}}),
        ("memory_crystallize cluster", "thought_ids", {"action": "cluster", "thought_ids": ids}),
        ("memory_recall list (answered)", "fields", {"action": "list", "limit": 500, "fields": tags}),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows: list[tuple[str, str, float, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root, _ = init_vault(Path(tmp) / "vault")
        with running_daemon(root, Path(tmp) / "token") as daemon:

            async def run() -> None:
                async with mcp_client(daemon.url, daemon.token()) as client:
                    for i in range(50):  # a page for `fields` to shape
                        await client.call_tool(
                            "memory_store", {"action": "create", "content": f"thought {i}"}
                        )
                    for label, argument, arguments in cases(args.items):
                        tool = label.split()[0]
                        best, outcome = float("inf"), ""
                        for _ in range(args.repeat):
                            started = time.perf_counter()
                            result = await client.call_tool(tool, arguments)
                            best = min(best, time.perf_counter() - started)
                            text = " ".join(getattr(b, "text", "") for b in result.content)
                            outcome = (
                                "refused" if result.is_error or '"success": false' in text else "answered"
                            )
                        rows.append((label, argument, best * 1000, outcome))

            anyio.run(run)
    print(f"Machine: {machine()}; {args.items:,} items per list, best of {args.repeat}\n")
    print("| tool and action | list argument | round trip | outcome |")
    print("|---|---|---|---|")
    for label, argument, ms, outcome in rows:
        print(f"| `{label}` | `{argument}` | {ms:.1f} ms | {outcome} |")


if __name__ == "__main__":
    main()
