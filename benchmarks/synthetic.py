"""Deterministic synthetic vaults for the scale benchmark: varied, realistic agent memories.

Every note is built from the seed and its number alone, so a vault of 100k notes starts with the
same 10k notes as a vault of 10k. Notes are written as a person's (or an import's) Markdown files
with vaultmem's frontmatter, committed in one git commit. Texts mix kinds (decisions, fixes,
conventions, references, workflows, preferences, ideas), a few hundred services, tools, files,
people and numbers, so BM25 and the vector leg both face a realistic spread of near-duplicates and
unrelated notes. Notes arrive in sessions (a few minutes apart within one project), so the
hybrid ranking's context step sees the same adjacency it would in a real vault.
"""

from __future__ import annotations

import json
import random
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

SERVICES = [
    f"{a}-{b}"
    for a in ("billing", "auth", "search", "ingest", "notify", "report", "media", "sync", "edge", "ledger")
    for b in ("api", "worker", "gateway", "cron", "db", "cache")
]
TOOLS = [
    "ruff", "mypy", "pytest", "terraform", "kubectl", "helm", "docker", "poetry", "uv", "npm",
    "pnpm", "vite", "webpack", "postgres", "redis", "kafka", "nginx", "caddy", "grafana", "sentry",
    "datadog", "github actions", "buildkite", "bazel", "make", "cargo", "rustup", "go test",
    "pre-commit", "black", "eslint", "prettier", "jest", "playwright", "celery", "airflow",
    "dbt", "duckdb", "sqlite", "lancedb",
]  # fmt: skip
FILES = [
    f"{d}/{f}"
    for d in ("src", "deploy", "config", "scripts", "tests", "docs", "infra")
    for f in ("settings.py", "main.tf", "values.yaml", "Makefile", "ci.yml", "schema.sql", "index.ts")
]
PEOPLE = [
    "Ana", "Bilal", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivo", "Jae", "Kofi", "Lena",
    "Mateo", "Nadia", "Oskar", "Priya", "Quinn", "Rosa", "Sven", "Tariq", "Uma", "Viktor", "Wen",
]  # fmt: skip
ENVS = ["staging", "production", "the dev cluster", "CI", "the laptop", "the EU region", "the US region"]
TOPICS = [
    "timeouts", "retries", "connection pooling", "rate limits", "memory leaks", "flaky tests",
    "cold starts", "schema migrations", "feature flags", "log volume", "disk usage", "TLS certificates",
    "secret rotation", "backups", "cache invalidation", "pagination", "time zones", "unicode filenames",
    "dependency pinning", "release notes", "on-call handover", "load shedding", "queue depth",
    "index bloat", "query plans", "access tokens", "webhooks", "image sizes", "build caching",
    "code review", "error budgets", "dashboards", "alert fatigue", "vacuum", "replication lag",
]  # fmt: skip
PERSONAL = [
    "prefers short answers with the command first", "likes tests named as sentences",
    "wants British spelling in docs", "reads email only in the afternoon", "runs on Tuesdays",
    "is learning Portuguese", "keeps a reading list of distributed systems papers",
    "brews coffee with an Aeropress", "takes Fridays for deep work",
    "dislikes Jira tickets without repro steps",
]  # fmt: skip

TEMPLATES: dict[str, list[str]] = {
    "decision": [
        "We chose {tool} over {tool2} for {service} because {topic} were easier to reason about.",
        "Decided with {person} to move {service} to {env} next sprint; {topic} blocked the old plan.",
        "{service} keeps {tool} for now. Revisit when {topic} exceed {n} per day.",
        "Agreed: {service} owns {topic}; {service2} only reads from it.",
    ],
    "fix": [
        "{service} failed in {env} with {topic}; fixed by raising the limit in {file} to {n}.",
        "The {tool} step in CI broke on {topic}. Pinning {tool} to {version} fixed it.",
        "{person} found that {service} leaked connections under {topic}; "
        "closing the client in {file} fixed it.",
        "Symptom: {service} returned 502 in {env}. Cause: {topic} after the {tool} upgrade. "
        "Rolled back to {version}.",
    ],
    "convention": [
        "Always run {tool} before committing changes to {file}.",
        "Name {service} metrics with the service prefix and keep {topic} dashboards in one folder.",
        "Every migration touching {service} needs a rollback script next to {file}.",
        "Use {tool} for {topic} checks in every project; do not vendor it.",
    ],
    "reference": [
        "{service} listens on port {port} in {env}; its config lives in {file}.",
        "The {topic} runbook for {service} is in {file}; {person} maintains it.",
        "{service} uses {tool} {version}; the upgrade notes mention {topic}.",
        "Contact {person} about {topic} on {service}; they wrote most of {file}.",
    ],
    "workflow": [
        "To release {service}: bump {file}, run {tool}, tag {version}, "
        "then watch {topic} in {env} for {n} minutes.",
        "Rotating secrets for {service}: generate with {tool}, update {file}, restart in {env}.",
        "Debugging {topic} in {service}: enable verbose logs in {file}, "
        "reproduce in {env}, attach the trace.",
    ],
    "preference": [
        "{person} {personal}.",
        "The user {personal}; keep that in mind when reviewing {service}.",
    ],
    "idea": [
        "Idea: cache {topic} results for {service} in {tool} to cut latency by {n} ms.",
        "What if {service} exposed {topic} as a webhook instead of polling {file}?",
        "Could we replace {tool} with {tool2} in {service}? Would simplify {topic}.",
    ],
}
FOLLOW_UPS = [
    "{person} confirmed this on {day}.",
    "Measured {n} ms p95 afterwards.",
    "See {file} for details.",
    "This also affects {service2}.",
    "Not yet verified in {env}.",
    "Related: {topic} in {service2}.",
]
KIND_DIRS = {
    "decision": "memory/episodic",
    "fix": "memory/episodic",
    "convention": "memory/procedural",
    "reference": "memory/semantic",
    "workflow": "memory/procedural",
    "preference": "memory/semantic",
    "idea": "personal/ideas",
}
QUERY_TEMPLATES = [
    "how do we release {service}",
    "{service} {topic} in {env}",
    "which port does {service} use",
    "why did we choose {tool}",
    "{tool} broke in CI",
    "who knows about {topic}",
    "{topic} runbook",
    "what does {person} prefer",
    "{service} 502 after upgrade",
    "rotate secrets for {service}",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
START = datetime(2024, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class SyntheticNote:
    id: str
    rel: str
    title: str
    kind: str
    project: str | None
    created: datetime
    body: str

    def markdown(self) -> str:
        stamp = self.created.strftime("%Y-%m-%dT%H:%M:%SZ")
        project = f"project: {self.project}\n" if self.project else ""
        return (
            f"---\nid: {self.id}\ntitle: {json.dumps(self.title)}\n"
            f"kind: {self.kind}\nstatus: active\n{project}"
            f"tags: []\ncreated: '{stamp}'\nupdated: '{stamp}'\nimportance: 0.5\noccurrences: 1\n---\n"
            f"{self.body}\n"
        )

    @property
    def embedded_text(self) -> str:
        """What the index embeds (title and body), for the raw embedder comparison."""
        return f"{self.title}\n{self.body}"


def _fill(template: str, rng: random.Random) -> str:
    return template.format(
        service=rng.choice(SERVICES),
        service2=rng.choice(SERVICES),
        tool=rng.choice(TOOLS),
        tool2=rng.choice(TOOLS),
        file=rng.choice(FILES),
        person=rng.choice(PEOPLE),
        env=rng.choice(ENVS),
        topic=rng.choice(TOPICS),
        personal=rng.choice(PERSONAL),
        n=rng.choice([3, 5, 10, 20, 50, 100, 250, 500, 1000, 4000]),
        port=rng.randrange(3000, 9999),
        version=f"{rng.randrange(0, 9)}.{rng.randrange(0, 30)}.{rng.randrange(0, 12)}",
        day=rng.choice(DAYS),
    )


def project_count(size: int) -> int:
    return max(2, size // 500)


def note(i: int, seed: int = 2178) -> SyntheticNote:
    """The ``i``-th note of every synthetic vault (independent of the vault's size)."""
    rng = random.Random(seed * 1_000_003 + i)
    session, turn = divmod(i, 8)  # notes come in sessions of 8, minutes apart
    srng = random.Random(seed * 7919 + session)
    project = f"proj-{srng.randrange(200):03d}" if srng.random() < 0.85 else None
    created = START + timedelta(hours=session * 3 + srng.randrange(3), minutes=turn * rng.randrange(1, 6))
    kind = rng.choice(list(TEMPLATES))
    sentences = [_fill(rng.choice(TEMPLATES[kind]), rng)]
    sentences += [_fill(rng.choice(FOLLOW_UPS), rng) for _ in range(rng.choice([0, 0, 1, 1, 2, 3, 5]))]
    words = sentences[0].rstrip(".").split()
    title = " ".join(words[: rng.randrange(3, 8)]).strip(",;:?")
    note_id = str(uuid.UUID(int=rng.getrandbits(128) & ~(0xF << 76) | (0x7 << 76)))
    slug = f"{'-'.join(w.lower().strip('.,;:?') for w in title.split()[:5])}-{i}"
    slug = "".join(c if c.isalnum() or c == "-" else "-" for c in slug)
    folder = f"desk/projects/{project}" if project else KIND_DIRS[kind]
    return SyntheticNote(note_id, f"{folder}/{slug}.md", title, kind, project, created, " ".join(sentences))


def notes(size: int, seed: int = 2178) -> Iterator[SyntheticNote]:
    """The first ``size`` notes. Projects are spread as ``proj-NNN`` with ``size // 500`` in use."""
    projects = project_count(size)
    for i in range(size):
        n = note(i, seed)
        if n.project is not None:
            number = int(n.project[5:]) % projects
            n = SyntheticNote(
                n.id, n.rel.replace(n.project, f"proj-{number:03d}"), n.title, n.kind,
                f"proj-{number:03d}", n.created, n.body,
            )  # fmt: skip
        yield n


def queries(count: int, seed: int = 99) -> list[str]:
    """``count`` distinct queries in the vaults' vocabulary."""
    rng = random.Random(seed)
    seen: list[str] = []
    found: set[str] = set()
    while len(seen) < count:
        q = _fill(rng.choice(QUERY_TEMPLATES), rng)
        if q not in found:
            found.add(q)
            seen.append(q)
    return seen


def write_vault(root: Path, size: int) -> list[SyntheticNote]:
    """Create a vault at ``root`` holding ``size`` synthetic notes, committed to git."""
    from vaultmem.vault.init import init_vault

    # A repository of its own first: under benchmarks/out/ the vault is inside this checkout's
    # work tree, and init would otherwise take the checkout's repository for the vault's.
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, capture_output=True)
    init_vault(root)
    contract = root / "filing.yaml"
    contract.write_text(
        contract.read_text(encoding="utf-8").replace("daily_write_cap: 200", "daily_write_cap: 10000000"),
        encoding="utf-8",
    )
    written = list(notes(size))
    for n in written:
        path = root / n.rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(n.markdown(), encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, capture_output=True)
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-qm", "bench"],
        cwd=root,
        check=True,
        capture_output=True,
    )
    return written
