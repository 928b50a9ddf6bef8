"""An agent's day through MCP, then a person reads the vault and `git log`.

Morning: the agent registers its project, captures an aside, appends a fix, stores two thoughts and
links them, recalls what it knows (again and again: a primer is earned). Evening: it reflects (summary,
goals, decisions, pending items), merges a duplicate and archives a stale note. A week later the status
frontier shows what came due. Then the checks a person would make: every file is still there, the slot
files read as plain Markdown, the frontmatter says what happened, and `git log` tells the day's story,
one commit per action, each naming its tool.
"""

from __future__ import annotations

from pathlib import Path

from conftest import FakeClock, git, note_files
from upkeep_wire import LocalWire, frontmatter, local_runtime

from vaultmem.vault.layout import is_side_file


def test_an_agents_day_reads_sensibly_in_the_vault_and_in_git_log(
    vault: Path, clock: FakeClock, tmp_path: Path
) -> None:
    code = tmp_path / "code" / "shop"
    cwd = str(code / "src")
    with local_runtime(vault, clock, primer_threshold=3) as runtime:
        wire = LocalWire(runtime)
        start = int(git(vault, "rev-list", "--count", "HEAD"))

        # -- morning -------------------------------------------------------------------------------
        project = wire.ok("memory_manage", action="create", name="Shop", local_path=str(code),
                          description="The web shop")["item"]  # fmt: skip
        aside = wire.call("memory_capture", content="Checkout feels slow on mobile", title="slow checkout",
                          cwd=cwd).structured_content  # fmt: skip
        assert aside is not None and aside["success"] is True
        fix = wire.call(
            "memory_append", content="Restart the worker after changing REDIS_URL.", kind="fix",
            project="Shop", title="restart worker after redis change",
        ).structured_content  # fmt: skip
        assert fix is not None
        cache = wire.create("The product cache expires after 10 minutes", cwd=cwd, title="product cache ttl")
        clock.advance(minutes=5)
        dup = wire.create("Product cache TTL is ten minutes", cwd=cwd, title="cache ttl duplicate")
        slow = wire.create("Slow checkout comes from uncached prices", cwd=cwd, title="uncached prices")
        wire.store(action="link", source_id=slow, target_id=cache, edge_type="depends_on")
        wire.store(action="link", source_id=dup, target_id=aside["id"], edge_type="references")
        for _ in range(3):
            hits = wire.recall(action="search", query="product cache", cwd=cwd)
            assert cache in [h["thought"]["id"] for h in hits["items"]]

        # -- evening -------------------------------------------------------------------------------
        clock.advance(hours=8)
        reflected = wire.ok(
            "memory_reflect", action="reflect", cwd=cwd,
            summary="Traced the slow checkout to uncached prices; the product cache TTL is 10 minutes.",
            goals_add=["Cache prices", "Measure checkout on mobile"],
            decisions=["Cache prices in Redis next to the products"],
            pending=["Check checkout latency after the price cache ships"],
        )["item"]  # fmt: skip
        assert reflected == {"summary_appended": True, "goals_added": 2, "goals_removed": 0,
                             "decisions_created": 1, "pending_created": 1}  # fmt: skip
        merged = wire.confirm("memory_supersede", action="merge", source_id=dup, target_id=cache)["item"]
        assert merged["result"]["edges_transferred"] == 1  # dup -references-> aside moved onto the cache
        archived = wire.confirm("memory_supersede", action="archive", thought_id=fix["id"])
        assert archived["item"]["result"]["status"] == "archived"

        # -- a week later --------------------------------------------------------------------------
        clock.advance(days=7)
        frontier = wire.ok("memory_status", action="frontier", cwd=cwd)
        reasons = [(i["reason"], i["thought"]["content"]) for i in frontier["items"]]
        assert reasons == [
            ("pending", "Check checkout latency after the price cache ships"),
            ("unfiled", "Checkout feels slow on mobile"),
        ]
        primers = wire.ok("memory_primers", action="list")["items"]
        assert [p["thought_id"] for p in primers] == [cache]
        slots = {s["name"]: s for s in wire.ok("memory_status", action="slots", cwd=cwd)["items"]}
        assert "Cache prices" in slots["active_goals"]["content"]
        assert "Check checkout latency" in slots["pending_items"]["content"]
        assert slots["architecture_decisions"]["content"].startswith("- The product cache expires")
        health = wire.ok("memory_status", action="health")["item"]
        assert health["status"] == "ok", health

    # -- what a person sees ----------------------------------------------------------------------------
    folder = vault / "desk" / "projects" / "shop"
    assert (folder / "project.yaml").read_text(encoding="utf-8").startswith("name: Shop\n")
    context = (folder / "project_context.md").read_text(encoding="utf-8")
    assert context.startswith(
        "# Project context: Shop\n\n## 2026-03-14T17:35:00Z\n\nTraced the slow checkout"
    )
    assert (folder / "active_goals.md").read_text(encoding="utf-8") == (
        "# Active goals: Shop\n\n- Cache prices\n- Measure checkout on mobile\n"
    )
    rels = [p.relative_to(vault).as_posix() for p in note_files(vault)]
    assert sorted(r for r in rels if is_side_file(r)) == [
        "desk/projects/shop/active_goals.md", "desk/projects/shop/project_context.md",
    ]  # fmt: skip
    notes = {rel: frontmatter(vault, rel) for rel in rels if not is_side_file(rel)}
    by_title = {meta["title"]: (rel, meta) for rel, meta in notes.items()}
    assert len(notes) == 7  # nothing was deleted: capture, fix, 3 thoughts, decision, pending
    assert by_title["cache ttl duplicate"][1]["status"] == "archived"
    assert by_title["restart worker after redis change"][1]["status"] == "archived"
    assert by_title["product cache ttl"][1]["replaces"] == ["[[cache-ttl-duplicate]]"]
    assert by_title["uncached prices"][1]["depends_on"] == ["[[product-cache-ttl]]"]
    assert by_title["product cache ttl"][1]["references"] == ["[[slow-checkout]]"]
    assert "references" not in by_title["cache ttl duplicate"][1]
    assert by_title["Cache prices in Redis next to the products"][1]["tags"] == ["decision", "reflect"]
    pending_meta = by_title["Check checkout latency after the price cache ships"][1]
    assert pending_meta["status"] == "unfiled" and pending_meta["surface_after"] == "2026-03-21T17:35:00Z"
    assert all(meta.get("project") == "Shop" for meta in notes.values())

    subjects = git(vault, "log", f"-{int(git(vault, 'rev-list', '--count', 'HEAD')) - start}", "--format=%s")
    assert subjects.splitlines()[::-1] == [  # every subject names the notes it wrote (issue 13.4)
        "memory_manage: create project Shop desk/projects/shop/project.yaml",
        "memory_capture: add slow-checkout",
        "memory_append: add restart-worker-after-redis-change",
        "memory_store: create product-cache-ttl",
        "memory_store: create cache-ttl-duplicate",
        "memory_store: create uncached-prices",
        "memory_store: link uncached-prices -depends_on-> product-cache-ttl",
        "memory_store: link cache-ttl-duplicate -references-> slow-checkout",
        "memory_reflect: reflect: cache-prices-in-redis-next-to-the-products, "
        "check-checkout-latency-after-the-price-cache-ships",
        "memory_supersede: merge cache-ttl-duplicate into product-cache-ttl",
        "memory_supersede: archive restart-worker-after-redis-change",
    ]
    assert git(vault, "status", "--porcelain") == ""
    merge_body = git(vault, "log", "--format=%B", "-1", "--grep", "memory_supersede: merge")
    assert f"id={cache}" in merge_body and f"id={dup}" in merge_body
    assert project["name"] == "Shop"
