"""`vaultmem search`, `reindex` and `doctor` from the command line (issue 3, item 6)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vaultmem.cli import main

pytestmark = pytest.mark.model


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_search_json_prints_exactly_the_memory_search_shape(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "--vault", str(vault), "append", "--kind", "fix", "--json",
                       "--title", "Port change", "Restart the daemon after changing the port")  # fmt: skip
    assert code == 0
    note_id = json.loads(out)["id"]
    (vault / "memory" / "semantic" / "kettle.md").write_text(
        "Descale the kettle every month.\n", encoding="utf-8"
    )
    code, out, _ = run(capsys, "search", "--vault", str(vault), "--json", "restart daemon port")
    assert code == 0
    result = json.loads(out)
    assert set(result) == {"results", "total", "cursor"}
    assert result["cursor"] is None
    first = result["results"][0]
    assert set(first) == {"id", "slug", "score", "status", "kind", "tags", "snippet"}
    assert first["id"] == note_id
    code, out, _ = run(capsys, "search", "--vault", str(vault), "--json", "descale kettle")
    assert json.loads(out)["results"][0]["slug"] == "kettle"


def test_include_deleted_shows_a_forgotten_memory(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "--vault", str(vault), "append", "--kind", "fix", "--json", "Flush the DNS cache")
    note_id = json.loads(out)["id"]
    run(capsys, "--vault", str(vault), "forget", note_id)
    _, out, _ = run(capsys, "--vault", str(vault), "search", "--json", "flush dns cache")
    assert note_id not in [r["id"] for r in json.loads(out)["results"]]
    _, out, _ = run(capsys, "--vault", str(vault), "search", "--json", "--include-deleted", "flush dns cache")
    hits = {r["id"]: r for r in json.loads(out)["results"]}
    assert hits[note_id]["status"] == "deleted"


def test_reindex_full_rebuilds_from_the_vault_and_doctor_agrees(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(5):
        run(capsys, "--vault", str(vault), "append", "--kind", "reference", f"Fact number {i} about tea")
    code, out, _ = run(capsys, "--vault", str(vault), "reindex")
    assert code == 0 and "index: 5 notes" in out
    code, out, _ = run(capsys, "--vault", str(vault), "doctor", "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] and report["notes"] == 5 and report["index_rows"] == 5
    shutil.rmtree(vault / ".vaultmem" / "index")
    code, out, _ = run(capsys, "--vault", str(vault), "reindex", "--full")
    assert code == 0 and "5 indexed" in out


def test_doctor_reports_a_conflict_copy_and_a_malformed_note(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(
        capsys,
        "--vault",
        str(vault),
        "append",
        "--kind",
        "reference",
        "--title",
        "Tea",
        "Green tea at 80 degrees",
    )
    copy = vault / "memory" / "semantic" / "tea (Ann's conflicted copy 2026-01-01).md"
    shutil.copyfile(vault / "memory" / "semantic" / "tea.md", copy)
    broken = vault / "memory" / "semantic" / "broken.md"
    broken.write_bytes(b"---\n- a list\n---\nbody\n")
    code, out, _ = run(capsys, "--vault", str(vault), "doctor", "--json")
    report = json.loads(out)
    assert code == 1 and not report["ok"]
    assert "memory/semantic/tea (Ann's conflicted copy 2026-01-01).md" in report["conflict_copies"]
    assert "memory/semantic/broken.md" in report["malformed"]
    assert broken.read_bytes() == b"---\n- a list\n---\nbody\n"


def test_search_on_a_missing_vault_says_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "--vault", str(tmp_path / "nope"), "search", "anything")
    assert code == 1 and "vaultmem init" in err


def test_search_with_an_unknown_kind_is_refused_as_append_refuses_it(vault: Path) -> None:
    """Issue 13 item 14: `vaultmem search --kind banana` exited 0 with "no matches". A kind neither
    the filing contract nor any note has is an error (exit 1, naming the kinds), as for `append`; a
    kind only a person's own notes carry is still searchable."""
    script = str(Path(sys.executable).with_name("vaultmem"))
    (vault / "memory" / "semantic" / "kettle.md").write_text(
        "---\nkind: household\n---\nDescale the kettle every month.\n", encoding="utf-8"
    )

    def search(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [script, "--vault", str(vault), "search", *args, "kettle"],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    refused = search("--kind", "banana")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.startswith("error: kind 'banana'") and "decision" in refused.stderr
    appended = subprocess.run(
        [script, "--vault", str(vault), "append", "--kind", "banana", "x"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert appended.returncode == refused.returncode
    found = search("--kind", "household")
    assert found.returncode == 0 and "kettle" in found.stdout
    assert search("--kind", "fix").stdout.strip() == "no matches"


def test_a_model_directory_of_ones_own_set_in_the_vaults_settings_indexes_and_searches(
    vault: Path, tmp_path: Path
) -> None:
    """``model_dir`` in ``vaultmem.yaml`` (here a folder linking to the packaged files): the CLI
    reindexes and searches with it, in batches and without onnxruntime's arena (the arena's shrink
    made every embed of such a model fail at its last call)."""
    from vaultmem.index.embedder import default_model_dir

    own = tmp_path / "my-model"
    own.mkdir()
    for source in default_model_dir():
        (own / source.name).symlink_to(source)
    (vault / "vaultmem.yaml").write_text(f"model_dir: {own}\n", encoding="utf-8")
    for n, text in enumerate(["Descale the kettle every month.", "The heron waits in the reeds."]):
        (vault / "memory" / "semantic" / f"note-{n}.md").write_text(text + "\n", encoding="utf-8")
    cli = [str(Path(sys.executable).with_name("vaultmem")), "--vault", str(vault)]
    done = subprocess.run([*cli, "reindex"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    done = subprocess.run(
        [*cli, "search", "--json", "bird by the water"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["results"][0]["slug"] == "note-1"
    assert "vector search unavailable" not in done.stderr
    meta = json.loads(next(vault.rglob("index.json")).read_text(encoding="utf-8"))
    assert meta["model_id"].startswith("my-model@")
