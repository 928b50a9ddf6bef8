"""The CLI's daemon commands: init writes the token, token prints or rotates it, serve refuses a
non-loopback address."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from vaultmem.cli import main
from vaultmem.server.token import token_path


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    monkeypatch.delenv("VAULTMEM_TOKEN_FILE", raising=False)
    return home


def test_init_writes_a_private_token_outside_the_vault_and_token_prints_it(
    tmp_path: Path, config_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vault = tmp_path / "notes"
    assert main(["init", str(vault)]) == 0
    path = token_path(vault)
    assert config_home in path.parents and vault not in path.parents
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    capsys.readouterr()
    assert main(["token", "--vault", str(vault)]) == 0
    assert capsys.readouterr().out.strip() == path.read_text(encoding="utf-8").strip()


def test_a_second_init_keeps_the_token(tmp_path: Path) -> None:
    vault = tmp_path / "notes"
    main(["init", str(vault)])
    before = token_path(vault).read_text(encoding="utf-8")
    main(["init", str(vault)])
    assert token_path(vault).read_text(encoding="utf-8") == before


def test_token_rotate_replaces_the_token(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vault = tmp_path / "notes"
    main(["init", str(vault)])
    before = token_path(vault).read_text(encoding="utf-8").strip()
    capsys.readouterr()
    assert main(["token", "--vault", str(vault), "--rotate"]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed != before and printed == token_path(vault).read_text(encoding="utf-8").strip()


def test_deleting_the_state_directory_keeps_the_token(tmp_path: Path) -> None:
    vault = tmp_path / "notes"
    main(["init", str(vault)])
    before = token_path(vault).read_text(encoding="utf-8")
    state = vault / ".vaultmem"
    if state.exists():
        shutil.rmtree(state)
    assert token_path(vault).read_text(encoding="utf-8") == before


def test_tokens_of_two_vaults_differ(tmp_path: Path) -> None:
    for name in ("a", "b"):
        main(["init", str(tmp_path / name)])
    assert token_path(tmp_path / "a") != token_path(tmp_path / "b")
    assert token_path(tmp_path / "a").read_text() != token_path(tmp_path / "b").read_text()


def test_serve_refuses_a_non_loopback_host(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vault = tmp_path / "notes"
    main(["init", str(vault)])
    assert main(["serve", "--vault", str(vault), "--host", "0.0.0.0"]) == 1
    assert "loopback" in capsys.readouterr().err


def test_the_daemon_commands_have_help(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("serve", "mcp", "token"):
        with pytest.raises(SystemExit) as exit_info:
            main([command, "--help"])
        assert exit_info.value.code == 0
        assert "--vault" in capsys.readouterr().out
