"""The guard (`patches/guard.py`): every patch of another library is declared, with a supported
version range for its library, and no module outside `patches/` assigns into another library."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import sys
from pathlib import Path

import pytest

from ingestflow import patches
from ingestflow.errors import EnvironmentProblem
from ingestflow.patches import guard

SRC = Path(__file__).resolve().parents[2] / "src" / "ingestflow"
PATCHES_DIR = SRC / "patches"
#: The guard's entry points that name a declared patch by its first argument.
_NAMED = {"installed", "assign", "check", "usable"}


def _library_modules() -> list[str]:
    return [
        f"ingestflow.patches.{m.name}"
        for m in pkgutil.iter_modules(patches.__path__)
        if m.name not in {"guard", "imports"}
    ]


def _root(node: ast.AST) -> str | None:
    """The name an attribute or subscript chain starts from (`a` of `a.b[0].c`), through
    `getattr`; None for what a call makes (an object made by a library is the caller's own)."""
    while True:
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "getattr" and node.args:
            node = node.args[0]
        elif isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        else:
            break
    return node.id if isinstance(node, ast.Name) else None


def _foreign(tree: ast.Module) -> set[str]:
    """Names bound to another library's module or class (imports of anything but ingestflow,
    and names assigned from an expression that starts at one)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {
                (a.asname or a.name).split(".")[0]
                for a in node.names
                if not a.name.startswith("ingestflow")
            }
        elif isinstance(node, ast.ImportFrom) and not node.level:
            module = node.module or ""
            own = module.startswith("ingestflow") or module == "__future__"
            names |= set() if own else {a.asname or a.name for a in node.names}
    changed = True
    while changed:  # `server = multiprocessing.forkserver._forkserver`, then `server.x = ...`
        changed = False
        for node in ast.walk(tree):
            value = getattr(node, "value", None)
            if isinstance(node, ast.Assign | ast.AnnAssign) and value and _root(value) in names:
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(target, ast.Name) and target.id not in names:
                        names.add(target.id)
                        changed = True
    return names


def writes_into_other_libraries(source: str) -> list[str]:
    """Each statement of `source` that assigns into another library (an attribute of an
    imported module or class, `setattr`/`delattr` on one, a private attribute of an object
    not its own, or an entry of `sys.modules`)."""
    tree = ast.parse(source)
    foreign = _foreign(tree)
    found = []
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in {"setattr", "delattr"} and _root(node.args[0]) in foreign:
                found.append(f"{node.lineno}: {ast.unparse(node)}")
            if name == "sys.modules.setdefault":
                found.append(f"{node.lineno}: {ast.unparse(node)}")
            continue
        for target in targets:
            module_entry = isinstance(target, ast.Subscript) and (
                ast.unparse(target.value) == "sys.modules"
            )
            foreign_attribute = isinstance(target, ast.Attribute) and (
                _root(target) in foreign or _private_of_another(target)
            )
            if module_entry or foreign_attribute:
                found.append(f"{getattr(node, 'lineno', 0)}: {ast.unparse(node)}")
    return found


def _private_of_another(target: ast.Attribute) -> bool:
    """A private or dunder attribute of an object other than `self`/`cls` (what a library
    keeps to itself, reached through an object it handed over: `pool._network_backend`)."""
    owner = target.value
    return target.attr.startswith("_") and not (
        isinstance(owner, ast.Name) and owner.id in {"self", "cls"}
    )


# the ingestflow module that swaps `__main__` for its own stand-in while workers start
_OWN_MAIN = {SRC / "runner" / "mainless.py"}


def test_no_module_outside_patches_assigns_into_another_library() -> None:
    wrong = [
        f"{path.relative_to(SRC.parent)}:{line}"
        for path in sorted(SRC.rglob("*.py"))
        if PATCHES_DIR not in path.parents and path not in _OWN_MAIN
        for line in writes_into_other_libraries(path.read_text(encoding="utf-8"))
    ]
    assert not wrong, "assign through ingestflow.patches instead:\n" + "\n".join(wrong)


@pytest.mark.parametrize(
    "source",
    [
        "import PIL.Image\nPIL.Image.open = lambda fp: fp\n",
        "from omegaconf import OmegaConf\nsetattr(OmegaConf, 'load', None)\n",
        "import multiprocessing.forkserver\n"
        "def f():\n    server = multiprocessing.forkserver._forkserver\n"
        "    server._forkserver_alive_fd = None\n",
        "from typer import core\ncore.TyperOption.display_type_rich = print\n",
        "import sys\nsys.modules['torch'] = None\n",
        "import sys\nsys.modules.setdefault('torch', None)\n",
        "def f(transport):\n    pool = transport._pool\n    pool._network_backend = None\n",
        "def f(ray):\n    params = ray._private.parameter.RayParams\n    params.__init__ = None\n",
    ],
)
def test_the_scan_finds_each_kind_of_write(source: str) -> None:
    assert writes_into_other_libraries(source)


def test_the_scan_leaves_own_objects_and_plain_use_alone() -> None:
    source = (
        "import os\nfrom PIL import Image\n"
        "def f(image, self):\n"
        "    image.format = 'PNG'\n    self.x = 1\n    setattr(self, 'y', 2)\n"
        "    os.environ['X'] = '1'\n    img = Image.new('L', (1, 1))\n"
    )
    assert writes_into_other_libraries(source) == []


def test_every_patch_is_declared_with_a_version_range_for_its_library() -> None:
    for module in _library_modules():
        library = importlib.import_module(module)
        assert library.LIBRARY in guard.LIBRARIES, module
        assert guard.LIBRARIES[library.LIBRARY] == library.SUPPORTED, module
        assert library.SUPPORTED, module
        for name, patch in library.PATCHES.items():
            assert guard.PATCHES[name] is patch
            assert patch.library == library.LIBRARY, name
    used = set()
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            name = ast.unparse(node.func).rpartition(".")[2]
            first = node.args[0]
            if name in _NAMED and isinstance(first, ast.Constant) and isinstance(first.value, str):
                used.add(first.value)
            if name == "replaced" and isinstance(first, ast.Tuple):
                key = first.elts[0]
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    used.add(key.value)
    assert used, "the scan found no patch applied"
    assert used <= set(guard.PATCHES), used - set(guard.PATCHES)


def test_every_declared_patch_matches_the_installed_library() -> None:
    for module in _library_modules():
        importlib.import_module(module)
    for name, patch in guard.PATCHES.items():
        try:
            importlib.import_module(patch.module)
        except ImportError:  # an optional extra (Ray) not installed here
            continue
        guard.check(name)


def test_an_optional_patch_that_no_longer_matches_is_left_out() -> None:
    import typer.core

    patch = guard.Patch(
        "typer.core", "TyperOption.display_type_rich", "(self, ctx, new)", "t", "typer", True
    )
    guard.PATCHES["test_optional"] = patch
    try:
        assert guard.usable("test_optional") is False
        before = typer.core.TyperOption.display_type_rich
        assert guard.installed("test_optional", lambda _: print) is None
        with guard.replaced(("test_optional", lambda _: print)):
            assert typer.core.TyperOption.display_type_rich is before
        guard.PATCHES["test_optional"] = guard.Patch(
            patch.module, patch.attribute, patch.assumed, "t", "typer", False
        )
        guard.patch_checked.cache_clear()
        with pytest.raises(
            EnvironmentProblem, match=r"does not have the signature .*; install .*typer>="
        ):
            guard.usable("test_optional")
    finally:
        del guard.PATCHES["test_optional"]
        guard.patch_checked.cache_clear()


def test_a_library_s_versions_are_checked_against_its_own_range() -> None:
    with pytest.raises(
        EnvironmentProblem,
        match=r"^pillow 12\.0\.0 is installed, but ingestflow patches internals that it checked "
        r"only in pillow>=13\.0,<14; .* or adapt ingestflow\.patches\.pillow to the new version$",
    ):
        guard.check_version("pillow", "12.0.0", ">=13.0,<14", "pillow")
    assert guard.installed_version(guard.PYTHON) == ".".join(map(str, sys.version_info[:3]))


def test_importing_the_package_imports_no_patched_library() -> None:
    import subprocess

    code = (
        "import sys\nimport ingestflow.patches.unstructured, ingestflow.patches.pillow\n"
        "import ingestflow.patches.ray, ingestflow.patches.typer, ingestflow.patches.httpcore\n"
        "print(sorted(m for m in ('PIL', 'ray', 'unstructured', 'httpcore2', 'omegaconf') "
        "if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]"
