"""A sync client's conflict copy carries its original's ``id:``; every tool answers it under the id
search gives it (one derived from its path), never under the original's.

Found by a helper attacking renames (2026-12-03): ``memory_recall get`` and ``context`` of the
copy's id answered the original's id with the copy's path and text, so an agent that forgot
"that stale laptop copy" by the id ``get`` gave it soft-deleted the original; ``memory_recall
list`` showed one of the two files twice and the other never; and a write to the copy (that
forget) was indexed under the original's id, over the original's row, so the original dropped out
of search while the copy answered twice. The SDK client against a real
daemon over HTTP, the watcher on the real files.
"""

from __future__ import annotations

from pathlib import Path

from graph_wire import Wire
from mcp_harness import running_daemon, structured, wait_for

from vaultmem.notes.frontmatter import parse


def status_of(path: Path) -> str:
    return str(parse(path.read_text("utf-8")).meta.get("status"))


def test_a_conflict_copy_answers_under_its_own_id_in_every_tool_and_forgetting_it_keeps_the_original(
    vault: Path, tmp_path: Path
) -> None:
    with running_daemon(vault, tmp_path / "token") as daemon:
        wire = Wire(daemon)
        original_id = wire.create("Kettle note: descale the kettle every month.")
        original = vault / wire.recall(action="get", thought_id=original_id, fields=["path"])["item"]["path"]
        copy = original.with_name(f"{original.stem} (Ann's conflicted copy 2026-12-03).md")
        copy.write_text(original.read_text("utf-8").replace("every month", "every week, laptop"), "utf-8")

        def searched() -> dict[str, str]:
            hits = structured(wire.call("memory_search", query="descale kettle", limit=5))["results"]
            return {hit["slug"]: hit["id"] for hit in hits}

        both = wait_for(lambda: [h for h in [searched()] if len(h) == 2])[0]
        copy_id = both[copy.stem]
        assert both[original.stem] == original_id and copy_id != original_id

        got = wire.recall(action="get", thought_id=copy_id, compact=False)["item"]
        assert (got["id"], got["path"]) == (copy_id, copy.relative_to(vault).as_posix())
        around = wire.recall(action="context", thought_id=copy_id, compact=False)["item"]["thought"]
        assert (around["id"], around["path"]) == (copy_id, got["path"])
        listed = wire.recall(action="list", status="all", compact=False)["items"]
        assert sorted((item["id"], Path(item["path"]).name) for item in listed) == sorted(
            [(original_id, original.name), (copy_id, copy.name)]
        )

        forgotten = structured(wire.call("memory_forget", id=got["id"], reason="a stale laptop copy"))
        assert forgotten["id"] == copy_id
        assert status_of(copy) == "deleted" and status_of(original) == "active"
        assert wire.recall(action="get", thought_id=original_id, fields=["path"])["item"]["path"] == (
            original.relative_to(vault).as_posix()
        )
        assert wait_for(lambda: searched() == {original.stem: original_id})


def test_a_holder_renamed_to_a_conflict_copys_name_yields_the_id_to_a_plain_file_that_carries_it(
    vault: Path, tmp_path: Path
) -> None:
    """Note C is given B's ``id:`` by hand, then B's file is renamed to a sync client's conflict
    name: the plain file C holds the id, live as at a restart (live, the renamed conflict copy
    used to keep it: found by the same helper)."""

    def view(wire: Wire, b: str) -> tuple[str, list[str]]:
        """Where ``get`` finds B and who links to it ("" while its file just went: retryable)."""
        answer = wire.call("memory_recall", action="get", thought_id=b, include_edges=True, compact=False)
        if answer.is_error:
            return "", []
        got = (answer.structured_content or {})["result"]["item"]
        return got["path"], [row["thought"]["id"] for row in got["upstream"]]

    with running_daemon(vault, tmp_path / "token") as daemon:
        wire = Wire(daemon)
        a = wire.create("Source note alpha")
        b = wire.create("Target note bravo")
        c = wire.create("Other note charlie")
        wire.store(action="link", source_id=a, target_id=b, edge_type="supports")
        paths = {i: wire.recall(action="get", thought_id=i, fields=["path"])["item"]["path"] for i in (b, c)}
        carrier = vault / paths[c]
        carrier.write_text(carrier.read_text("utf-8").replace(f"id: {c}", f"id: {b}"), "utf-8")
        wait_for(
            lambda: structured(wire.call("memory_search", query="charlie", limit=3))["results"][0]["id"] != c
        )
        bravo = vault / paths[b]
        bravo.rename(bravo.with_name(f"{bravo.stem} (conflicted copy 2026-12-03).md"))
        wait_for(lambda: view(wire, b)[0] == paths[c])
        live = view(wire, b)
    with running_daemon(vault, tmp_path / "token") as restarted:
        assert view(Wire(restarted), b) == live
