"""``memory_store``: create and update thoughts, link, unlink and retype edges, in batches too.

Every write goes through :func:`vaultmem.graph.pipeline.run_writes` (decided under the write locks,
staged and fsynced, renamed into place, one git commit per action, the index told before the call
returns). Edges live in the source note's frontmatter (:mod:`vaultmem.graph.edges`), so a batch of
links is a batch of note edits. Destructive actions (unlink, retype) preview first and need the
preview's token to run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vaultmem.errors import CapReached, InvalidInput, NotFound, VaultmemError
from vaultmem.filing import rules
from vaultmem.graph.answer import Answer
from vaultmem.graph.edges import (
    Edge,
    LinkTarget,
    add_link,
    check_edge_type,
    check_endpoints,
    created_at_of,
    decide_link,
)
from vaultmem.graph.links import typed_links
from vaultmem.graph.lookup import Located, Lookup
from vaultmem.graph.pipeline import Draft, Plan, run_writes
from vaultmem.graph.thoughts import Thought, writable_status
from vaultmem.graph.tokens import PreviewTokens
from vaultmem.notes import frontmatter as fm
from vaultmem.notes.ids import uuid7
from vaultmem.notes.model import iso, new_note_text, parse_time
from vaultmem.notes.slugs import make_slug, meaningful_words, resolve_collision
from vaultmem.service import DEFAULT_IMPORTANCE
from vaultmem.vault.catalog import Entry

TOOL = "memory_store"
MAX_LINKS = 1000
MAX_UNLINKS = 1000
MAX_BULK = 10_000
DEFAULT_KIND = "reference"
TAGS_MODES = ("replace", "add", "remove")
MAX_URL_LINKS = 50


@dataclass(frozen=True)
class NewThought:
    """The arguments of one thought to create (``create`` or a row of ``bulk_create``)."""

    content: object
    tags: Sequence[str] | None = None
    status: object = None
    is_protected: bool | None = None
    is_global: bool | None = None
    is_cluster: bool | None = None
    parent_id: object = None
    url_links: object = None
    kind: object = None
    title: object = None


def _check_url_links(value: object) -> list[dict[str, str]] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > MAX_URL_LINKS:
        raise InvalidInput(f"url_links must be a list of at most {MAX_URL_LINKS} {{text, url}} objects")
    out: list[dict[str, str]] = []
    for row in value:
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("text"), str)
            or not isinstance(row.get("url"), str)
        ):
            raise InvalidInput("each url_links entry is {text, url} (label optional), all text")
        text, url = row["text"].strip(), row["url"].strip()
        if not text or not url or len(url) > rules.MAX_SOURCE_CHARS:
            raise InvalidInput("each url_links entry needs a non-empty text and url")
        entry = {"text": text, "url": url}
        label = row.get("label")
        if isinstance(label, str) and label.strip() and label.strip() != text:
            entry["label"] = label.strip()
        out.append(entry)
    return out


def _flag(name: str, value: object) -> bool | None:
    if value is None:
        return None
    if not isinstance(value, bool):
        raise InvalidInput(f"{name} must be true or false")
    return value


class GraphStore:
    """The write actions of the graph tools."""

    def __init__(self, lookup: Lookup, tokens: PreviewTokens) -> None:
        self.lookup = lookup
        self.service = lookup.service
        self.tokens = tokens

    # -- create / bulk_create ------------------------------------------------------------------------
    def create(self, spec: NewThought, project: str | None) -> Thought:
        contract = self.service.contract()
        plan_row = self._check_new(spec, contract)

        def decide() -> Plan[str]:
            draft = Draft(self.service)
            now = self.service._now()
            rules.check_cap(self.service.catalog.written_since(now.date()), contract, now.date(), TOOL)
            rel = self._plan_create(draft, plan_row, project, now)
            return Plan(draft.writes(), rel)

        notes, rel = run_writes(self.service, decide, tool=TOOL, summary="create")
        assert rel is not None
        note = next(n for n in notes if n.path == rel)
        entry = self.service.catalog.by_path(note.path)
        assert entry is not None
        return self.lookup.thought(entry, note.body)

    def bulk_create(self, rows: object, project: str | None, idempotency_key: str | None = None) -> Answer:
        """Create the rows in one commit, a result per row in input order.

        With ``idempotency_key`` a retry of the batch (the same key, the rows in the same order)
        writes nothing twice: each row is stored with a hashed tag of the key and its position,
        and a row already stored under it is answered with its thought (``replayed: true``)
        instead of being written again; rows the first call did not write are written now.
        """
        if not isinstance(rows, list) or not 1 <= len(rows) <= MAX_BULK:
            raise InvalidInput(f"thoughts must be a list of 1 to {MAX_BULK} thoughts; nothing was written")
        batch = rules.idempotency_tag(idempotency_key) if idempotency_key is not None else None
        row_tags = [rules.idempotency_tag(f"{batch}#{i}") for i in range(len(rows))] if batch else []
        contract = self.service.contract()
        checked: list[dict[str, Any] | str] = []
        for row in rows:
            try:
                if not isinstance(row, dict) or "content" not in row:
                    raise InvalidInput("each thought is an object with at least `content` (its text)")
                spec = NewThought(**{k: v for k, v in row.items() if k in NewThought.__dataclass_fields__})
                unknown = sorted(set(row) - set(NewThought.__dataclass_fields__))
                if unknown:
                    raise InvalidInput(f"unknown field(s) {', '.join(unknown)} in a thought")
                checked.append(self._check_new(spec, contract))
            except VaultmemError as exc:
                checked.append(str(exc))

        def decide() -> Plan[tuple[list[tuple[bool, str]], set[int]]]:
            draft = Draft(self.service)
            now = self.service._now()
            written = self.service.catalog.written_since(now.date())
            out: list[tuple[bool, str]] = []
            replayed: set[int] = set()
            for i, row in enumerate(checked):
                if isinstance(row, str):
                    out.append((False, row))
                    continue
                earlier = self.service.catalog.by_idempotency_tag(row_tags[i]) if row_tags else None
                if earlier is not None:  # written by an earlier call with this key
                    out.append((True, earlier.path))
                    replayed.add(i)
                    continue
                try:  # past the daily cap, the remaining rows fail one by one with the cap's message
                    rules.check_cap(written, contract, now.date(), TOOL)
                except CapReached as exc:
                    out.append((False, str(exc)))
                    continue
                if row_tags:
                    row = {**row, "tags": [*row["tags"], row_tags[i]]}
                out.append((True, self._plan_create(draft, row, project, now)))
                written += 1
            return Plan(draft.writes(), (out, replayed))

        notes, (planned, replayed) = run_writes(
            self.service,
            decide,
            tool=TOOL,
            summary=f"bulk_create {len(rows)} thoughts",
            keys=[f"idem:{batch}"] if batch else (),  # a retry racing the first call waits for it
        )
        by_path = {n.path: n for n in notes}
        items: list[dict[str, Any]] = []
        for i, (ok, rel) in enumerate(planned):
            if not ok:
                items.append({"index": i, "status": "failed", "error": rel})
                continue
            entry = self.service.catalog.by_path(rel)
            assert entry is not None
            written_now = by_path.get(rel)
            item = {
                "index": i,
                "status": "created",
                "thought": self.lookup.thought(entry, written_now.body if written_now else None),
            }
            if i in replayed:
                item["replayed"] = True
            items.append(item)
        created = sum(1 for it in items if it["status"] == "created")
        counts = {"created": created, "failed": len(items) - created}
        if batch:
            counts["replayed"] = len(replayed)
        return Answer.many("bulk_create", items, **counts)

    def _check_new(self, spec: NewThought, contract: Any) -> dict[str, Any]:
        content = rules.check_content(spec.content, contract)
        kind = rules.check_kind(spec.kind if spec.kind is not None else DEFAULT_KIND, contract)
        title = rules.check_title(
            spec.title if isinstance(spec.title, str) or spec.title is None else str(spec.title), contract
        )
        parent = self.lookup.require(spec.parent_id, "parent_id") if spec.parent_id is not None else None
        return {
            "content": content,
            "kind": kind,
            "title": title or rules.title_from_content(content),
            "tags": rules.check_tags(spec.tags, contract),
            "status": writable_status(spec.status) or "active",
            "is_protected": _flag("is_protected", spec.is_protected),
            "is_global": _flag("is_global", spec.is_global),
            "is_cluster": _flag("is_cluster", spec.is_cluster),
            "url_links": _check_url_links(spec.url_links),
            "parent": parent,
        }

    def _plan_create(self, draft: Draft, row: dict[str, Any], project: str | None, now: Any) -> str:
        contract = self.service.contract()
        directory = (
            self.service.projects.space_for(contract, project) if project else contract.class_dir(row["kind"])
        )
        note_id = uuid7()
        slug = resolve_collision(
            make_slug(row["title"]),
            lambda s: self.service.name_taken(directory, s) or draft.reserved_name(s),
            meaningful_words(row["title"], row["content"]),
            hash_source=note_id,
        )
        stamp = iso(now)
        fields: dict[str, Any] = {
            "id": note_id,
            "title": row["title"],
            "kind": row["kind"],
            "status": row["status"],
            "project": project,
            "tags": row["tags"],
            "created": stamp,
            "updated": stamp,
            "importance": DEFAULT_IMPORTANCE,
            "occurrences": 1,
            "filing": {"confidence": contract.append_confidence, "tool": TOOL},
        }
        for flag in ("is_cluster", "is_protected", "is_global"):
            if row[flag]:
                fields[flag] = True
        if row["url_links"]:
            fields["url_links"] = row["url_links"]
        text = new_note_text(fields, row["content"])
        parent: Entry | None = row["parent"]
        if parent is not None:
            text = add_link(text, "parent", self.lookup.link_to(parent), stamp)
        rel = f"{directory}/{slug}.md"
        draft.put(rel, text, "create", create=True)
        return rel

    # -- update ------------------------------------------------------------------------------------
    def update(
        self,
        thought_id: object,
        *,
        content: object = None,
        tags: Sequence[str] | None = None,
        tags_mode: str | None = None,
        status: object = None,
        project: str | None = None,
        set_project: bool = False,
        is_protected: object = None,
        is_global: object = None,
        surface_after: object = None,
    ) -> Thought:
        contract = self.service.contract()
        new_status = writable_status(status)
        new_content = rules.check_content(content, contract) if content is not None else None
        mode = tags_mode or "replace"
        if mode not in TAGS_MODES:
            raise InvalidInput(f"tags_mode must be one of {', '.join(TAGS_MODES)}")
        new_tags = rules.check_tags(tags, contract) if tags is not None else None
        flags = {
            "is_protected": _flag("is_protected", is_protected),
            "is_global": _flag("is_global", is_global),
        }
        if surface_after is not None and (not isinstance(surface_after, str) or not _is_time(surface_after)):
            raise InvalidInput(
                "surface_after must be an ISO-8601 date or date-time, like 2026-11-30T05:00:00Z"
            )

        def decide() -> Plan[str]:
            entry = self.lookup.require(thought_id)
            note = self.service.store.read(entry.path)
            assert note.text is not None
            text = note.text
            if new_content is not None:
                text = fm.with_body(text, new_content if new_content.endswith("\n") else new_content + "\n")
            changes: dict[str, Any] = {"updated": iso(self.service._now())}
            if new_status is not None:
                changes["status"] = new_status
            if new_tags is not None:
                hidden = [t for t in note.tags if t.startswith("idem-")]
                current = [t for t in note.tags if t not in hidden]
                if mode == "replace":
                    final = new_tags
                elif mode == "add":
                    final = [*current, *(t for t in new_tags if t not in current)]
                else:
                    final = [t for t in current if t not in new_tags]
                changes["tags"] = [*final, *hidden]
            if set_project:
                changes["project"] = project if project else fm.DELETE
            for key, value in flags.items():
                if value is not None:
                    changes[key] = True if value else fm.DELETE
            if surface_after is not None:
                changes["surface_after"] = surface_after
            changes = {k: v for k, v in changes.items() if not (v is fm.DELETE and k not in text.meta)}
            draft = Draft(self.service)
            draft.put(entry.path, fm.set_fields(text, changes), "update")
            return Plan(draft.writes(), entry.path)

        notes, rel = run_writes(self.service, decide, tool=TOOL, summary="update")
        note = next(n for n in notes if n.path == rel)
        entry = self.service.catalog.by_path(note.path)
        assert entry is not None
        return self.lookup.thought(entry, note.body)

    # -- link / link_batch -----------------------------------------------------------------------------
    def link(self, source_id: object, target_id: object, edge_type: object) -> Edge:
        edge_type = check_edge_type("related" if edge_type is None else edge_type)

        def decide() -> Plan[Edge]:
            draft = Draft(self.service)
            edge = self._plan_link(draft, source_id, target_id, edge_type)
            return Plan(draft.writes(), edge)

        _notes, edge = run_writes(
            self.service, decide, tool=TOOL, summary=f"link {edge_type}", subject=self._link_subject
        )
        assert edge is not None
        return edge

    def link_batch(self, links: object) -> Answer:
        if not isinstance(links, list) or not 1 <= len(links) <= MAX_LINKS:
            raise InvalidInput(
                f"links must be a list of 1 to {MAX_LINKS} {{source, target, type?}} items; nothing ran"
            )

        def decide() -> Plan[list[dict[str, Any]]]:
            draft = Draft(self.service)
            rows: list[dict[str, Any]] = []
            for i, link in enumerate(links):
                source = link.get("source") if isinstance(link, dict) else None
                target = link.get("target") if isinstance(link, dict) else None
                try:
                    if not isinstance(link, dict):
                        raise InvalidInput("each link is an object {source, target, type?}")
                    edge_type = check_edge_type(link.get("type") or "related", "type")
                    self._plan_link(draft, source, target, edge_type)
                    rows.append(
                        {
                            "index": i,
                            "status": "linked",
                            "source": source,
                            "target": target,
                            "type": edge_type,
                        }
                    )
                except VaultmemError as exc:
                    rows.append(
                        {
                            "index": i,
                            "status": "failed",
                            "source": source,
                            "target": target,
                            "error": str(exc),
                        }
                    )
            return Plan(draft.writes(), rows)

        _notes, rows = run_writes(self.service, decide, tool=TOOL, summary=f"link_batch {len(links)} links")
        assert rows is not None
        linked = sum(1 for r in rows if r["status"] == "linked")
        return Answer.many("link_batch", rows, linked=linked, failed=len(rows) - linked)

    def _plan_link(self, draft: Draft, source_id: object, target_id: object, edge_type: str) -> Edge:
        if (
            isinstance(source_id, str)
            and isinstance(target_id, str)
            and source_id.strip().lower() == target_id.strip().lower()
        ):
            raise InvalidInput("Edge cannot link a thought to itself (source_id and target_id are the same)")
        source = self.lookup.require(source_id, "source_id")
        target = self.lookup.require(target_id, "target_id")
        sid, tid = self.lookup.id_of(source), self.lookup.id_of(target)
        check_endpoints(sid, tid, edge_type, source.is_cluster)
        metas = {p: t.meta for p in (source.path, target.path) if (t := draft.edited(p)) is not None}
        between = self.lookup.links_between(source, target, metas)
        decision = decide_link(sid, tid, edge_type, between)
        now = iso(self.service._now())
        if decision.action == "replay":
            assert decision.existing is not None
            return self._with_created(draft, decision.existing)
        created = now
        if decision.action == "upgrade":
            assert decision.existing is not None
            old = self._with_created(draft, decision.existing)
            created = old.created_at or now
            holder = source if old.source_id == sid else target
            other_id = old.target_id
            text, _removed = self.lookup.without_link(
                draft.text_of(holder.path), holder.path, old.type, other_id
            )
            draft.put(holder.path, text, "upgrade link")
        draft.put(
            source.path,
            add_link(draft.text_of(source.path), edge_type, self.lookup.link_to(target), created),
            "link",
        )
        return Edge.make(sid, edge_type, tid, created)

    def _link_subject(self, edge: Edge) -> str:
        """``memory_store: link <source> -<type>-> <target>``: the commit subject names both ends."""
        ends = [self.lookup.entry(i) for i in (edge.source_id, edge.target_id)]
        source, target = (
            e.slug if e is not None else i
            for e, i in zip(ends, (edge.source_id, edge.target_id), strict=True)
        )
        return f"{TOOL}: link {source} -{edge.type}-> {target}"

    def _with_created(self, draft: Draft, edge: Edge) -> Edge:
        if edge.created_at:
            return edge
        source = self.lookup.entry(edge.source_id)
        target = self.lookup.entry(edge.target_id)
        stamp = None
        if source is not None and target is not None:
            meta = draft.text_of(source.path).meta
            points_at = self.lookup.points_at(source.path, meta, edge.type, edge.target_id)
            for edge_type, name in typed_links(meta):
                if edge_type == edge.type and points_at(name):
                    stamp = created_at_of(meta, edge_type, name)
            stamp = stamp or source.updated or source.created
        return Edge(edge.id, edge.source_id, edge.target_id, edge.type, stamp or "")

    # -- unlink / unlink_batch -----------------------------------------------------------------------
    def unlink(self, edge_id: object, confirm: bool, token: str | None) -> Answer:
        located = self.lookup.locate(edge_id)
        assert isinstance(edge_id, str)
        if located is None:
            return Answer.one("unlink", {"status": "not_found", "edge_id": edge_id})
        edge = located.edge
        args = {"edge_id": edge.id}
        if not confirm:
            token = self.tokens.issue(TOOL, "unlink", args)
            item = {
                "status": "preview",
                "edge_id": edge.id,
                "edge": edge.to_dict(),
                "consequence": _unlink_consequence(edge),
                "preview_token": token,
                "instruction": f"Call memory_store again with action=unlink, edge_id={edge.id}, "
                "confirm=true to proceed.",
            }
            answer = Answer.one("unlink", item)
            answer.preview = {"token": token, "destructive": True}
            return answer
        self.tokens.redeem(token, TOOL, "unlink", args, f"memory_store action=unlink edge_id={edge.id}")
        deleted = self._delete_edges([edge.id], "unlink")
        status = "deleted" if deleted else "not_found"
        return Answer.one("unlink", {"status": status, "edge_id": edge.id})

    def unlink_batch(self, edge_ids: object, confirm: bool) -> Answer:
        if not isinstance(edge_ids, list) or not 1 <= len(edge_ids) <= MAX_UNLINKS:
            raise InvalidInput(f"edge_ids must be a list of 1 to {MAX_UNLINKS} edge ids; nothing ran")
        if not all(isinstance(e, str) and e.strip() for e in edge_ids):
            raise InvalidInput("every edge_ids entry must be an edge id")
        found = {e: self.lookup.locate(e) for e in dict.fromkeys(edge_ids)}
        if not confirm:
            items: list[dict[str, Any]] = []
            for e in edge_ids:
                hit = found[e]
                if hit is None:
                    items.append({"edge_id": e, "status": "failed", "error": "Edge not found"})
                else:
                    items.append(
                        {
                            "edge_id": e,
                            "status": "preview",
                            "edge": hit.edge.to_dict(),
                            "consequence": _unlink_consequence(hit.edge),
                        }
                    )
            previewed = sum(1 for i in items if i["status"] == "preview")
            answer = Answer.many(
                "unlink_batch", items, deleted=0, preview=previewed, failed=len(items) - previewed
            )
            answer.preview = {
                "token": None,
                "destructive": True,
                "instruction": "Call memory_store again with action=unlink_batch, edge_ids=[...], "
                "confirm=true to proceed.",
            }
            return answer
        missing = [e for e, hit in found.items() if hit is None]
        if missing:
            raise NotFound(
                f"unlink_batch deleted nothing: {len(missing)} edge id(s) do not exist "
                f"({', '.join(missing[:10])}); remove them from edge_ids and call again"
            )
        self._delete_edges(
            [hit.edge.id for hit in found.values() if hit is not None], "unlink_batch", strict=True
        )
        items = [{"edge_id": e, "status": "deleted"} for e in edge_ids]
        return Answer.many("unlink_batch", items, deleted=len(items), preview=0, failed=0)

    def _delete_edges(self, edge_ids: list[str], action: str, *, strict: bool = False) -> int:
        """Remove edges from their source notes in one write; return how many were still there."""

        def decide() -> Plan[int]:
            draft = Draft(self.service)
            located: list[Located] = []
            for e in edge_ids:
                hit = self.lookup.locate(e)
                if hit is None and strict:
                    raise NotFound(f"{action} deleted nothing: edge {e} disappeared meanwhile; preview again")
                if hit is not None:
                    located.append(hit)
            for hit in located:
                edge = hit.edge
                holder = hit.source.path
                text, _removed = self.lookup.without_link(
                    draft.text_of(holder), holder, edge.type, edge.target_id
                )
                draft.put(holder, text, action)
            return Plan(draft.writes(), len(located))

        _notes, count = run_writes(
            self.service, decide, tool=TOOL, summary=f"{action} {len(edge_ids)} edge(s)"
        )
        return count or 0

    # -- retype --------------------------------------------------------------------------------------
    def retype(self, edge_id: object, new_type: object, confirm: bool, token: str | None) -> Answer:
        if new_type is None:
            raise InvalidInput("new_type is required for retype")
        new_type = check_edge_type(new_type, "new_type")
        located = self.lookup.locate(edge_id)
        if located is None:
            raise NotFound(f"Edge not found: no edge has id {edge_id}")
        edge = located.edge
        if edge.type == new_type:
            raise InvalidInput(f"edge {edge.id} is already of type '{new_type}'")
        check_endpoints(edge.source_id, edge.target_id, new_type, located.source.is_cluster)
        args = {"edge_id": edge.id, "new_type": new_type}
        if not confirm:
            token = self.tokens.issue(TOOL, "retype", args)
            item = {
                "status": "preview",
                "edge_id": edge.id,
                "old_edge_id": edge.id,
                "old_type": edge.type,
                "new_type": new_type,
                "source_id": edge.source_id,
                "target_id": edge.target_id,
                "consequence": f"Changes the '{edge.type}' edge between '{edge.source_id}' and "
                f"'{edge.target_id}' to '{new_type}' (the edge gets a new id; created_at is kept).",
                "preview_token": token,
                "instruction": f"Call memory_store again with action=retype, edge_id={edge.id}, "
                f"new_type={new_type}, confirm=true to proceed.",
            }
            answer = Answer.one("retype", item)
            answer.preview = {"token": token, "destructive": True}
            return answer
        self.tokens.redeem(
            token, TOOL, "retype", args, f"memory_store action=retype edge_id={edge.id} new_type={new_type}"
        )

        def decide() -> Plan[Edge]:
            hit = self.lookup.locate(edge.id)
            if hit is None:
                raise NotFound(f"Edge not found: edge {edge.id} was removed meanwhile")
            old = self._with_created(Draft(self.service), hit.edge)
            draft = Draft(self.service)
            holder = hit.source.path
            text, removed = self.lookup.without_link(draft.text_of(holder), holder, old.type, old.target_id)
            target = self.lookup.entry(old.target_id)
            assert target is not None
            # The retyped link keeps the name it had (the person may have written a path form).
            link = LinkTarget(removed[0], old.target_id) if removed else self.lookup.link_to(target)
            draft.put(holder, add_link(text, new_type, link, old.created_at), "retype")
            return Plan(draft.writes(), Edge.make(old.source_id, new_type, old.target_id, old.created_at))

        _notes, new_edge = run_writes(
            self.service, decide, tool=TOOL, summary=f"retype {edge.type} -> {new_type}"
        )
        assert new_edge is not None
        item = {
            "status": "retyped",
            "edge_id": new_edge.id,
            "old_edge_id": edge.id,
            "new_edge_id": new_edge.id,
            "old_type": edge.type,
            "new_type": new_type,
        }
        return Answer.one("retype", item)


def _unlink_consequence(edge: Edge) -> str:
    return f"Removes the '{edge.type}' edge between '{edge.source_id}' and '{edge.target_id}'."


def _is_time(value: str) -> bool:
    return parse_time(value) is not None
