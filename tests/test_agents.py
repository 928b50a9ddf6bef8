"""Who wrote it (issue 18, items 1 and 2): a named token per agent, every commit authored by the
agent whose token made the call, the person's hand edits by their git identity, the CLI's writes by
the OS user; a memory's versions through ``memory_recall action=history``, ``vaultmem log --diff``
and ``vaultmem blame``. Through MCP over HTTP against real daemons, and the CLI as a subprocess."""

from __future__ import annotations

import getpass
import json
import shlex
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import yaml
from conftest import OpenService, git
from layers import parts
from mcp_harness import mcp_client, running_daemon, stdio_env, structured, tls_context, wait_for
from mcp_types import Implementation
from test_server_http import INITIALIZE, MCP_HEADERS
from test_server_process import serve_process

from vaultmem.caller import Caller, acting_as
from vaultmem.cli import main
from vaultmem.server.token import add_token, agents_path, token_path

VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))


def cli(*args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([VAULTMEM, *args], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def initialize_status(url: str, token: str) -> int:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    with httpx2.Client(timeout=30, verify=tls_context()) as client:
        return client.post(url, headers=headers, json=INITIALIZE).status_code


def frontmatter(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    return dict(yaml.safe_load(text.split("---\n")[1]))


def call(
    url: str, token: str, tool: str, arguments: dict[str, Any], client: str = "test-host"
) -> dict[str, Any]:
    """One tool call as an MCP host makes it; the payload (a graph tool's from inside ``result``)."""

    async def run() -> dict[str, Any]:
        async with mcp_client(url, token, client_info=Implementation(name=client, version="1.2")) as c:
            result = await c.call_tool(tool, arguments)
        assert not result.is_error, result.content
        data = dict(result.structured_content or {})
        payload = data["result"] if set(data) == {"result"} else data
        assert json.loads(result.content[0].text) == payload  # type: ignore[union-attr]
        return dict(payload)

    return anyio.run(run)


def clean(vault: Path) -> bool:
    return git(vault, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.model
def test_two_agents_with_two_tokens_write_under_their_names_and_revoking_one_leaves_the_other(
    tmp_path: Path,
) -> None:
    """Issue 18: "two agents with two tokens write, `git log --format=%an` shows both names;
    revoking one gets 401 for it and 200 for the other"; the tokens are made while it runs."""
    vault, config = tmp_path / "vault", tmp_path / "config"
    env = stdio_env(XDG_CONFIG_HOME=str(config))
    with serve_process(vault, config) as (_process, url, default_token):
        cursor = cli("token", "add", "cursor", "--vault", str(vault), env=env).strip()
        claude = cli(
            "token", "add", "claude", "--vault", str(vault), "--email", "cc@example.org", env=env
        ).strip()

        async def write_both() -> None:
            async def agent(token: str, name: str) -> None:
                info = Implementation(name=f"{name}-host", version="3.1")
                async with mcp_client(url, token, client_info=info) as client:
                    for i in range(6):
                        content = f"{name} remembers fact number {i} about the staging cluster."
                        arguments = {"content": content, "kind": "reference", "title": f"{name} fact {i}"}
                        structured(await client.call_tool("memory_append", arguments))

            async with anyio.create_task_group() as group:  # both at once: the commit queue mixes them
                group.start_soon(agent, cursor, "cursor")
                group.start_soon(agent, claude, "claude")

        anyio.run(write_both)
        wait_for(lambda: clean(vault))
        assert {"cursor", "claude"} <= set(git(vault, "log", "--format=%an").split())
        assert set(git(vault, "log", "--author=cursor", "--format=%an <%ae>").splitlines()) == {
            "cursor <cursor@vaultmem.local>"
        }
        assert "claude <cc@example.org>" in git(vault, "log", "--format=%an <%ae>")
        # Every commit holds only its author's notes, even where the queue grouped writes.
        for record in git(
            vault, "log", "--author=cursor", "--author=claude", "--format=%x1e%an", "--name-only"
        ).split("\x1e")[1:]:
            author, *paths = [line for line in record.splitlines() if line]
            assert paths and all(frontmatter(vault / p)["source"]["agent"] == author for p in paths)
        assert "client: cursor-host/3.1" in git(vault, "log", "--author=cursor", "--format=%B")

        listed = cli("token", "list", "--vault", str(vault), env=env)
        assert "cursor" in listed and "claude" in listed and cursor not in listed and claude not in listed
        stored = agents_path(Path(config) / "vaultmem" / "tokens" / token_path(vault).name)
        assert cursor not in stored.read_text(encoding="utf-8")  # hashed, never in clear
        assert stat.S_IMODE(stored.stat().st_mode) == 0o600

        cli("token", "revoke", "cursor", "--vault", str(vault), env=env)
        assert initialize_status(url, cursor) == 401  # the running daemon follows, no restart
        assert initialize_status(url, claude) == 200
        assert initialize_status(url, default_token) == 200  # the default token keeps working
        written = call(url, claude, "memory_append", {"content": "claude still writes", "kind": "fix"})
        assert written["id"]


def test_a_note_written_by_two_agents_and_forgotten_has_four_versions_with_their_authors(
    vault: Path,
) -> None:
    """Issue 18: "a note created, updated twice by different agents and forgotten: history lists four
    versions with authors"; each version's text is the one that commit recorded."""
    token_file = token_path(vault)
    alice, bob = add_token(token_file, "alice"), add_token(token_file, "bob")
    with running_daemon(vault, token_file) as daemon:
        created = call(daemon.url, alice, "memory_store", {"action": "create", "content": "Ship on Fridays."})
        thought = created["item"]["id"]
        call(
            daemon.url,
            bob,
            "memory_store",
            {"action": "update", "thought_id": thought, "content": "Ship on Thursdays."},
        )
        call(
            daemon.url,
            alice,
            "memory_store",
            {"action": "update", "thought_id": thought, "tags": ["release"]},
        )
        call(daemon.url, bob, "memory_forget", {"id": thought, "reason": "we ship continuously now"})
        assert daemon.memory is not None
        daemon.memory.flush()
        history = call(daemon.url, alice, "memory_recall", {"action": "history", "thought_id": thought})
        rows = history["items"]
        assert [(r["author"], r["action"]) for r in rows] == [
            ("bob", "forget"),
            ("alice", "update"),
            ("bob", "update"),
            ("alice", "create"),
        ]
        assert history["meta"]["counts"]["total"] == 4
        assert set(rows[0]) == {"commit", "at", "author", "action", "summary"}
        assert rows[0]["summary"].startswith("memory_forget: delete")
        texts = [
            call(
                daemon.url,
                bob,
                "memory_recall",
                {"action": "history", "thought_id": thought, "version": r["commit"][:10]},
            )["items"][0]["text"]
            for r in rows
        ]
        assert "status: deleted" in texts[0] and "status: active" in texts[1]
        assert "Ship on Thursdays." in texts[1] and "release" in texts[1]
        assert "Ship on Thursdays." in texts[2] and "release" not in texts[2]
        assert "Ship on Fridays." in texts[3]
    note = next(vault.rglob("ship-on-fridays.md"))
    assert frontmatter(note)["source"]["agent"] == "alice"  # the note's source names its writer

    env = stdio_env()
    log = cli("log", thought, "--diff", "--vault", str(vault), env=env)
    assert log.index("bob  forget") < log.index("alice  update") < log.index("alice  create")
    assert "+status: deleted" in log and "-Ship on Fridays." in log and "+Ship on Thursdays." in log
    blame = json.loads(cli("blame", thought, "--json", "--vault", str(vault), env=env))
    assert blame["keys"]["title"]["author"] == "alice"  # written at creation, never changed
    assert blame["keys"]["status"]["author"] == "bob"  # the forget
    assert blame["keys"]["tags"]["author"] == "alice"
    body = [line for line in blame["lines"] if line["text"] == "Ship on Thursdays."]
    assert [line["author"] for line in body] == ["bob"]
    shown = cli("blame", thought, "--vault", str(vault), env=env)
    assert "bob" in shown and "| Ship on Thursdays." in shown


def test_history_follows_a_note_renamed_by_hand(vault: Path) -> None:
    token_file = token_path(vault)
    alice = add_token(token_file, "alice")
    with running_daemon(vault, token_file, commit_quiet_period=0.2) as daemon:
        created = call(
            daemon.url, alice, "memory_append", {"content": "Cache keys expire hourly.", "kind": "reference"}
        )
        old = next(vault.rglob("cache-keys-expire-hourly.md"))
        wait_for(lambda: clean(vault))
        old.rename(old.with_name("cache-expiry.md"))
        wait_for(lambda: clean(vault))  # the watcher committed the rename as the person's
        history = call(daemon.url, alice, "memory_recall", {"action": "history", "thought_id": created["id"]})
        rows = history["items"]
    assert [r["action"] for r in rows] == ["rename", "create"]
    assert rows[1]["author"] == "alice" and rows[0]["summary"].startswith("hand rename: ")


def test_a_hand_edit_is_committed_as_the_person_even_when_an_agent_writes_the_note_right_after(
    vault: Path,
) -> None:
    """Hand edits keep the person's git identity: an agent's write to the same note inside the
    watcher's quiet period first commits the person's edit under their name, then its own."""
    git(vault, "config", "user.name", "Ada Lovelace")
    git(vault, "config", "user.email", "ada@example.org")
    token_file = token_path(vault)
    alice = add_token(token_file, "alice")
    with running_daemon(vault, token_file, commit_quiet_period=60.0) as daemon:
        created = call(
            daemon.url, alice, "memory_append", {"content": "Deploys need a green build.", "kind": "workflow"}
        )
        note = next(vault.rglob("deploys-need-a-green-build.md"))
        assert daemon.memory is not None
        daemon.memory.flush()
        with note.open("a", encoding="utf-8") as f:
            f.write("Ada: and a second reviewer.\n")  # saved by hand; the watcher waits 60 s to commit
        call(
            daemon.url,
            alice,
            "memory_store",
            {"action": "update", "thought_id": created["id"], "tags": ["deploy"]},
        )
        daemon.memory.flush()
        authors = git(vault, "log", "--format=%an <%ae>", "--", str(note.relative_to(vault))).splitlines()
        assert authors == [
            "alice <alice@vaultmem.local>",
            "Ada Lovelace <ada@example.org>",
            "alice <alice@vaultmem.local>",
        ]
        lines = {line["text"]: line["author"] for line in daemon.memory.blame(created["id"]).lines}
    assert lines["Ada: and a second reviewer."] == "Ada Lovelace"
    assert lines["Deploys need a green build."] == "alice"


def test_a_cli_write_is_committed_as_the_os_user(vault: Path) -> None:
    out = json.loads(
        cli("append", "--vault", str(vault), "--kind", "fix", "--json", "Restart the cache.", env=stdio_env())
    )
    user = getpass.getuser()
    assert git(vault, "log", "-1", "--format=%an").strip() == user
    assert f"agent: {user}" in git(vault, "log", "-1", "--format=%B")
    assert frontmatter(next(vault.rglob(f"{out['slug']}.md")))["source"]["agent"] == user


def test_token_names_are_checked_and_the_default_token_cannot_be_revoked(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def token(*args: str) -> tuple[int, str]:
        code = main(["token", *args, "--vault", str(vault)])
        return code, capsys.readouterr().err

    for args, message in (
        (["add", "no spaces"], "cannot name a token"),
        (["add", "default"], "default token"),
        (["revoke", "default"], "--rotate"),
        (["revoke", "nobody"], "no token is named"),
        (["add", "cursor", "--email", "not-an-address"], "not a mail address"),
    ):
        code, err = token(*args)
        assert code == 1 and message in err, (args, err)
    assert token("add", "cursor")[0] == 0
    code, err = token("add", "Cursor")
    assert code == 1 and "exists already" in err
    assert main(["token", "list", "--json", "--vault", str(vault)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["name"], r["email"]) for r in rows] == [
        ("default", "default@vaultmem.local"),
        ("cursor", "cursor@vaultmem.local"),
    ]


def test_a_write_over_another_agents_uncommitted_write_waits_for_its_commit(
    open_service: OpenService, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit takes the file as it is on disk: were bob's update installed before alice's create
    was committed, alice's commit would hold bob's text under her name."""
    service = open_service(background_commits=True)
    repo = parts(service).repo
    release = threading.Event()
    real_commit = repo.commit_paths

    def slow_commit(*args: Any, **kwargs: Any) -> bool:
        release.wait(timeout=30)  # git busy: the commit thread holds alice's commit here
        return real_commit(*args, **kwargs)

    monkeypatch.setattr(repo, "commit_paths", slow_commit)
    with acting_as(Caller("alice")):
        created = service.append("Alice's first words.", "reference")
    note_id = created["id"]

    def bob() -> None:
        with acting_as(Caller("bob")):
            service.update_thought(note_id, content="Bob's rewrite.")

    thread = threading.Thread(target=bob)
    thread.start()
    thread.join(timeout=1.0)  # the bug: bob's write lands on disk before alice's commit runs
    release.set()
    thread.join(timeout=30)
    service.flush()
    rel = str(next(vault.rglob("alice-s-first-words.md")).relative_to(vault))
    commits = git(vault, "log", "--format=%H %an", "--", rel).split("\n")[:2]
    (bob_commit, bob_name), (alice_commit, alice_name) = (c.split() for c in commits)
    assert (bob_name, alice_name) == ("bob", "alice")
    assert "Alice's first words." in git(vault, "show", f"{alice_commit}:{rel}")
    assert "Bob's rewrite." in git(vault, "show", f"{bob_commit}:{rel}")


def test_token_list_tells_tokens_apart_by_a_fingerprint_that_reveals_none_of_them(tmp_path: Path) -> None:
    """README: `token list` shows "never the tokens": not even their first characters (it showed
    four). Each row carries ``sha256:`` and the first digits of the token's digest, which its holder
    can check (``printf %s TOKEN | sha256sum``); a file an earlier version wrote loses its stored
    prefixes at the next change, and `token revoke` still takes the name."""
    vault, config = tmp_path / "vault", tmp_path / "config"
    env = stdio_env(XDG_CONFIG_HOME=str(config))
    vault.mkdir()
    default = cli("token", "--vault", str(vault), env=env).strip()
    cursor = cli("token", "add", "cursor", "--vault", str(vault), env=env).strip()
    stored = agents_path(Path(config) / "vaultmem" / "tokens" / token_path(vault).name)
    earlier = json.loads(stored.read_text(encoding="utf-8"))
    earlier["tokens"]["cursor"]["shown"] = cursor[:4]  # what an earlier version kept
    stored.write_text(json.dumps(earlier), encoding="utf-8")

    listed = cli("token", "list", "--vault", str(vault), env=env)
    for token in (default, cursor):
        digest = subprocess.run(["sha256sum"], input=token, capture_output=True, text=True, check=True)
        assert f"sha256:{digest.stdout[:8]}" in listed
        assert token[:4] not in listed
    rows = json.loads(cli("token", "list", "--json", "--vault", str(vault), env=env))
    assert [r["fingerprint"][:7] for r in rows] == ["sha256:", "sha256:"]
    assert all(cursor[:4] not in json.dumps(r) for r in rows)

    cli("token", "add", "claude", "--vault", str(vault), env=env)
    assert "shown" not in stored.read_text(encoding="utf-8")  # the old prefix is gone with the change
    cli("token", "revoke", "cursor", "--vault", str(vault), env=env)
    assert [
        r["name"] for r in json.loads(cli("token", "list", "--json", "--vault", str(vault), env=env))
    ] == [
        "default",
        "claude",
    ]


def test_the_command_init_names_to_print_the_token_prints_this_vaults(tmp_path: Path) -> None:
    """``vaultmem init`` of a vault that is not the default one said "print it with `vaultmem
    token`", which, run as written, made a new token for ``~/vaultmem-vault`` instead."""
    vault, config = tmp_path / "Jo's vault été", tmp_path / "config"
    env = stdio_env(XDG_CONFIG_HOME=str(config), HOME=str(tmp_path / "home"))
    said = cli("init", str(vault), env=env)
    command = said.split("(print it with `vaultmem ", 1)[1].split("`", 1)[0]
    argv = [VAULTMEM, *shlex.split(command)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and "no token yet" not in done.stderr, done.stderr
    stored = config / "vaultmem" / "tokens" / token_path(vault).name
    assert done.stdout.strip() == stored.read_text(encoding="utf-8").strip()


def test_token_refuses_a_vault_that_is_not_there_and_its_hints_name_the_vault(tmp_path: Path) -> None:
    """A mistyped ``--vault`` made a token for a folder no daemon serves, and said nothing; the
    hints of ``token add``/``revoke`` said "`vaultmem token revoke cursor`", which, run as written,
    acts on the default vault instead of the one named."""
    vault, config = tmp_path / "Jo's vault", tmp_path / "config"
    env = stdio_env(XDG_CONFIG_HOME=str(config), HOME=str(tmp_path / "home"))

    def token(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([VAULTMEM, *args], capture_output=True, text=True, env=env, timeout=120)

    done = token("--vault", str(tmp_path / "typo"), "token")
    assert done.returncode != 0 and "no vault at" in done.stderr and "vaultmem init" in done.stderr
    tokens = config / "vaultmem" / "tokens"
    assert not tokens.exists() or not list(tokens.iterdir())

    cli("init", str(vault), env=env)
    cli("token", "add", "cursor", "--vault", str(vault), env=env)
    named = f"vaultmem --vault {shlex.quote(str(vault))} token"
    for args, hint in (("add", f"`{named} revoke cursor`"), ("revoke", f"`{named} list`")):
        again = token("token", args, "cursor" if args == "add" else "nobody", "--vault", str(vault))
        assert again.returncode == 1 and hint in again.stderr, again.stderr
