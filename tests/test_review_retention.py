"""``retention_review`` end to end through the SDK client against one daemon shared by the module.

The vault is written by hand before the daemon starts (old notes, each failing exactly one eligibility
signal, or none), as a person's vault would be. Each test is a sentence of the graph document
(../shared/seeds/000_30b85c2247cb72d3.txt, section ``retention_review``) or of docs/tools.md.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import git, hand_write
from graph_wire import Wire, add_project, flushed_commits
from mcp_harness import running_daemon

from vaultmem.notes.frontmatter import parse
from vaultmem.notes.ids import uuid7
from vaultmem.server.daemon import Daemon
from vaultmem.vault.init import init_vault

LONG = "retention candidate text " * 20  # 500 characters


def _note(vault: Path, slug: str, created: str, **fields: Any) -> str:
    note_id = uuid7()
    body = fields.pop("body", None)
    meta = {"id": note_id, "title": slug, "kind": "reference", "status": "archived", "created": created,
            "updated": created, "importance": 0.1, **fields}  # fmt: skip
    lines = ["---"]
    for key, value in meta.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, list):
            value = "[" + ", ".join(f'"{v}"' for v in value) + "]"
        elif isinstance(value, str) and key not in ("importance",):
            value = f"'{value}'"
        lines.append(f"{key}: {value}")
    text = "\n".join([*lines, "---", body if body is not None else f"{slug} body text", ""])
    hand_write(vault, f"memory/semantic/{slug}.md", text, commit=True)
    return note_id


class Env:
    def __init__(self, daemon: Daemon, vault: Path, ids: dict[str, str]) -> None:
        self.daemon = daemon
        self.wire = Wire(daemon)
        self.vault = vault
        self.ids = ids

    def review(self, **arguments: Any) -> dict[str, Any]:
        return self.wire.ok("retention_review", **arguments)

    def listed(self, **arguments: Any) -> list[str]:
        return [i["id"] for i in self.review(action="list", limit=100, **arguments)["items"]]

    def meta_of(self, name: str) -> dict[str, Any]:
        return parse((self.vault / f"memory/semantic/{name}.md").read_text(encoding="utf-8")).meta

    def commits(self) -> int:
        return flushed_commits(self.daemon)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    tmp = tmp_path_factory.mktemp("retention")
    vault, _ = init_vault(tmp / "vault")
    add_project(vault, "Doc Probe", "doc-probe", tmp / "code" / "probe")
    today = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    n = _note  # the candidates, oldest first
    ids = {
        "old_a": n(vault, "old-a", "2020-01-01T00:00:00Z", project="Doc Probe", body=LONG),
        "old_b": n(vault, "old-b", "2020-02-01T00:00:00Z", status="unfiled"),
        "anchored": n(vault, "anchored", "2019-01-01T00:00:00Z", archived_at="2020-03-01T00:00:00Z"),
        "linked_by_archived": n(vault, "linked-by-archived", "2020-04-01T00:00:00Z"),
        "past_due": n(vault, "past-due", "2020-05-01T00:00:00Z", surface_after="2021-01-01T00:00:00Z"),
        "hit": n(vault, "hit", "2020-06-01T00:00:00Z"),
        "archived_linker": n(
            vault, "archived-linker", "2020-07-01T00:00:00Z", related=["[[linked-by-archived]]"]
        ),
        # each of these fails one signal
        "young": n(vault, "young", today),
        "important": n(vault, "important", "2020-01-01T00:00:00Z", importance=0.9),
        "no_importance": n(vault, "no-importance", "2020-01-01T00:00:00Z", importance=None),
        "linked": n(vault, "linked", "2020-01-01T00:00:00Z"),
        "active_linker": n(
            vault, "active-linker", "2020-01-01T00:00:00Z", status="active", related=["[[linked]]"]
        ),
        "protected": n(vault, "protected", "2020-01-01T00:00:00Z", is_protected=True),
        "future": n(vault, "future", "2020-01-01T00:00:00Z", surface_after="2999-01-01T00:00:00Z"),
        "global": n(vault, "global", "2020-01-01T00:00:00Z", is_global=True),
    }  # fmt: skip
    with running_daemon(vault, tmp / "token") as daemon:
        yield Env(daemon, vault, ids)


CANDIDATES = ["old_a", "old_b", "anchored", "linked_by_archived", "past_due", "hit", "archived_linker"]


def test_list_answers_every_candidate_oldest_first_with_its_signals(env: Env) -> None:
    """list: "Candidates come back oldest first (age anchor ascending), then by id, with content truncated to
    200 characters"; "meta.counts carries the page (limit, offset) plus the shared three"; "a candidate
    carries its project_id/project_name"; every signal of the document is reported."""
    answer = env.review(action="list")
    assert [i["id"] for i in answer["items"]] == [env.ids[k] for k in CANDIDATES]
    assert answer["meta"]["counts"] == {
        "limit": 20,
        "offset": 0,
        "total": 7,
        "returned": 7,
        "filtered_out": 0,
    }
    first = answer["items"][0]
    assert first["content"] == LONG[:200]
    assert first["project_name"] == "Doc Probe" and first["project_id"]
    assert set(first["signals"]) == {
        "status", "age_anchor", "age_anchor_source", "age_days", "importance", "hits",
        "incoming_active_edges", "is_protected", "surface_after", "surface_due", "is_global",
    }  # fmt: skip
    assert answer["items"][1]["status"] == "draft" and answer["items"][1]["signals"]["status"] == "draft"
    anchored = answer["items"][2]["signals"]
    assert (anchored["age_anchor"], anchored["age_anchor_source"]) == ("2020-03-01T00:00:00Z", "archived_at")
    assert answer["meta"]["scope"] is None and answer["meta"]["warnings"] == []


def test_the_documents_list_call_runs_as_written(env: Env) -> None:
    """The example `{ "action": "list", "min_age_days": 90, "importance_floor": 0.1, "limit": 50,
    "offset": 0 }`: the floor is strict (importance 0.1 is not below 0.1)."""
    answer = env.review(action="list", min_age_days=90, importance_floor=0.1, limit=50, offset=0)
    assert answer["meta"]["counts"] == {
        "limit": 50,
        "offset": 0,
        "total": 0,
        "returned": 0,
        "filtered_out": 0,
    }
    assert len(env.listed(min_age_days=90, importance_floor=0.11)) >= 6


def test_a_thought_failing_any_one_signal_is_not_a_candidate(env: Env) -> None:
    """ "A thought is a candidate only when every signal holds at once"; "a missing importance row counts
    as 1.0"; an incoming edge from an archived thought does not protect it, one from an active one does."""
    listed = set(env.listed())
    for name in (
        "young",
        "important",
        "no_importance",
        "linked",
        "active_linker",
        "protected",
        "future",
        "global",
    ):
        assert env.ids[name] not in listed, name
    assert env.ids["linked_by_archived"] in listed and env.ids["past_due"] in listed


def test_list_filters_fall_back_to_the_settings_and_page(env: Env) -> None:
    """ "each one falls back to the server setting, so a single call can narrow eligibility or page"."""
    assert env.listed(min_age_days=100_000) == []
    assert env.listed(importance_floor=0.05) == []
    wider = env.listed(importance_floor=1.0)
    assert env.ids["important"] in wider and env.ids["no_importance"] not in wider
    page = env.review(action="list", limit=2, offset=2)
    assert [i["id"] for i in page["items"]] == [env.ids["anchored"], env.ids["linked_by_archived"]]
    assert page["meta"]["counts"] == {"limit": 2, "offset": 2, "total": 7, "returned": 2, "filtered_out": 5}
    for bad in ({"min_age_days": 0}, {"importance_floor": 2}, {"limit": 0}):
        _message, error = env.wire.error("retention_review", action="list", **bad)
        assert error is not None and error["statusCode"] == 400


def test_compact_and_fields_apply_to_the_candidates(env: Env) -> None:
    """ "compact and fields apply as on every other read tool"."""
    compact = env.review(action="list", compact=True, limit=1)["items"][0]
    assert set(compact) == {
        "id",
        "content",
        "status",
        "tags",
        "project",
        "project_id",
        "project_name",
        "signals",
    }
    picked = env.review(action="list", fields=["id"], limit=1)["items"][0]
    assert set(picked) == {"id", "project_id", "project_name", "signals"}
    full = env.review(action="list", limit=1)["items"][0]
    assert {"title", "importance", "created_at", "path"} <= set(full)


def test_a_recalled_thought_has_hits_and_stops_being_a_candidate(env: Env) -> None:
    """ "no recorded hits (a missing count is 0)"."""
    env.wire.recall(action="get", thought_id=env.ids["hit"])
    assert env.ids["hit"] not in env.listed()


def test_protect_marks_the_thought_in_its_frontmatter(env: Env) -> None:
    """protect → `{ item: <protect report>, meta }`; a protected thought is no candidate."""
    before = env.commits()
    done = env.review(action="protect", thought_id=env.ids["old_b"])
    assert done["item"]["status"] == "protected" and done["item"]["thought"]["is_protected"] is True
    assert env.meta_of("old-b")["is_protected"] is True
    assert env.commits() == before + 1
    assert env.ids["old_b"] not in env.listed()
    again = env.review(action="protect", thought_id=env.ids["old_b"])
    assert again["item"]["status"] == "already_protected" and env.commits() == before + 1


def test_delete_previews_with_dependents_then_soft_deletes_with_the_token(env: Env) -> None:
    """delete: "the preview item carries status: "preview", action: "preview", deleted: false, preview:
    true, confirm: false, thought_id, dependents, instruction and preview_token, and meta.preview mirrors the
    token (with the instruction as its consequence). Confirming requires the token"."""
    target = env.ids["linked_by_archived"]
    before = env.commits()
    preview = env.review(action="delete", thought_id=target)
    item = preview["item"]
    assert {k: item[k] for k in ("status", "action", "deleted", "preview", "confirm", "thought_id")} == {
        "status": "preview", "action": "preview", "deleted": False, "preview": True, "confirm": False,
        "thought_id": target,
    }  # fmt: skip
    assert [d["thought_id"] for d in item["dependents"]] == [env.ids["archived_linker"]]
    assert item["dependents"][0]["type"] == "related"
    assert preview["meta"]["preview"] == {
        "token": item["preview_token"], "destructive": True, "consequence": item["instruction"],
    }  # fmt: skip
    assert env.commits() == before
    message, error = env.wire.error("retention_review", action="delete", thought_id=target, confirm=True)
    assert "preview_token" in message and error is not None and error["statusCode"] == 400
    done = env.review(action="delete", thought_id=target, confirm=True, preview_token=item["preview_token"])
    assert (
        done["item"]["status"] == "deleted"
        and done["item"]["deleted"] is True
        and "preview" not in done["meta"]
    )
    meta = env.meta_of("linked-by-archived")
    assert meta["status"] == "deleted" and meta["deleted_at"]  # soft: the file is still there
    assert env.commits() == before + 1 and "retention_review" in git(env.vault, "log", "-1", "--format=%s")
    assert target not in env.listed()
    _message, error = env.wire.error("retention_review", action="delete", thought_id=env.ids["protected"])
    assert error is not None and error["statusCode"] == 409


def test_compact_merges_every_source_into_a_protected_active_summary(env: Env) -> None:
    """compact: "The summary is created active and protected, and every source is merged into it —
    archived with its edges transferred, not hard-deleted"; "meta.preview reports token: null"."""
    wire = env.wire
    keeper = wire.create("compactword keeper thought stays active")
    first = wire.create("compactword first source", status="draft")
    second = wire.create("compactword second source", status="draft")
    wire.store(action="link", source_id=first, target_id=keeper, edge_type="supports")
    wire.store(action="link", source_id=first, target_id=second, edge_type="related")
    summary = {"content": "compactword summary of both sources", "tags": ["summary"]}
    preview = env.review(action="compact", source_ids=[first, second], summary=summary)
    item = preview["item"]
    assert (item["status"], item["preview"], item["confirm"], item["source_ids"]) == (
        "preview", True, False, [first, second],
    )  # fmt: skip
    assert preview["meta"]["preview"]["token"] is None and preview["meta"]["preview"]["destructive"] is True
    assert item["instruction"]
    done = env.review(action="compact", source_ids=[first, second], summary=summary, confirm=True)
    item = done["item"]
    assert (item["status"], item["preview"], item["confirm"]) == ("compacted", False, True)
    assert done["meta"]["counts"]["sources"] == 2 and "preview" not in done["meta"]
    made = item["summary"]
    assert made["status"] == "active" and made["is_protected"] is True and made["tags"] == ["summary"]
    for source in (first, second):
        assert wire.recall(action="get", thought_id=source)["item"]["status"] == "archived"
    upstream = wire.recall(action="get", thought_id=made["id"], include_edges=True)["item"]["upstream"]
    by_target = {e["edge"]["target_id"]: e["edge"]["type"] for e in upstream}
    assert by_target == {keeper: "supports", first: "replaces", second: "replaces"}
    _message, error = env.wire.error(
        "retention_review", action="compact", source_ids=[made["id"]], summary=summary, confirm=True
    )
    assert error is not None and error["statusCode"] == 409  # the summary is protected
