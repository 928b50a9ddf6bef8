"""The secret guard (issue 18, deliver 4): an agent's write holding a secret is refused, or stored with
the secret replaced by a marker; ids and hashes pass; a hand-written note is scanned, never changed.

Every secret here is synthetic (tests/secret_samples.py)."""

from __future__ import annotations

import os
import random
import socket
import string
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import git_status, snapshot, write_vault_contract
from secret_samples import Sample, clean_texts, pem_block, samples

from vaultmem.errors import ContractError, InvalidInput
from vaultmem.filing.contract import load_contract
from vaultmem.filing.secrets import (
    AgentWrite,
    SecretFound,
    find_secrets,
    guard_write,
    marker,
    redact,
    scan_note_file,
)
from vaultmem.memory import Memory

SAMPLES = samples()
STANDALONE = [s for s in SAMPLES if s.standalone]
ids = pytest.mark.parametrize("sample", SAMPLES, ids=[s.name for s in SAMPLES])


def write_with(field: str, sample: Sample) -> AgentWrite:
    """``sample`` placed in one field the way an agent would send it there."""
    if field == "title":
        return AgentWrite(content="body", title=" ".join(sample.text.split()))  # titles are one line
    if field == "content":
        return AgentWrite(content=sample.text)
    if field == "instructions":
        return AgentWrite(content="body", instructions=sample.text)
    if field == "tags[1]":
        return AgentWrite(content="body", tags=("ops", sample.secret))
    if field == "source.id":
        return AgentWrite(content="body", source_id=sample.secret)
    assert field == "source.url"
    return AgentWrite(content="body", source_url=f"https://example.com/callback?token={sample.secret}")


def no_trace(sample: Sample, *texts: str) -> bool:
    return not any(fragment in text for fragment in sample.fragments for text in texts)


# -- found in every field -------------------------------------------------------------------------


@ids
@pytest.mark.parametrize("field", ["title", "content", "instructions"])
def test_each_kind_of_secret_is_found_in_each_text_field(sample: Sample, field: str) -> None:
    with pytest.raises(SecretFound) as info:
        guard_write(write_with(field, sample))
    assert [(f.kind, f.field) for f in info.value.findings] == [(sample.kind, field)]


@pytest.mark.parametrize("sample", STANDALONE, ids=[s.name for s in STANDALONE])
@pytest.mark.parametrize("field", ["tags[1]", "source.id", "source.url"])
def test_a_secret_alone_is_found_in_a_tag_a_source_id_and_a_source_url(sample: Sample, field: str) -> None:
    if field == "source.id" and sample.kind == "high-entropy-string":
        # A source id is an id: random-looking is what ids are (the clean-write test puts some there).
        assert guard_write(write_with(field, sample)).redacted == ()
        return
    with pytest.raises(SecretFound) as info:
        guard_write(write_with(field, sample))
    assert [f.field for f in info.value.findings] == [field]


def test_the_line_of_a_finding_is_the_line_in_its_field() -> None:
    key = next(s for s in SAMPLES if s.name == "aws access key id").secret
    found = find_secrets(f"one\r\ntwo\rthree\n\nfive {key}\nsix", "content")
    assert [(f.kind, f.line, f.end_line) for f in found] == [("aws-access-key", 5, 5)]


def test_a_write_with_several_secrets_is_refused_naming_each() -> None:
    by_name = {s.name: s for s in SAMPLES}
    parts = ["aws access key id", "rsa private key", "github classic token", "password in a url"]
    content = "\n\n".join(by_name[name].text for name in parts)
    with pytest.raises(SecretFound) as info:
        guard_write(AgentWrite(content=content, title="Deploy notes"))
    kinds = [f.kind for f in info.value.findings]
    assert kinds == ["aws-access-key", "private-key", "github-token", "url-password"]


# -- refuse: the message says what and where, never the secret -----------------------------------


@ids
def test_a_refusal_names_the_kind_field_and_line_and_never_the_secret(sample: Sample) -> None:
    content = f"# Notes\n\nSome context first.\n{sample.text}\n"
    with pytest.raises(SecretFound) as info:
        guard_write(AgentWrite(content=content, title="Setup"))
    message = str(info.value)
    assert isinstance(info.value, InvalidInput)  # the caller's fix: the same error family as bad input
    finding = info.value.findings[0]
    first = content[: content.index(sample.secret)].count("\n") + 1
    last = first + sample.secret.count("\n")
    where = f"content line {first}" if last == first else f"content lines {first}-{last}"
    assert (finding.line, finding.end_line) == (first, last)
    assert f"{finding.label} ({where})" in message
    assert "Nothing was written" in message and "Remove it and retry" in message
    secret = sample.secret.replace("\n", "")
    assert not any(secret[i : i + 8] in message.replace(" ", "") for i in range(len(secret) - 7))
    assert sample.secret not in repr(info.value.findings)


# -- redact: no trace left ------------------------------------------------------------------------


@ids
def test_redaction_leaves_no_trace_of_the_secret(sample: Sample) -> None:
    content = f"Before the secret.\n{sample.text}\nAfter the secret."
    write = AgentWrite(content=content, title=" ".join(sample.text.split()), instructions=sample.text)
    result = guard_write(write, "redact")
    stored = result.write
    assert no_trace(sample, stored.content, stored.title or "", stored.instructions or "")
    assert marker(sample.kind) in stored.content
    assert stored.content.startswith("Before the secret.\n") and stored.content.endswith(
        "\nAfter the secret."
    )
    assert {r["field"] for r in result.report()} == {"title", "content", "instructions"}
    assert all(sample.secret not in str(r) for r in result.report())
    assert guard_write(stored, "refuse").redacted == ()  # what is stored scans clean


def test_redact_drops_a_tag_holding_a_secret_and_cleans_the_source() -> None:
    token = next(s for s in SAMPLES if s.name == "github fine-grained token").secret
    write = AgentWrite(
        content="Release steps.",
        tags=("release", token, "ci"),
        source_url="https://deploy:hunter2@ci.example.com/run/7",
        source_id=token,
    )
    result = guard_write(write, "redact")
    assert result.write.tags == ("release", "ci")
    assert result.write.source_url == "https://deploy:[REDACTED:url-password]@ci.example.com/run/7"
    assert result.write.source_id == "[REDACTED:github-token]"
    assert result.write.content == "Release steps."
    assert result.report() == [
        {"kind": "github-token", "field": "tags[1]", "line": 1},
        {"kind": "url-password", "field": "source.url", "line": 1},
        {"kind": "github-token", "field": "source.id", "line": 1},
    ]


def test_a_private_key_block_is_one_finding_and_one_marker() -> None:
    sample = next(s for s in SAMPLES if s.name == "rsa private key")
    found = find_secrets(sample.text)
    assert [(f.kind, f.line, f.end_line) for f in found] == [("private-key", 3, 17)]
    assert redact(sample.text, found) == "The deploy key:\n\n[REDACTED:private-key]\n\nKeep it safe."


# -- a multi-line PEM block, however it arrives ---------------------------------------------------


def body_lines(block: str) -> list[str]:
    return [line for line in block.splitlines() if "PRIVATE KEY" not in line]


@pytest.mark.parametrize(
    "shape",
    ["crlf", "header split across lines", "quoted in markdown", "indented in a list", "no end line"],
)
def test_a_pem_private_key_split_across_lines_is_caught_whole(shape: str) -> None:
    block = pem_block(__import__("random").Random(shape), lines=8)
    if shape == "crlf":
        text = "key:\r\n" + block.replace("\n", "\r\n") + "\r\ndone"
    elif shape == "header split across lines":
        text = "key:\n" + block.replace("BEGIN RSA PRIVATE KEY", "BEGIN RSA\nPRIVATE KEY", 1) + "\ndone"
    elif shape == "quoted in markdown":
        text = "key:\n" + "\n".join("> " + line for line in block.splitlines()) + "\ndone"
    elif shape == "indented in a list":
        text = "- key:\n" + "\n".join("    " + line for line in block.splitlines()) + "\ndone"
    else:
        text = "key:\n" + "\n".join(block.splitlines()[:-1]) + "\n\nThat was all of it."
    found = find_secrets(text)
    assert [(f.kind, f.line) for f in found] == [("private-key", 2)]
    stored = redact(text, found)
    assert not any(line in stored for line in body_lines(block))
    assert stored.startswith(("key:", "- key:")) and stored.rstrip().endswith(("done", "That was all of it."))


# -- clean writes pass ----------------------------------------------------------------------------

CLEAN = clean_texts()


@pytest.mark.parametrize("name", list(CLEAN))
def test_a_clean_write_with_ids_hashes_and_names_is_not_refused(name: str) -> None:
    text = CLEAN[name]
    assert find_secrets(text) == []
    write = AgentWrite(content=text, title=" ".join(text.split())[:200], source_id=text.split()[-1])
    assert guard_write(write).write is write


def test_an_excalidraw_drawings_compressed_block_is_not_a_secret_but_a_key_beside_it_is() -> None:
    rng = random.Random(3)
    packed = "".join(rng.choice(string.ascii_letters + string.digits + "+/") for _ in range(2048))
    block = "```compressed-json\n" + "\n\n".join(packed[i : i + 256] for i in range(0, 2048, 256)) + "\n```"
    assert find_secrets(f"## Text Elements\nbeds ^a1\n\n%%\n## Drawing\n{block}\n%%") == []
    key = next(s for s in samples() if s.kind == "github-token").secret
    assert [f.kind for f in find_secrets(f"{block}\nCI token {key}\n")] == ["github-token"]
    unclosed = block.removesuffix("```")  # not the plugin's block: scanned as any text
    assert find_secrets(unclosed) != []


def test_clean_texts_pass_for_other_draws_too() -> None:
    for seed in range(20):
        flagged = {name: find_secrets(text) for name, text in clean_texts(seed).items()}
        assert {name: f for name, f in flagged.items() if f} == {}, f"seed {seed}"


# -- reads only, offline, safe beside other writes ------------------------------------------------


def test_the_scanner_opens_no_network_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the secret guard tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    for sample in SAMPLES:
        assert find_secrets(sample.text)


def test_a_fresh_process_loads_the_detectors_on_its_first_scan_and_stays_offline(tmp_path: Path) -> None:
    code = (
        "import socket, sys\n"
        "def no(*a, **k): raise SystemExit('network used')\n"
        "socket.socket.connect = no\nsocket.create_connection = no\nsocket.getaddrinfo = no\n"
        "import vaultmem.filing.contract\n"
        "from vaultmem.filing.secrets import find_secrets\n"
        "assert 'detect_secrets' not in sys.modules, 'loaded before any scan'\n"
        "print(find_secrets('export GITHUB_TOKEN=ghp_' + 'aB3' * 12)[0].kind)\n"
    )
    env = {**os.environ, "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "github-token"
    assert list(tmp_path.iterdir()) == []  # nothing written into the (fake) home


def test_concurrent_scans_give_the_same_findings() -> None:
    texts = [s.text for s in SAMPLES] * 5
    expected = [[(f.kind, f.start, f.end) for f in find_secrets(t)] for t in texts]
    results: dict[int, list[list[tuple[str, int, int]]]] = {}

    def scan(n: int) -> None:
        results[n] = [[(f.kind, f.start, f.end) for f in find_secrets(t)] for t in texts]

    threads = [threading.Thread(target=scan, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert all(results[n] == expected for n in range(4))


def test_scanning_a_hand_written_note_reports_and_leaves_it_byte_identical(vault: Path) -> None:
    token = next(s for s in SAMPLES if s.name == "github classic token").secret
    key = next(s for s in SAMPLES if s.name == "openssh private key").secret
    note = vault / "memory" / "semantic" / "by-hand.md"
    data = (
        f"---\ntitle: By hand\nsource:\n  url: https://ci.example.com/?token={token}\n---\n\nMy key:\n{key}\n"
    )
    note.write_bytes(data.encode("utf-8"))
    before = snapshot(vault)
    stat = note.stat()
    found = scan_note_file(note)
    assert [(f.kind, f.field, f.line) for f in found] == [
        ("github-token", "frontmatter", 4),
        ("private-key", "body", 8),
    ]
    assert snapshot(vault) == before and note.stat().st_mtime_ns == stat.st_mtime_ns
    assert git_status(vault).split() == ["??", "memory/semantic/by-hand.md"]


def test_a_hand_written_note_with_bad_yaml_or_bad_bytes_is_still_scanned(tmp_path: Path) -> None:
    token = next(s for s in SAMPLES if s.name == "stripe live key").secret
    broken = tmp_path / "broken.md"
    broken.write_bytes(b"---\ntitle: [unclosed\n---\n\xff\xfe " + token.encode("ascii") + b"\n")
    assert [(f.kind, f.field, f.line) for f in scan_note_file(broken)] == [("stripe-key", "note", 4)]
    plain = tmp_path / "plain.md"
    plain.write_text(f"no frontmatter\n{token}\n", encoding="utf-8")
    assert [(f.field, f.line) for f in scan_note_file(plain)] == [("body", 2)]


# -- the contract chooses the mode ----------------------------------------------------------------


def test_the_shipped_contract_refuses_and_a_vault_may_choose_redact(vault: Path) -> None:
    assert load_contract().secrets_mode == "refuse"
    assert load_contract(vault).secrets_mode == "refuse"
    write_vault_contract(vault, lambda t: t.replace("mode: refuse", "mode: redact"))
    assert load_contract(vault).secrets_mode == "redact"
    write_vault_contract(vault, lambda t: t.replace("secrets:\n  mode: redact\n", ""))
    assert load_contract(vault).secrets_mode == "refuse"  # no secrets section: the default


def test_an_unknown_secrets_mode_stops_writes_and_says_where(vault: Path, service: Memory) -> None:
    contract = write_vault_contract(
        vault, lambda t: t.replace("mode: refuse", "mode: sometimes"), commit=False
    )
    before = snapshot(vault)
    with pytest.raises(ContractError) as info:
        service.append("a memory", "reference")
    assert str(contract) in str(info.value) and "secrets/mode" in str(info.value)
    assert snapshot(vault) == before


def test_the_cli_refuses_to_write_under_an_unknown_secrets_mode(vault: Path) -> None:
    write_vault_contract(vault, lambda t: t.replace("mode: refuse", "mode: 1"))
    before = snapshot(vault)
    done = subprocess.run(
        [sys.executable, "-m", "vaultmem.cli", "--vault", str(vault), "append", "--kind", "fix", "text"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "secrets/mode" in done.stderr and "filing.yaml" in done.stderr
    assert snapshot(vault) == before


# -- the speed-ups change nothing -----------------------------------------------------------------


def gate_texts() -> list[str]:
    """Secrets and clean texts of several draws, in prose of both shapes, long and short lines."""
    prose = "Results were measured in vivo (n = 17); key findings: p < 0.05. See the secret sauce."
    texts = []
    for seed in range(8):
        found = [s.text for s in samples(seed)] + list(clean_texts(seed).values())
        texts += found
        texts.append("\n".join(found))
        texts.append(" ".join(f"{prose} {text}" for text in found[:12]))  # one long line
    return texts


def test_the_literal_gates_never_hide_a_provider_match() -> None:
    from vaultmem.filing import _secret_rules as rules

    lib = rules._library()
    for text in gate_texts():
        scan = rules._Text(text)
        assert sorted(rules._detector_spans(scan, lib)) == sorted(
            rules._detector_spans(scan, lib, gated=False)
        )


def test_scanning_near_secret_words_finds_what_scanning_every_line_finds() -> None:
    from vaultmem.filing import _secret_rules as rules

    lib = rules._library()
    for text in gate_texts():
        if max(len(line) for line in text.splitlines() or [""]) > 2 * rules._WINDOW:
            continue  # a long line is searched in windows, by design: more than one match per line
        scan = rules._Text(text)
        assert sorted(rules._assigned_value_spans(scan, lib)) == sorted(
            rules._assigned_value_spans(scan, lib, gated=False)
        )
