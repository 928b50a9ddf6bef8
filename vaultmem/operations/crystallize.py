"""``memory_crystallize``: the graph of a project, a cluster made by hand, clusters found by distance.

A cluster is a vault note like any other (``is_cluster: true``) whose frontmatter lists its members
as ``cluster: ["[[member]]", ...]``, so Obsidian's graph view draws the cluster and its edges and a
person can add or drop a member by hand. ``cluster`` and ``auto_cluster`` write the cluster note and
its edges in one commit (:meth:`vaultmem.vault.writer.VaultWriter.run`).

``auto_cluster`` groups the eligible thoughts (active and draft, not cluster thoughts, not already
members of a live cluster) with a Union-Find over their vectors (:mod:`vaultmem.graph.clustering`),
read from the index's in-memory matrix. It previews first; ``confirm: true`` with the token
recomputes the groups from the vault as it is then and writes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from vaultmem.errors import InvalidInput
from vaultmem.filing import rules
from vaultmem.notes.links import add_links
from vaultmem.notes.model import DRAFT_STATUS, iso
from vaultmem.operations.clustering import Group, group_vectors, suggest_title
from vaultmem.operations.context import Context
from vaultmem.operations.recall import check_int
from vaultmem.operations.results import STATUS_FILTERS, Answer, Json, Row, WithColumns
from vaultmem.operations.thoughts import NewThought, check_thought, plan_thought
from vaultmem.vault.entry import Entry
from vaultmem.vault.plan import Plan

TOOL = "memory_crystallize"
MAX_MEMBERS = 1000
MAX_GRAPH_LIMIT = 1000
DEFAULT_GRAPH_LIMIT = 100
#: Members listed by title in a cluster note's body (the frontmatter lists every one).
BODY_MEMBERS = 50
ELIGIBLE_STATUSES = frozenset({"active", DRAFT_STATUS})


@dataclass(frozen=True)
class AutoClusterSettings:
    """``auto_cluster``'s tuning (the graph document's ``autoCluster.*`` settings)."""

    #: A maximum cosine *distance* despite the name: pairs strictly closer than this are joined.
    min_similarity: float = 0.15
    min_cluster_size: int = 3
    max_clusters: int = 50


class Crystallize:
    """The actions of ``memory_crystallize``."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.lookup = ctx.lookup
        settings = ctx.settings
        self.settings = AutoClusterSettings(
            settings.auto_cluster_min_similarity,
            settings.auto_cluster_min_cluster_size,
            settings.auto_cluster_max_clusters,
        )

    # -- graph --------------------------------------------------------------------------------------
    def graph(self, project: str | None, statuses: frozenset[str], limit: int, offset: int) -> Answer:
        """Nodes (thoughts) of a project page in ``items``; edges between two of them in ``edges``."""
        check_int("limit", limit, 1, MAX_GRAPH_LIMIT)
        check_int("offset", offset, 0, 10**9)
        entries = [
            e
            for e in self.ctx.catalog.entries()
            if e.status in statuses and (project is None or e.project == project)
        ]
        entries.sort(key=lambda e: (e.created or "", self.lookup.id_of(e)))
        page = entries[offset : offset + limit]
        thoughts = self.lookup.thoughts(page)
        ids = set(thoughts)
        edges: list[dict[str, str]] = []
        groups: dict[str, str | None] = {}
        for note_id in thoughts:
            incoming = sorted(r.source_id for r in self.lookup.edges.incoming(note_id) if r.type == "cluster")
            groups[note_id] = incoming[0] if incoming else None
            for record in self.lookup.edges.outgoing(note_id):
                if record.target_id in ids:
                    edges.append(
                        {
                            "id": record.id,
                            "source": record.source_id,
                            "target": record.target_id,
                            "type": record.type,
                        }
                    )
        nodes = [
            WithColumns(
                t,
                {
                    "label": t.title,
                    "group": groups[t.id],
                    "category": t.kind,
                    "project_name": t.project,
                },
            )
            for t in thoughts.values()
        ]
        answer = Answer.many(
            "graph", nodes, total=len(entries), filtered_out=len(entries) - len(nodes), edges=len(edges)
        )
        answer.beside = {"edges": edges}
        return answer

    # -- cluster --------------------------------------------------------------------------------------
    def cluster(
        self, thought_ids: Json, title: Json, tags: Sequence[str] | None, project: str | None
    ) -> Answer:
        """A cluster thought with a ``cluster`` edge to each member; one commit."""
        if not isinstance(thought_ids, list) or not 1 <= len(thought_ids) <= MAX_MEMBERS:
            raise InvalidInput(f"thought_ids must be a list of 1 to {MAX_MEMBERS} thought ids")
        members = list({self.lookup.id_of(e): e for e in map(self._member, thought_ids)}.values())
        if title is not None and (not isinstance(title, str) or not title.strip()):
            raise InvalidInput("title must be non-empty text (or omitted for a suggested one)")
        home = project or _shared_project(members)
        planned = self._write_clusters([(members, title, tags)], home, "cluster")
        cluster_entry, edges = planned[0]
        cluster_thought = self.lookup.thought(cluster_entry)
        thoughts = self.lookup.thoughts(members)
        item: Row = {
            "cluster": cluster_thought,
            "edges": edges,
            "members": [thoughts[self.lookup.id_of(m)] for m in members],
        }
        return Answer.one("cluster", item, members=len(members), edges=len(edges))

    def _member(self, thought_id: Json) -> Entry:
        return self.lookup.require(thought_id, "thought_ids")  # a forgotten thought is a 404

    def _write_clusters(
        self,
        specs: Sequence[tuple[list[Entry], Json, Sequence[str] | None]],
        project: str | None,
        summary: str,
    ) -> list[tuple[Entry, list[dict[str, str]]]]:
        """Write one cluster note per spec, each with its ``cluster`` links; one commit for all."""
        contract = self.ctx.contract()
        rows = []
        for members, title, tags in specs:
            titles = [m.title for m in members]
            name = title if isinstance(title, str) else suggest_title(titles)
            listed = "\n".join(f"- {t}" for t in titles[:BODY_MEMBERS])
            more = f"\n- … and {len(titles) - BODY_MEMBERS} more" if len(titles) > BODY_MEMBERS else ""
            content = f"{name}\n\nA cluster of {len(members)} thoughts:\n\n{listed}{more}"
            spec = NewThought(
                content, tags, "active", is_cluster=True, title=name[: contract.max_title_chars]
            )
            rows.append((check_thought(self.ctx, spec, contract), members))

        def decide() -> Plan[list[tuple[str, list[dict[str, str]]]]]:
            draft = self.ctx.draft()
            now = self.ctx.now()
            written = self.ctx.catalog.written_since(now.date())
            rules.check_cap(written + len(rows) - 1, contract, now.date(), TOOL)
            stamp = iso(now)
            out: list[tuple[str, list[dict[str, str]]]] = []
            for row, members in rows:
                rel = plan_thought(self.ctx, draft, row, project, now)
                text = draft.text_of(rel)
                cluster_id = str(text.meta["id"])
                links = [self.lookup.link_to(member) for member in members]
                draft.put(rel, add_links(text, "cluster", links, stamp), "cluster")
                edges = [
                    {"source_id": cluster_id, "target_id": self.lookup.id_of(member), "type": "cluster"}
                    for member in members
                ]
                out.append((rel, edges))
            return draft.plan(out)

        planned = self.ctx.writer.run(decide, tool=TOOL, summary=summary).result
        result: list[tuple[Entry, list[dict[str, str]]]] = []
        for rel, edges in planned or []:
            entry = self.ctx.catalog.by_path(rel)
            assert entry is not None
            result.append((entry, edges))
        return result

    # -- auto_cluster -------------------------------------------------------------------------------
    def eligible(self) -> list[Entry]:
        """Active and draft thoughts that are not clusters and not yet in a live cluster."""
        live_clusters = {
            self.lookup.id_of(e)
            for e in self.ctx.catalog.entries()
            if e.is_cluster and e.status not in STATUS_FILTERS["archived"] | {"deleted"}
        }
        out = []
        for entry in self.ctx.catalog.entries():
            if entry.status not in ELIGIBLE_STATUSES or entry.is_cluster:
                continue
            note_id = self.lookup.id_of(entry)
            if any(
                r.type == "cluster" and r.source_id in live_clusters
                for r in self.lookup.edges.incoming(note_id)
            ):
                continue
            out.append(entry)
        out.sort(key=lambda e: self.lookup.id_of(e))
        return out

    def groups(self, settings: AutoClusterSettings) -> tuple[int, list[tuple[Group, list[Entry]]]]:
        """(how many thoughts were eligible, the groups found among them with their entries)."""
        entries = {self.lookup.id_of(e): e for e in self.eligible()}
        index = self.ctx.index
        index.wait_for_writes()  # read your writes: every acknowledged note has its vector
        ids, vectors = index.mirror.vectors_of(entries)
        found = group_vectors(
            vectors, settings.min_similarity, settings.min_cluster_size, settings.max_clusters
        )
        return len(entries), [(g, [entries[ids[i]] for i in g.members]) for g in found]

    def auto_cluster(
        self,
        min_similarity: float | None,
        min_cluster_size: int | None,
        max_clusters: int | None,
        confirm: bool,
        token: str | None,
    ) -> Answer:
        settings = self._checked(min_similarity, min_cluster_size, max_clusters)
        args = {
            "min_similarity": settings.min_similarity,
            "min_cluster_size": settings.min_cluster_size,
            "max_clusters": settings.max_clusters,
        }
        if confirm:
            self.ctx.tokens.redeem(
                token, TOOL, "auto_cluster", args, "memory_crystallize action=auto_cluster (same settings)"
            )
        candidates, groups = self.groups(settings)
        rows: list[Row] = []
        for index, (group, members) in enumerate(groups):
            rows.append(
                {
                    "index": index,
                    "title": suggest_title([m.title for m in members]),
                    "size": len(members),
                    "cohesion": group.cohesion,
                    "max_link_distance": group.max_link_distance,
                    "members": [{"id": self.lookup.id_of(m), "title": m.title} for m in members],
                }
            )
        if not confirm:
            answer = Answer.many("auto_cluster", rows, candidates=candidates, clusters=len(rows))
            if rows:
                token = self.ctx.tokens.issue(TOOL, "auto_cluster", args)
                answer.preview = {
                    "token": token,
                    "destructive": True,
                    "consequence": f"Creates {len(rows)} cluster thought(s), each with a 'cluster' edge "
                    "to its members (new notes and links in the vault, one commit).",
                    "instruction": "Call memory_crystallize again with action=auto_cluster, the same "
                    f"settings, confirm=true and preview_token={token} to proceed.",
                }
            return answer
        written = (
            self._write_clusters(
                [(members, str(row["title"]), None) for row, (_g, members) in zip(rows, groups, strict=True)],
                None,
                f"auto_cluster {len(rows)} clusters",
            )
            if rows
            else []
        )
        for row, (entry, edges) in zip(rows, written, strict=True):
            row["status"] = "created"
            row["cluster_id"] = self.lookup.id_of(entry)
            row["edges"] = len(edges)
        return Answer.many("auto_cluster", rows, candidates=candidates, clusters=len(rows))

    def _checked(
        self, min_similarity: float | None, min_cluster_size: int | None, max_clusters: int | None
    ) -> AutoClusterSettings:
        base = self.settings
        distance = base.min_similarity if min_similarity is None else min_similarity
        if isinstance(distance, bool) or not isinstance(distance, int | float) or not 0 < distance < 2:
            raise InvalidInput(
                "min_similarity is a maximum cosine distance (0 < value < 2; lower is tighter), "
                "despite its name"
            )
        size = check_int(
            "min_cluster_size",
            base.min_cluster_size if min_cluster_size is None else min_cluster_size,
            2,
            1000,
        )
        most = check_int("max_clusters", base.max_clusters if max_clusters is None else max_clusters, 1, 500)
        return AutoClusterSettings(float(distance), size, most)


def _shared_project(entries: Iterable[Entry]) -> str | None:
    projects = {e.project for e in entries}
    return projects.pop() if len(projects) == 1 else None
