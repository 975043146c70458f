"""The import graph: arrows run one way (front ends → service → runner → stages/connectors/
providers → spec/store → core), front ends call only the service, and no module-level cycle."""

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
    "quality": 0,
    "spec": 1,
    "store": 1,
    "stages": 2,
    "connectors": 2,
    "providers": 2,
    "runner": 3,
    "service": 4,
    "cli": 5,
    "server": 5,
    "api": 5,
}
FRONT_ENDS = {"cli", "server", "api"}
FRONT_END_MAY_CALL = {"service", "errors", "offline", "cli", "server", "api"}


def _module(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _part(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """(every ingestflow import, those at module level), outside `if TYPE_CHECKING:` blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    top: set[str] = set()
    package = _module(path) if path.name == "__init__.py" else _module(path).rpartition(".")[0]

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


def test_no_module_level_import_cycle() -> None:
    modules = {_module(p) for p in _files()}
    graph = nx.DiGraph()
    for path in _files():
        for target in _imports(path)[1]:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != _module(path):
                graph.add_edge(_module(path), target)
    cycles = [c for c in nx.simple_cycles(graph) if not _package_init_pair(c)]
    assert not cycles, cycles


def _package_init_pair(cycle: list[str]) -> bool:
    """A package's __init__ importing its own submodules, which import siblings through the
    package name, is Python's normal way of registering; not a cycle between ideas."""
    return len({c.rsplit(".", 1)[0] if c.count(".") > 1 else c for c in cycle}) == 1


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
