"""The commands that need no search index start without it (issue 16, item 3).

Each command runs as the installed ``vaultmem`` script with ``PYTHONPROFILEIMPORTTIME`` set, so the
interpreter lists on standard error every module the process imported; LanceDB (with pyarrow and
pandas), onnxruntime, tokenizers and NumPy cost ~0.8 s and ~150 MB before any work, and a command
that writes one note or prints a token needs none of them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

VAULTMEM = str(Path(sys.executable).with_name("vaultmem"))
#: What only the index needs: the vector store and its columns, the model and its tokenizer.
INDEX_ONLY = ("lancedb", "lance", "pyarrow", "pandas", "onnxruntime", "tokenizers", "numpy")


def imported_by(
    vault: Path, *args: str, stdin: str = ""
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``vaultmem --vault VAULT ARGS`` and return it with every module name it imported."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run(
        [VAULTMEM, "--vault", str(vault), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    modules = {
        line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")
    }
    modules.discard("package")  # the header line: "import time: self [us] | cumulative | imported package"
    return done, modules


def index_modules(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in INDEX_ONLY)


def test_help_loads_neither_the_facade_nor_any_index_module(tmp_path: Path) -> None:
    done, modules = imported_by(tmp_path / "none", "--help")
    assert done.returncode == 0, done.stderr[-500:]
    assert "append" in done.stdout
    assert "vaultmem.cli" in modules  # the listing works: it sees the script's own import
    assert "vaultmem.memory" not in modules
    assert index_modules(modules) == []


def test_init_append_capture_log_forget_and_token_import_no_index_module(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    runs: dict[str, tuple[subprocess.CompletedProcess[str], set[str]]] = {}
    runs["init"] = imported_by(vault, "init")
    runs["append"] = imported_by(vault, "append", "--kind", "fix", "--json", "Restart after a port change.")
    note_id = json.loads(runs["append"][0].stdout)["id"]
    runs["append -"] = imported_by(vault, "append", "--kind", "reference", "-", stdin="from standard input")
    runs["capture"] = imported_by(vault, "capture", "a thought worth keeping")
    runs["log"] = imported_by(vault, "log", note_id)
    runs["forget"] = imported_by(vault, "forget", note_id, "--reason", "wrong")
    runs["token"] = imported_by(vault, "token")
    failed = {name: done.stderr[-500:] for name, (done, _) in runs.items() if done.returncode != 0}
    assert not failed
    assert all("vaultmem.memory" in modules for name, (_, modules) in runs.items() if name != "token")
    loaded = {name: index_modules(modules) for name, (_, modules) in runs.items()}
    assert loaded == {name: [] for name in runs}


def test_a_command_that_searches_does_load_the_index(vault: Path) -> None:
    """The other half, so the listing above cannot pass by seeing nothing: ``doctor`` compares the
    vault with the index and reads its tables, and so opens LanceDB (once there is an index)."""
    built = subprocess.run(
        [VAULTMEM, "--vault", str(vault), "reindex"], capture_output=True, text=True, timeout=300
    )
    assert built.returncode == 0, built.stderr[-500:]
    done, modules = imported_by(vault, "doctor")
    assert done.returncode == 0, done.stderr[-500:]
    assert "lancedb" in index_modules(modules)  # the tables are read, though a snapshot was saved
    # pandas is installed here (the dev extra), and pyarrow asks for it as LanceDB loads: the
    # program answers "not installed" (0.8 s of CPU a command), as a `pip install vaultmem` machine
    assert importlib.util.find_spec("pandas") is not None
    assert "pyarrow" in modules and not [m for m in modules if m.startswith("pandas.")]


def test_vaultmem_as_a_library_keeps_pandas_importable() -> None:
    """Only the program keeps pandas out: :func:`vaultmem.cli.main` called in another program's
    process (as these tests call it) leaves that process's imports alone."""
    code = (
        "import sys\n"
        "from vaultmem.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "import pandas\n"
        "print(pandas.__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.split()[-1] == "pandas", done.stderr[-500:]


def test_a_one_shot_search_never_loads_the_secret_detector_and_a_write_does(vault: Path) -> None:
    """The secret detector (detect-secrets and its HTTP client, ~0.1 s of CPU) is warmed ahead of
    the first write only in a long-running process; ``vaultmem search`` writes nothing, and
    ``vaultmem append`` loads it to check what it writes."""
    done, modules = imported_by(vault, "append", "--kind", "reference", "The staging port is 8443.")
    assert done.returncode == 0, done.stderr[-500:]
    assert "detect_secrets" in modules
    done, modules = imported_by(vault, "search", "staging port")
    assert done.returncode == 0 and "8443" in done.stdout, done.stderr[-500:]
    assert "lancedb" in index_modules(modules) or "onnxruntime" in index_modules(modules)
    assert not [m for m in modules if m.startswith("detect_secrets")]
