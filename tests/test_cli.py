"""The command line: each command works, --json prints exactly the tool's dict, `-` reads standard
input, every command has --help, and errors say what to do and exit non-zero."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, git_status, note_files

from vaultmem.cli import build_parser, main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    assert out.count("\n") == 1  # exactly one JSON document, nothing else
    return json.loads(out)


@pytest.fixture
def v(vault: Path) -> list[str]:
    return ["--vault", str(vault)]


def test_init_creates_a_vault(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "init", str(tmp_path / "new"))
    assert code == 0 and "created" in out
    assert (tmp_path / "new" / ".git").is_dir() and (tmp_path / "new" / "filing.yaml").is_file()
    code, out, _ = run(capsys, "init", str(tmp_path / "new"))
    assert code == 0 and "already a vault" in out


def test_init_with_git_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys, "init", str(tmp_path / "synced"), "--git-dir", str(tmp_path / "repos" / "v.git")
    )
    assert code == 0, err
    assert (tmp_path / "synced" / ".git").is_file()
    assert (tmp_path / "repos" / "v.git" / "HEAD").is_file()


def test_append_json_is_exactly_the_memory_append_dict(
    v: list[str], capsys: pytest.CaptureFixture[str], vault: Path
) -> None:
    result = run_json(
        capsys, *v, "append", "--kind", "fix", "--title", "Flaky test", "--tag", "ci", "--tag", "py",
        "--idempotency-key", "k1", "Retry the flaky test with -p no:randomly.",
    )  # fmt: skip
    assert set(result) == {"id", "slug", "deduplicated"}
    assert result["slug"] == "flaky-test" and result["deduplicated"] is False
    again = run_json(capsys, *v, "append", "--kind", "fix", "--idempotency-key", "k1", "other text")
    assert again == {**result, "deduplicated": True}
    assert git_status(vault) == ""


def test_append_human_output(v: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *v, "append", "--kind", "reference", "--project", "Acme", "Acme uses Go.")
    assert code == 0
    assert out.startswith("added acme-uses-go (")


def test_dash_reads_content_from_stdin(
    v: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, vault: Path
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("# From stdin\n\nMulti-line\ncontent.\n"))
    result = run_json(capsys, *v, "append", "--kind", "reference", "--title", "Piped", "-")
    body = (vault / "memory/semantic/piped.md").read_text("utf-8").split("---\n", 2)[2]
    assert body == "# From stdin\n\nMulti-line\ncontent.\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO("captured from a pipe"))
    captured = run_json(capsys, *v, "capture", "-")
    assert captured["success"] is True and captured["id"] != result["id"]


def test_capture_json_is_exactly_the_memory_capture_dict(
    v: list[str], capsys: pytest.CaptureFixture[str], vault: Path
) -> None:
    result = run_json(
        capsys, *v, "capture", "--title", "Read later", "--source-url", "https://example.com",
        "--instructions", "summarise", "--tag", "reading", "An article.",
    )  # fmt: skip
    assert set(result) == {"success", "id", "slug", "deduplicated"}
    assert result["success"] is True and result["slug"] == "read-later"
    updated = run_json(
        capsys, *v, "capture", "--title", "Read later", "--source-url", "https://example.com", "New text."
    )
    assert updated == {**result, "updated": True}


def test_capture_idea_appends_to_its_card(v: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    card = run_json(capsys, *v, "capture", "--kind", "idea", "--title", "Bee garden", "Plant lavender.")
    code, out, _ = run(capsys, *v, "capture", "--kind", "idea", "--title", "Bee garden", "And thyme.")
    assert code == 0 and out.startswith(f"appended to bee-garden ({card['id']})")


def test_capture_takes_the_project_from_the_current_folder(
    v: list[str], capsys: pytest.CaptureFixture[str], vault: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    code_dir = tmp_path / "code" / "shop"
    (code_dir / "src").mkdir(parents=True)
    project = vault / "desk/projects/shop/project.yaml"
    project.parent.mkdir(parents=True)
    project.write_text(f"name: Shop\ncode_paths: [{code_dir}]\n", encoding="utf-8")
    monkeypatch.chdir(code_dir / "src")
    result = run_json(capsys, *v, "capture", "cart is slow")
    text = next(p for p in note_files(vault) if result["slug"] in p.name).read_text("utf-8")
    assert "project: Shop\n" in text


def test_capture_failure_is_the_error_dict_and_exits_non_zero(
    v: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, *v, "capture", "   ", "--json")
    assert code == 1
    assert json.loads(out) == {"success": False, "error": "content is empty; pass the text of the memory"}
    code, out, err = run(capsys, *v, "capture", "   ")
    assert code == 1 and out == ""
    assert err.startswith("error: content is empty; pass the text")


def test_forget_json_and_idempotency(v: list[str], capsys: pytest.CaptureFixture[str], vault: Path) -> None:
    memory = run_json(capsys, *v, "append", "--kind", "fix", "Forget me.")
    result = run_json(capsys, *v, "forget", memory["id"], "--reason", "test")
    assert result == {"id": memory["id"], "status": "deleted", "already_deleted": False}
    again = run_json(capsys, *v, "forget", memory["id"])
    assert again == {**result, "already_deleted": True}
    code, out, _ = run(capsys, *v, "forget", memory["id"])
    assert code == 0 and out.startswith("already deleted")
    assert git_status(vault) == ""


def test_log_shows_a_memorys_history(v: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    memory = run_json(capsys, *v, "capture", "--title", "Card", "--source-id", "ns:1", "v1")
    run_json(capsys, *v, "capture", "--title", "Card", "--source-id", "ns:1", "v2")
    code, out, _ = run(capsys, *v, "log", memory["id"])
    assert code == 0
    assert out.splitlines()[0] == f"memory/episodic/card.md  ({memory['id']})"
    assert out.index("memory_capture: update in place card") < out.index("memory_capture: add card")
    history = run_json(capsys, *v, "log", memory["id"])
    assert history["id"] == memory["id"] and len(history["history"]) == 2


def test_log_of_a_memory_like_an_older_one_is_its_own_history(
    v: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`git log --follow` takes a new file for a copy of a similar one already there: a second
    deploy checklist's log showed the first one's creation as its own, and its own as a rename."""
    text = "Deploy checklist: run the tests, tag the release, push the tag, watch the {}dashboard."
    first = run_json(capsys, *v, "append", "--kind", "reference", "--title", "Deploy", text.format(""))
    second = run_json(
        capsys, *v, "append", "--kind", "reference", "--title", "Deploy staging", text.format("staging ")
    )
    history = run_json(capsys, *v, "log", second["id"])["history"]
    assert [(row["action"], row["summary"]) for row in history] == [
        ("create", "memory_append: add deploy-staging")
    ]
    # The older memory's own history is untouched by the copy.
    assert [row["action"] for row in run_json(capsys, *v, "log", first["id"])["history"]] == ["create"]


def test_vault_defaults_to_the_environment_variable(
    vault: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTMEM_VAULT", str(vault))
    result = run_json(capsys, "append", "--kind", "fix", "from the environment")
    assert result["slug"] == "from-the-environment"


def test_vault_after_the_command_wins(
    vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_json(
        capsys, "--vault", str(tmp_path / "nowhere"), "append", "--vault", str(vault), "--kind", "fix", "x y"
    )
    assert result["deduplicated"] is False


def _commands() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sorted(sub.choices)  # type: ignore[arg-type]


def test_the_documented_commands_exist() -> None:
    assert {"init", "append", "capture", "forget", "log"} <= set(_commands())


@pytest.mark.parametrize("command", _commands())
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: vaultmem {command}")
    assert "--vault" in out


def test_the_state_dir_help_says_where_it_is_in_an_adopted_vault_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The help said `<vault>/.vaultmem`; in a vault adopted in place it is `<vault>/Memory/.vaultmem`."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "Home.md").write_text("# Home\n", encoding="utf-8")
    run(capsys, "init", str(tmp_path / "notes"))
    run(capsys, "reindex", "--vault", str(tmp_path / "notes"))
    assert (tmp_path / "notes" / "Memory" / ".vaultmem").is_dir()
    with pytest.raises(SystemExit):
        main(["reindex", "--help"])
    assert "(default: .vaultmem in vaultmem's own folder)" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    ("argv", "advice"),
    [
        (["append", "--kind", "recipe", "text"], "use one of"),
        (["append", "--kind", "fix", ""], "pass the text of the memory"),
        (["append", "--kind", "fix", "--project", "../x", "text"], "use letters, digits"),
        (["forget", "0190a5f0-0000-7000-8000-000000000000"], "find the right id"),
        (["forget", "nonsense"], "ids look like"),
        (["log", "0190a5f0-0000-7000-8000-000000000000"], "find the right id"),
    ],
)
def test_errors_say_what_to_do_and_exit_non_zero(
    v: list[str], capsys: pytest.CaptureFixture[str], argv: list[str], advice: str
) -> None:
    code, out, err = run(capsys, *v, *argv)
    assert code != 0
    assert out == ""
    assert err.startswith("error: ") and advice in err
    assert "Traceback" not in err


def test_a_missing_vault_says_how_to_create_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--vault", str(tmp_path / "absent"), "append", "--kind", "fix", "x")
    assert code == 1 and "vaultmem init" in err


def test_a_missing_required_option_is_a_usage_error(v: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([*v, "append", "text"])
    assert info.value.code == 2
    assert "--kind" in capsys.readouterr().err


def test_the_console_script_runs_in_a_real_process(vault: Path) -> None:
    script = Path(sys.executable).with_name("vaultmem")
    env = {**os.environ, "VAULTMEM_VAULT": str(vault)}
    done = subprocess.run(
        [str(script), "append", "--kind", "decision", "--json", "-"],
        input="Chose SQLite for the cache.\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result) == {"id", "slug", "deduplicated"}
    assert result["id"] in git(vault, "log", "-1", "--format=%B")
    failed = subprocess.run(
        [str(script), "forget", "nonsense"], capture_output=True, text=True, env=env, timeout=60
    )
    assert failed.returncode == 1 and failed.stderr.startswith("error: ")
