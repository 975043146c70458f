"""The import graph: arrows run one way (front ends → service → runner → stages/connectors →
providers → spec/store → core), front ends call only the service, and no cycle between modules.
Imports inside functions count as much as those at the top: a lazy import is still an arrow."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

SRC = Path(__file__).resolve().parents[1] / "src" / "ingestflow"
LAYERS = {
    "errors": 0,
    "elements": 0,
    "batching": 0,
    "offline": 0,
    "files": 0,
    "locks": 0,
    "local_model": 0,  # where the bundled embedding model and its ONNX export live
    "quality": 0,
    "markdown": 0,  # elements as Markdown (downloads, the page benchmark)
    "patches": 0,  # every run-time change to another library, behind one guard
    "spec": 1,
    "store": 1,
    "providers": 2,
    "stages": 3,
    "connectors": 3,
    "runner": 4,
    "service": 5,
    "cli": 6,
    "server": 6,
    "api": 6,
    "console": 7,  # the `ingestflow` command: the CLI, and how its process ends
}
FRONT_ENDS = {"cli", "server", "api"}
FRONT_END_MAY_CALL = {"service", "errors", "offline", "patches", "cli", "server", "api"}


def _module(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _part(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """(every ingestflow import, those at module level), outside `if TYPE_CHECKING:` blocks."""
    package = _module(path) if path.name == "__init__.py" else _module(path).rpartition(".")[0]
    return _imports_in(ast.parse(path.read_text(encoding="utf-8")), package)


def _imports_in(tree: ast.Module, package: str) -> tuple[set[str], set[str]]:
    """`_imports` of a parsed module of `package`."""
    found: set[str] = set()
    top: set[str] = set()

    def visit(node: ast.AST, level: int) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        for name in names:
            if name.startswith("ingestflow."):
                found.add(name)
                if level == 0:
                    top.add(name)
        for child in ast.iter_child_nodes(node):
            deeper = level + isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            visit(child, deeper)

    visit(tree, 0)
    return found, top


def _files() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_every_package_has_a_layer() -> None:
    parts = {_part(_module(p)) for p in _files()} - {""}
    assert parts <= set(LAYERS), parts - set(LAYERS)


def test_arrows_run_one_way_and_front_ends_call_only_the_service() -> None:
    wrong = []
    for path in _files():
        source = _part(_module(path))
        if not source:
            continue
        for target in _imports(path)[0]:
            to = _part(target)
            if to not in LAYERS:
                continue
            if LAYERS[to] > LAYERS[source]:
                wrong.append(f"{_module(path)} -> {target} (upward)")
            if source in FRONT_ENDS and to not in FRONT_END_MAY_CALL:
                wrong.append(f"{_module(path)} -> {target} (a front end past the service)")
    assert not wrong, "\n".join(wrong)


def _graph() -> nx.DiGraph:
    """Module -> module, for every import (at the top or inside a function)."""
    modules = {_module(p) for p in _files()}
    graph = nx.DiGraph()
    for path in _files():
        for target in _imports(path)[0]:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != _module(path):
                graph.add_edge(_module(path), target)
    return graph


def test_no_import_cycle() -> None:
    """No import cycle between modules, imports inside functions counted (a package importing
    its own submodules through its `__init__` aside)."""
    cycles = [c for c in nx.simple_cycles(_graph()) if not _through_own_package(c)]
    assert not cycles, cycles


def test_the_checks_see_imports_inside_functions() -> None:
    source = "import ingestflow.a\n\ndef f():\n    from .b import c\n"
    everything, top = _imports_in(ast.parse(source), "ingestflow.x")
    assert {"ingestflow.a", "ingestflow.x.b", "ingestflow.x.b.c"} <= everything
    assert top == {"ingestflow.a"}


def _through_own_package(cycle: list[str]) -> bool:
    """A package's __init__ importing its submodules, which import siblings through the package
    name, is Python's normal way of registering, not a cycle between ideas: a cycle through a
    package's __init__ whose other modules all lie inside that package."""
    return any(all(m == package or m.startswith(package + ".") for m in cycle) for package in cycle)


def test_no_message_names_a_file_users_do_not_have() -> None:
    """User-facing strings (messages, hints, help: the front ends' docstrings are help) state
    rules in words and point to the README; they never cite the service's specification file,
    which users do not have."""
    found = []
    for path in _files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and (id(node) not in docstrings or _part(_module(path)) in FRONT_ENDS)
                and "SPEC.md" in node.value
            ):
                found.append(f"{_module(path)}:{node.lineno}")
    assert not found, found


def _private_uses(tree: ast.Module) -> list[str]:
    """Another ingestflow module's private names used here: imported (`from m import _x`) or
    reached through the module (`m._x`)."""
    modules: set[str] = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ingestflow"):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{node.lineno}: from {node.module} import {alias.name}")
                modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            modules |= {
                (a.asname or a.name).split(".")[0]
                for a in node.names
                if a.name.startswith("ingestflow")
            }
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        ):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_names() -> None:
    wrong = [
        f"{_module(path)}:{line}"
        for path in _files()
        for line in _private_uses(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not wrong, "make the name public where another module uses it:\n" + "\n".join(wrong)


def test_the_private_name_scan_finds_both_forms() -> None:
    source = (
        "from ingestflow.stages.partition.hires.tables.grid import Word, _horizontal_rules\n"
        "from ingestflow.stages.partition.hires.tables import grid as tables\n"
        "tables._lines([])\n"
    )
    assert len(_private_uses(ast.parse(source))) == 2
