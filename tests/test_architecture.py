"""The shape of the code, checked from its source: arrows point down, one door, no reaching into
another object's privates, no module too big to read (docs/architecture.md, "The map")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "vaultmem"

#: Bottom to top. A module may import its own layer and the layers below it, never one above.
LAYERS = ["base", "notes", "vault", "filing", "index", "sync", "operations", "facade", "adapters"]
#: Modules every layer may import (they import nothing of vaultmem's above them).
BASE = {"vaultmem", "vaultmem.config", "vaultmem.errors", "vaultmem.caller", "vaultmem.safe_yaml",
        "vaultmem.resources", "vaultmem.program"}  # fmt: skip
FACADE = {"vaultmem.memory", "vaultmem.opening", "vaultmem.limits"}
ADAPTERS = ("vaultmem.mcp", "vaultmem.server", "vaultmem.cli")
#: What an adapter may import of the rest of the package: the door, its bounds, the base.
ADAPTER_MAY_IMPORT = FACADE | BASE
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def layer_of(module: str) -> str:
    if module in BASE:
        return "base"
    if module in FACADE:
        return "facade"
    if module.startswith(ADAPTERS):
        return "adapters"
    return module.split(".")[1]


def imports_of(module: str) -> set[str]:
    """Every vaultmem module ``module`` imports, at any depth of its code (TYPE_CHECKING blocks and
    imports inside functions included)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name.startswith("vaultmem") and name != module:
                found.add(name)
    return found


GRAPH = {module: imports_of(module) for module in MODULES}


def test_every_module_has_a_known_layer() -> None:
    unknown = sorted(m for m in MODULES if layer_of(m) not in LAYERS)
    assert not unknown, f"modules outside the map (add them to a layer in docs/architecture.md): {unknown}"


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    upward = [
        f"{module} ({layer_of(module)}) -> {target} ({layer_of(target)})"
        for module, targets in GRAPH.items()
        for target in sorted(targets)
        if LAYERS.index(layer_of(target)) > LAYERS.index(layer_of(module))
    ]
    assert not upward, "imports that point up:\n" + "\n".join(upward)


def test_there_is_no_import_cycle_not_even_under_type_checking() -> None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(GRAPH[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles[:5])


def test_adapters_import_only_the_facade_its_bounds_and_the_base() -> None:
    reach = [
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        if layer_of(module) == "adapters"
        for target in sorted(targets)
        if layer_of(target) != "adapters" and target not in ADAPTER_MAY_IMPORT
    ]
    assert not reach, "adapters reaching past the door:\n" + "\n".join(reach)


def _private_uses(path: Path) -> list[str]:
    uses = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                uses.append(f"{path.name}:{node.lineno} .{node.attr}")
    return uses


def test_no_module_reaches_into_another_objects_private_attributes() -> None:
    uses = [f"{module}: {use}" for module, path in MODULES.items() for use in _private_uses(path)]
    assert not uses, "private attributes used from outside their object:\n" + "\n".join(uses)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_longer_than_six_hundred_lines(module: str) -> None:
    lines = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines; split it by responsibility"


def test_the_checks_see_an_upward_import_and_a_private_use(tmp_path: Path) -> None:
    """The rules above can fail: an upward import and a private use written to a file are found."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from vaultmem.memory import Memory\n\ndef f(x):\n    return x._hidden\n", encoding="utf-8"
    )
    assert _private_uses(probe) == ["probe.py:4 ._hidden"]
    assert LAYERS.index(layer_of("vaultmem.memory")) > LAYERS.index(layer_of("vaultmem.vault.writer"))
    assert "vaultmem.vault.writer" in GRAPH["vaultmem.opening"]
