"""A contract text that passed the schema once is not checked against it again (docs/benchmarks.md).

Checking ``filing.yaml`` against its JSON schema imports ``jsonschema`` (~60-75 ms) in every process
that writes: each daemon start and each CLI ``append``. ``<state>/contract.checked`` remembers the
digest of the last text that passed; these tests run the CLI as a subprocess, as a person does, and
read which modules it imported (``PYTHONPROFILEIMPORTTIME``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from vaultmem.config import Settings
from vaultmem.filing.contract import CHECKED_FILE, contract_digest

VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))


def run(env: dict[str, str], vault: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """``vaultmem --vault VAULT ARGS``, and every module it imported."""
    done = subprocess.run(
        [VAULTMEM, "--vault", str(vault), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "PYTHONPROFILEIMPORTTIME": "1"},
    )
    modules = {
        line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")
    }
    return done, modules


def errors(done: subprocess.CompletedProcess[str]) -> str:
    return "\n".join(line for line in done.stderr.splitlines() if not line.startswith("import time:"))


def made(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    env = {**os.environ, "VAULTMEM_EMBEDDER": "fake", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    vault = tmp_path / "vault"
    subprocess.run([VAULTMEM, "init", str(vault)], env=env, check=True, capture_output=True, timeout=120)
    return vault, env, Settings.resolve(vault).state_dir / CHECKED_FILE


def append(env: dict[str, str], vault: Path, text: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    return run(env, vault, "append", "--kind", "reference", "--json", text)


def test_the_second_write_of_an_unchanged_contract_skips_the_schema_and_an_edit_is_checked_again(
    tmp_path: Path,
) -> None:
    vault, env, checked = made(tmp_path)
    first, first_modules = append(env, vault, "the first note")
    assert first.returncode == 0, errors(first)
    assert "jsonschema" in first_modules  # the listing sees the check when it runs
    assert checked.is_file()
    second, second_modules = append(env, vault, "the second note")
    assert second.returncode == 0, errors(second)
    assert "jsonschema" not in second_modules
    assert json.loads(second.stdout)["id"]

    contract = vault / "filing.yaml"
    good = contract.read_text("utf-8")
    contract.write_text(good.replace("daily_write_cap: 200", "daily_write_cap: lots"), "utf-8")
    refused, refused_modules = append(env, vault, "refused by the edited contract")
    assert refused.returncode != 0
    assert "jsonschema" in refused_modules
    assert "daily_write_cap" in errors(refused) and str(contract) in errors(refused)
    again, _ = append(env, vault, "refused again: a failed check is never remembered")
    assert again.returncode != 0 and "daily_write_cap" in errors(again)

    contract.write_text(good.replace("daily_write_cap: 200", "daily_write_cap: 150"), "utf-8")
    fixed, fixed_modules = append(env, vault, "accepted by the fixed contract")
    assert fixed.returncode == 0, errors(fixed)
    assert "jsonschema" in fixed_modules  # a new text: checked once
    assert "jsonschema" not in append(env, vault, "and the next write skips it")[1]


def test_a_state_file_that_vouches_for_a_broken_text_does_not_let_it_through(tmp_path: Path) -> None:
    """The digest of the text as it is now, written by hand over an invalid contract: the write is
    still refused, with the schema's own message."""
    vault, env, checked = made(tmp_path)
    assert append(env, vault, "the first note")[0].returncode == 0
    contract = vault / "filing.yaml"
    contract.write_text(contract.read_text("utf-8").replace("thresholds:", "limits_of_old:", 1), "utf-8")
    vouched = {"version": 1, "sha256": contract_digest(contract.read_text("utf-8"))}
    checked.write_text(json.dumps(vouched), "utf-8")
    refused, modules = append(env, vault, "refused")
    assert refused.returncode != 0
    assert "jsonschema" in modules
    assert str(contract) in errors(refused) and "is invalid" in errors(refused)


def test_a_damaged_or_odd_state_file_costs_only_the_check(tmp_path: Path) -> None:
    vault, env, checked = made(tmp_path)
    checked.parent.mkdir(parents=True, exist_ok=True)
    for damage in (b"\x00\xff not json", b'{"version": 99, "sha256": "x"}', b"[]"):
        checked.unlink(missing_ok=True)
        checked.write_bytes(damage)
        done, modules = append(env, vault, f"a note after {damage[:4]!r}")
        assert done.returncode == 0, errors(done)
        assert "jsonschema" in modules
    checked.unlink()
    os.mkfifo(checked)  # a named pipe: a plain open would block the command for ever
    done, _ = append(env, vault, "a note beside a pipe")
    assert done.returncode == 0, errors(done)
    assert append(env, vault, "and the next skips the check")[1].isdisjoint({"jsonschema"})
