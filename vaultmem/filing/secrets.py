"""The secret guard: find credentials in what an agent writes before any of it reaches a file or git.

git keeps every version forever, so a key pasted into a memory can never really be forgotten once it
is committed. The guard reads the title, content, tags and source (url, id) of a write and either
refuses it (the filing contract's default, ``secrets: {mode: refuse}``) or returns it with every
secret replaced by a marker such as ``[REDACTED:aws-access-key]`` (``mode: redact``). It only reads:
content is data, never instructions, and nothing it reads is run or fetched.

What it finds (vaultmem.filing._secret_rules), by precedence when two findings overlap: private key
blocks, provider formats (detect-secrets' regex detectors and the formats its 1.5 release misses),
assignments to secret-named keys, high-entropy strings (identifiers left alone); the rules and why:
docs/architecture.md, "The secret guard". Nothing here echoes a secret: a :class:`Finding` holds
where and what kind, never the text, and the refusal message names kinds, fields and lines only.

API for the write path: :func:`guard_write` (an :class:`AgentWrite` and the contract's mode, returns a
:class:`GuardResult` or raises :class:`SecretFound`); for health and doctor: :func:`scan_note_file`.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, get_args

from vaultmem.errors import InvalidInput, MalformedNote, VaultError
from vaultmem.filing._secret_rules import LINE_BREAK, secret_spans
from vaultmem.notes.frontmatter import parse

SecretsMode = Literal["refuse", "redact"]
MODES: tuple[str, ...] = get_args(SecretsMode)
DEFAULT_MODE: SecretsMode = "refuse"

#: What each kind of finding is called in a message (the kind itself is the redaction marker's name).
LABELS: dict[str, str] = {
    "private-key": "a private key block",
    "aws-access-key": "an AWS access key id",
    "aws-secret-key": "an AWS secret access key",
    "github-token": "a GitHub token",
    "gitlab-token": "a GitLab token",
    "slack-token": "a Slack token or webhook",
    "stripe-key": "a Stripe secret key",
    "jwt": "a JSON web token",
    "openai-key": "an OpenAI API key",
    "anthropic-key": "an Anthropic API key",
    "google-api-key": "a Google API key",
    "sendgrid-key": "a SendGrid API key",
    "twilio-key": "a Twilio key",
    "mailchimp-key": "a Mailchimp key",
    "npm-token": "an npm token",
    "pypi-token": "a PyPI token",
    "discord-token": "a Discord bot token",
    "telegram-token": "a Telegram bot token",
    "azure-storage-key": "an Azure storage account key",
    "square-secret": "a Square OAuth secret",
    "artifactory-token": "an Artifactory credential",
    "cloudant-credential": "a Cloudant credential",
    "ibm-cloud-key": "an IBM Cloud key",
    "softlayer-key": "a SoftLayer key",
    "url-password": "a password in a URL",
    "secret-assignment": "a value assigned to a secret-named key",
    "high-entropy-string": "a high-entropy string (a likely key or token)",
}


@dataclass(frozen=True)
class Finding:
    """One secret found: its kind and where it is. Never the secret itself."""

    kind: str
    field: str
    line: int
    end_line: int
    start: int = dataclasses.field(repr=False, compare=False)
    end: int = dataclasses.field(repr=False, compare=False)

    @property
    def label(self) -> str:
        return LABELS.get(self.kind, self.kind)

    @property
    def where(self) -> str:
        lines = f"line {self.line}" if self.end_line == self.line else f"lines {self.line}-{self.end_line}"
        return f"{self.field} {lines}"

    def to_dict(self) -> dict[str, str | int]:
        out: dict[str, str | int] = {"kind": self.kind, "field": self.field, "line": self.line}
        if self.end_line != self.line:
            out["end_line"] = self.end_line
        return out


class SecretFound(InvalidInput):
    """A write carries something that looks like a secret; nothing was written."""

    def __init__(self, findings: Sequence[Finding]) -> None:
        self.findings = tuple(findings)
        shown = "; ".join(f"{f.label} ({f.where})" for f in self.findings[:10])
        more = f"; and {len(self.findings) - 10} more" if len(self.findings) > 10 else ""
        super().__init__(
            f"refused: the write contains what looks like a secret: {shown}{more}. Nothing was written. "
            "Remove it and retry; to remember where a secret lives, store its location (a password "
            "manager entry, an environment variable name), never its value."
        )


def find_secrets(text: str, field: str = "content", *, identifier: bool = False) -> list[Finding]:
    """The secrets in ``text``, in order, each with its field and lines (1-based); reads only.

    ``identifier``: the field holds an id (a source id): a random-looking string alone is not
    taken for a key there.
    """
    if not text:
        return []
    line_starts = [0] + [m.end() for m in LINE_BREAK.finditer(text)]
    return [
        Finding(
            kind=kind,
            field=field,
            line=bisect_right(line_starts, start),
            end_line=bisect_right(line_starts, max(start, end - 1)),
            start=start,
            end=end,
        )
        for start, end, kind in secret_spans(text, identifier=identifier)
    ]


def marker(kind: str) -> str:
    """What a secret of ``kind`` is replaced with in ``redact`` mode."""
    return f"[REDACTED:{kind}]"


def redact(text: str, findings: Sequence[Finding]) -> str:
    """``text`` with each finding (from :func:`find_secrets` on this very text) replaced by its marker."""
    out: list[str] = []
    cursor = 0
    for finding in sorted(findings, key=lambda f: f.start):
        out.append(text[cursor : finding.start])
        out.append(marker(finding.kind))
        cursor = finding.end
    out.append(text[cursor:])
    return "".join(out)


def without_secrets(text: str) -> str:
    """``text`` with every secret in it replaced by its marker (for what is made from it: a file name)."""
    found = find_secrets(text)
    return redact(text, found) if found else text


# -- the write path's API ---------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentWrite:
    """The text of an agent's write that reaches the note file (and so git)."""

    content: str
    title: str | None = None
    tags: tuple[str, ...] = ()
    source_url: str | None = None
    source_id: str | None = None
    instructions: str | None = None

    def fields(self) -> Iterator[tuple[str, str]]:
        """Each text, named as a finding names it: ``title``, ``content``, ``tags[2]``, ``source.url``..."""
        if self.title:
            yield "title", self.title
        yield "content", self.content
        for i, tag in enumerate(self.tags):
            yield f"tags[{i}]", tag
        if self.source_url:
            yield "source.url", self.source_url
        if self.source_id:
            yield "source.id", self.source_id
        if self.instructions:
            yield "instructions", self.instructions


@dataclass(frozen=True)
class GuardResult:
    """The write to store (redacted when it had to be) and what was redacted."""

    write: AgentWrite
    redacted: tuple[Finding, ...] = ()

    def report(self) -> list[dict[str, str | int]]:
        """For a tool's result: ``[{kind, field, line}]``, empty when nothing was redacted."""
        return [f.to_dict() for f in self.redacted]


def guard_write(write: AgentWrite, mode: SecretsMode = DEFAULT_MODE) -> GuardResult:
    """Check an agent's write before anything touches the disk.

    ``refuse``: raise :class:`SecretFound` (an :class:`InvalidInput`) naming each finding's kind,
    field and line. ``redact``: return the write with each secret replaced by its marker; a tag that
    holds a secret is dropped (a tag is a single word: no marker would leave it useful). A clean
    write comes back as it was.
    """
    if mode not in MODES:
        raise ValueError(f"secrets mode must be one of {', '.join(MODES)}, not {mode!r}")
    by_field = {
        name: find_secrets(text, name, identifier=name == "source.id") for name, text in write.fields()
    }
    findings = [f for found in by_field.values() for f in found]
    if not findings:
        return GuardResult(write)
    if mode == "refuse":
        raise SecretFound(findings)

    def clean(name: str, text: str | None) -> str | None:
        return redact(text, by_field[name]) if text and by_field.get(name) else text

    stored = replace(
        write,
        title=clean("title", write.title),
        content=clean("content", write.content) or "",
        tags=tuple(t for i, t in enumerate(write.tags) if not by_field[f"tags[{i}]"]),
        source_url=clean("source.url", write.source_url),
        source_id=clean("source.id", write.source_id),
        instructions=clean("instructions", write.instructions),
    )
    return GuardResult(stored, tuple(findings))


# -- health and doctor: a note a person wrote -------------------------------------------------------


def scan_note_file(path: Path) -> list[Finding]:
    """The secrets in a note file, each placed in its ``frontmatter`` or ``body`` by file line.

    Reads only: the person's file is theirs, so it is reported, never rewritten. A file that is not
    valid UTF-8 is read with replacement characters (a secret beside one bad byte is still found);
    one whose frontmatter does not parse is reported as a whole (field ``note``).
    """
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise VaultError(f"cannot read {path} to scan it for secrets: {exc}") from exc
    return scan_note_text(text, str(path))


def scan_note_text(text: str, source: str = "note") -> list[Finding]:
    """:func:`scan_note_file` on a note's text already read."""
    findings = find_secrets(text, "note")
    if not findings:
        return findings
    try:
        note = parse(text, source=source)
    except MalformedNote:
        return findings
    if not note.has_frontmatter:
        return [replace(f, field="body") for f in findings]
    head = (
        note.open_fence + "".join(line for entry in note.entries for line in entry.lines) + note.close_fence
    )
    body_line = len(LINE_BREAK.findall(head)) + 1
    return [replace(f, field="frontmatter" if f.line < body_line else "body") for f in findings]


__all__ = [
    "DEFAULT_MODE",
    "LABELS",
    "MODES",
    "AgentWrite",
    "Finding",
    "GuardResult",
    "SecretFound",
    "SecretsMode",
    "find_secrets",
    "guard_write",
    "marker",
    "redact",
    "scan_note_file",
    "scan_note_text",
    "without_secrets",
]
