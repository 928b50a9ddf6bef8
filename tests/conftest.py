"""Shared fixtures: a real vault with a real git repository in ``tmp_path``, a service on it, and a
clock the tests move by hand (for the daily cap).

Every test, and every process a test starts, runs with HOME and the XDG folders pointed at a
fresh temporary folder (:func:`isolated_home`), and the session fails if anything new appeared in
the real home's config or cache folders (:func:`_the_suite_leaves_no_trace_in_the_real_home`).
"""

from __future__ import annotations

import datetime as dt
import inspect
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver.tools.base import Tool

from vaultmem.config import Settings
from vaultmem.memory import Memory
from vaultmem.server.token import token_file_name
from vaultmem.vault.init import init_vault

START = dt.datetime(2026, 3, 14, 9, 30, 0, tzinfo=dt.UTC)


# -- the suite leaves no trace in the real home ---------------------------------------------------

_XDG = {
    "XDG_CONFIG_HOME": ".config",
    "XDG_CACHE_HOME": ".cache",
    "XDG_DATA_HOME": ".local/share",
    "XDG_STATE_HOME": ".local/state",
}
#: Folders of a home where vaultmem or a library it loads has written, or could: the token files
#: (~/.config/vaultmem), onnxruntime's telemetry (~/.cache/Microsoft).
_WATCHED_TREES = (".config/vaultmem", ".cache/Microsoft", ".cache/vaultmem", ".local/share/vaultmem")
#: Folders whose direct entries are compared (a new tool's folder appearing there).
_WATCHED_FOLDERS = ("", ".config", ".cache", ".local", ".local/share", ".local/state")


def _point_home_at(patch: pytest.MonkeyPatch, home: Path) -> None:
    """HOME, the XDG folders and no VAULTMEM_* overrides, for this process and its children."""
    patch.setenv("HOME", str(home))
    for variable, rel in _XDG.items():
        patch.setenv(variable, str(home / rel))
    for variable in [v for v in os.environ if v.startswith("VAULTMEM_")]:
        patch.delenv(variable)


def _home_entries(home: Path) -> set[str]:
    """What exists in the watched parts of ``home`` (paths relative to it)."""
    found: set[str] = set()
    for rel in _WATCHED_FOLDERS:
        with_entries = home / rel
        if with_entries.is_dir():
            found.update(os.path.join(rel, entry.name) for entry in os.scandir(with_entries))
    for rel in _WATCHED_TREES:
        for folder, dirs, files in os.walk(home / rel):
            found.update(os.path.relpath(os.path.join(folder, n), home) for n in dirs + files)
    return found


def _another_sessions_token(rel: str, basetemp: Path) -> bool:
    """A token file for no vault under this session's temporary folder: written by a suite run
    from another checkout meanwhile (the machine is shared), not by this one."""
    if not rel.startswith(".config/vaultmem/tokens/"):
        return False
    ours: set[str] = set()
    for folder, dirs, _files in os.walk(basetemp):
        depth = Path(folder).relative_to(basetemp).parts
        if len(depth) >= 4:  # vaults sit at <test>/<vault> or one level below
            dirs.clear()
        ours.update(token_file_name(Path(folder) / d) for d in dirs)
    return Path(rel).name not in ours


@pytest.fixture(scope="session", autouse=True)
def _the_suite_leaves_no_trace_in_the_real_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Session-wide: a temporary home for session- and module-scoped fixtures too (a model loaded
    once for a module), and at the end a check that the real home gained nothing."""
    real_home = Path(os.path.expanduser("~"))
    before = _home_entries(real_home)
    with pytest.MonkeyPatch.context() as patch:
        _point_home_at(patch, tmp_path_factory.mktemp("session-home"))
        yield
    appeared = sorted(_home_entries(real_home) - before)
    appeared = [rel for rel in appeared if not _another_sessions_token(rel, tmp_path_factory.getbasetemp())]
    assert not appeared, (
        f"the test suite wrote into the real home {real_home}: {appeared} (or another process did "
        "meanwhile, such as a suite run from another checkout: compare the files' times)"
    )


@pytest.fixture(scope="session", autouse=True)
def _each_tool_built_once_per_process() -> Iterator[None]:
    """The SDK builds a tool's argument model and JSON schemas from its function's signature each
    time a server registers it: ~0.1 s of CPU per daemon for vaultmem's fifteen tools, a fifth of
    an in-process daemon test's CPU. A tool whose code, signature (its descriptions hold the
    vault's kinds) and options were built before in this process gets a copy of that build with
    its own function; anything else is built by the SDK as usual. A daemon or stdio server a test
    starts as a process builds its tools itself."""
    built: dict[tuple[Any, ...], Tool] = {}
    real = Tool.from_function

    def from_function(fn: Callable[..., Any], **options: Any) -> Tool:
        key = (fn.__code__, fn.__doc__, str(inspect.signature(fn)), repr(sorted(options.items())))
        if key not in built:
            built[key] = real(fn, **options)
        return built[key].model_copy(update={"fn": fn})

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Tool, "from_function", from_function)
        yield


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME (and XDG config, cache, data and state folders inside it) for every test."""
    home = tmp_path_factory.mktemp("home")
    _point_home_at(monkeypatch, home)
    return home


class FakeClock:
    """A clock that stands still until a test moves it."""

    def __init__(self, now: dt.datetime = START) -> None:
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **delta: float) -> dt.datetime:
        self.now += dt.timedelta(**delta)
        return self.now

    def set(self, when: dt.datetime) -> None:
        self.now = when


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def vault(tmp_path: Path, _initialised_vault: Path) -> Path:
    """A freshly initialised vault (template copied, git repository made, first commit): a copy
    of one ``vaultmem init`` made for this process (the init's dozen git commands cost ~50 ms a
    test; tests of init itself call it)."""
    root = tmp_path / "vault"
    shutil.copytree(_initialised_vault, root, symlinks=True)
    return root.resolve()


@pytest.fixture(scope="session")
def _initialised_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root, _ = init_vault(tmp_path_factory.mktemp("initialised") / "vault")
    return root


OpenService = Callable[..., Memory]


@pytest.fixture
def open_service(vault: Path, clock: FakeClock) -> Iterator[OpenService]:
    """Open (another) Memory on the vault; every one opened is closed at teardown."""
    opened: list[Memory] = []

    def _open(
        root: Path | None = None,
        *,
        background_commits: bool = False,
        durable: bool = False,
        the_clock: Callable[[], dt.datetime] | None = None,
        **overrides: Any,
    ) -> Memory:
        settings = Settings.resolve(root or vault, durable=durable, **overrides)
        service = Memory(
            settings, clock=the_clock or clock, index=False, background_commits=background_commits
        )
        opened.append(service)
        return service

    yield _open
    for service in opened:
        service.close()


@pytest.fixture
def service(open_service: OpenService) -> Memory:
    """A service committing inline (deterministic), not fsyncing (fast)."""
    return open_service()


# -- helpers ------------------------------------------------------------------------------------


def git(root: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-c", "core.quotepath=off", *args], cwd=root, capture_output=True, text=True, check=True
    )
    return result.stdout


def git_status(root: Path) -> str:
    return git(root, "status", "--porcelain", "--untracked-files=all")


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def commit_count(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "HEAD").strip())


def note_files(root: Path) -> list[Path]:
    """Every Markdown note in the vault (not git's or vaultmem's own files, not the README)."""
    return sorted(
        p
        for p in root.rglob("*.md")
        if ".git" not in p.relative_to(root).parts
        and ".vaultmem" not in p.relative_to(root).parts
        and p.relative_to(root).as_posix() != "README.md"
    )


def snapshot(root: Path) -> dict[str, bytes]:
    """The bytes of every file in the vault's work tree (git and derived state excluded)."""
    out: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] in (".git", ".vaultmem") or not path.is_file():
            continue
        out[rel.as_posix()] = path.read_bytes()
    return out


def file_of(service: Memory, note_id: str) -> Path:
    """The file backing a note id."""
    return service.settings.vault / service.note(note_id).path


def write_vault_contract(root: Path, edit: Callable[[str], str], *, commit: bool = True) -> Path:
    """Edit the vault's own filing.yaml (text in, text out), committing the edit by default."""
    path = root / "filing.yaml"
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    if commit:
        git(root, "add", "filing.yaml")
        git(
            root,
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "-m",
            "edit the contract",
        )
    return path


def set_cap(root: Path, cap: int) -> Path:
    return write_vault_contract(
        root, lambda text: text.replace("daily_write_cap: 200", f"daily_write_cap: {cap}")
    )


def hand_write(root: Path, rel: str, data: bytes | str, *, commit: bool = False) -> Path:
    """Write a file the way a person (or a sync client) would, behind vaultmem's back."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    if commit:
        git(root, "add", "--", rel)
        git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", f"add {rel}")
    return path
