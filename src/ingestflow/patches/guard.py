"""The guard every run-time patch of another library goes through: what it replaces, checked.

A library module of this package declares (`declare`) the versions whose internals its patches
were written against (`SUPPORTED`, package -> version range) and each replaced attribute with the
signature the replacement assumes (`Patch`). Before a patch is applied, `check` verifies the
installed versions and the attribute's signature (once per process); a difference is an
EnvironmentProblem saying what differs and which versions to install, or, for an `optional`
patch (one the library works without, only less well), the patch is left out. `replaced()`
(for one block, restored after) and `installed()` (once per process) are the only writers: the
caller hands the replacement as a function of the current value.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import platform
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ingestflow.errors import EnvironmentProblem

_FIX = (
    "install the supported versions ({}) as scripts/setup.sh does, or adapt "
    "ingestflow.patches.{} to the new version"
)
#: The package name whose version is Python's own (not a distribution).
PYTHON = "python"


@dataclass(frozen=True)
class Patch:
    """One replaced attribute of a library and the shape the replacement assumes."""

    module: str
    attribute: str  # dotted inside the module: "_HtmlPartitioner._main"
    assumed: str  # the signature without annotations, or "value: <type name>[|<another>]"
    why: str
    library: str = "unstructured"  # the module of this package that declares it
    optional: bool = False  # left out (not an error) where the library no longer matches


#: Every library's supported versions, by the module of this package that declares them.
LIBRARIES: dict[str, dict[str, str]] = {}
#: Every declared patch, by the name callers use (unique across libraries).
PATCHES: dict[str, Patch] = {}


def declare(library: str, supported: dict[str, str], patches: dict[str, Patch]) -> None:
    """Register a library module's supported versions and patches (at its import)."""
    LIBRARIES[library] = supported
    for name, patch in patches.items():
        if PATCHES.get(name, patch) != patch:
            raise ValueError(f"patch {name!r} is declared twice")
        if patch.library != library:
            raise ValueError(f"patch {name!r} names library {patch.library!r}, not {library!r}")
        PATCHES[name] = patch


def installed_version(package: str) -> str:
    """The installed version of a distribution (or of Python itself, for `PYTHON`)."""
    if package == PYTHON:
        return platform.python_version()
    # an imported module's own version where it has one: no importlib.metadata (~50 ms) at
    # the CLI's start for typer's patch
    version = getattr(sys.modules.get(package.replace("-", "_")), "__version__", None)
    if isinstance(version, str):
        return version
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        raise EnvironmentProblem(
            f"the Python package {package} is not installed; run scripts/setup.sh"
        ) from None


def shape(target: Any) -> str:
    """A callable's signature without annotations (what a replacement relies on)."""
    signature = inspect.signature(target)
    bare = [p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()]
    return str(signature.replace(parameters=bare, return_annotation=inspect.Signature.empty))


def check_signature(target: Any, assumed: str, where: str, library: str = "unstructured") -> None:
    """EnvironmentProblem when callable `target` (named `where`) does not have the signature
    `assumed` (as `shape` writes it), naming the parameters that differ."""
    found = shape(target)
    if found == assumed:
        return
    expected, actual = _parameters(assumed), _parameters(found)
    missing = [p for p in expected if p not in actual]
    extra = [p for p in actual if p not in expected]
    differs = "; ".join(
        part
        for part in (
            f"missing {', '.join(missing)}" if missing else "",
            f"new {', '.join(extra)}" if extra else "",
        )
        if part
    )
    raise EnvironmentProblem(
        f"{where} does not have the signature ingestflow's patch of it assumes "
        f"({differs or f'parameters reordered: {found}'}); " + _fix(library)
    )


def check_version(
    package: str, installed: str, supported: str, library: str = "unstructured"
) -> None:
    """EnvironmentProblem when `installed` (a version of `package`) is outside `supported`."""
    from packaging.specifiers import SpecifierSet

    if installed not in SpecifierSet(supported):
        raise EnvironmentProblem(
            f"{package} {installed} is installed, but ingestflow patches internals that it "
            f"checked only in {package}{supported}; " + _fix(library)
        )


def check_patch(patch: Patch) -> None:
    """EnvironmentProblem when the library's attribute `patch` replaces is missing or changed."""
    where = f"{patch.module}.{patch.attribute}"
    try:
        target = library_value(patch)
    except (ImportError, AttributeError) as exc:
        raise EnvironmentProblem(
            f"{where} is missing ({type(exc).__name__}), and ingestflow replaces it at run "
            "time; " + _fix(patch.library)
        ) from None
    if patch.assumed.startswith("value: "):
        kind, _, rest = patch.assumed.removeprefix("value: ").partition(" ")
        if type(target).__name__ not in kind.split("|"):
            raise EnvironmentProblem(
                f"{where} is a {type(target).__name__}, not the {kind} ingestflow's patch of "
                "it assumes; " + _fix(patch.library)
            )
        if rest:  # a cached_property or a staticmethod: the function it wraps
            wrapped = target.func if hasattr(target, "func") else target.__func__
            check_signature(wrapped, rest, where, patch.library)
        return
    check_signature(target, patch.assumed, where, patch.library)


def check_versions(library: str) -> None:
    """EnvironmentProblem when an installed version of `library`'s packages is outside its
    supported range (cheap: no import); once per process."""
    versions_checked(library)


def check(*names: str) -> None:
    """Check the installed versions and the named patched attributes, each once per process;
    EnvironmentProblem at the first that differs."""
    for name in names:
        versions_checked(PATCHES[name].library)
        patch_checked(name)


def usable(name: str) -> bool:
    """Whether patch `name` may be applied: checked; an optional one that no longer matches is
    False (left out), a required one raises EnvironmentProblem."""
    try:
        check(name)
    except EnvironmentProblem:
        if PATCHES[name].optional:
            return False
        raise
    return True


@functools.cache
def versions_checked(library: str) -> None:
    """`check_versions`, cached (tests clear it to check again)."""
    for package, supported in LIBRARIES[library].items():
        check_version(package, installed_version(package), supported, library)


@functools.cache
def patch_checked(name: str) -> None:
    """`check_patch` of a declared patch, cached."""
    check_patch(PATCHES[name])


@contextmanager
def replaced(*changes: tuple[str, Callable[[Any], Any]]) -> Iterator[None]:
    """While open, each named attribute of `PATCHES` is `make(current)`; restored after. An
    optional patch that no longer matches is left out."""
    changes = tuple((name, make) for name, make in changes if usable(name))
    saved = [(PATCHES[name], _lookup(PATCHES[name])) for name, _ in changes]
    outermost = [patch for patch, original in saved if patch not in _originals]
    try:
        for (patch, original), (_, make) in zip(saved, changes, strict=True):
            _originals.setdefault(patch, original)
            _assign(patch, make(original))
        yield
    finally:
        for patch, original in reversed(saved):
            _assign(patch, original)
        for patch in outermost:
            _originals.pop(patch, None)


_installed: dict[str, Any] = {}
_installing = threading.Lock()
#: The library's own value of each attribute replaced now (what `check_patch` looks at).
_originals: dict[Patch, Any] = {}


def installed(name: str, make: Callable[[Any], Any]) -> Any:
    """Replace the attribute `name` of `PATCHES` by `make(original)` for the rest of the process
    (the first call does; later calls change nothing); the original (None: an optional patch
    left out)."""
    with _installing:
        if name not in _installed:
            if not usable(name):
                return None
            original = _originals.get(PATCHES[name], _lookup(PATCHES[name]))
            _assign(PATCHES[name], make(original))
            _installed[name] = _originals[PATCHES[name]] = original
        return _installed[name]


def assign(name: str, value: Any) -> None:
    """Set the attribute `name` of `PATCHES` to a plain value (checked first), for a setting the
    library reads at call time and a later import may reset."""
    check(name)
    _assign(PATCHES[name], value)


def library_value(patch: Patch) -> Any:
    """The library's own value of `patch`'s attribute, not a replacement of ours."""
    return _originals[patch] if patch in _originals else _lookup(patch)


def _lookup(patch: Patch) -> Any:
    """The library's current value of `patch`'s attribute (a class attribute unbound)."""
    owner: Any = importlib.import_module(patch.module)
    *path, last = patch.attribute.split(".")
    for part in path:
        owner = getattr(owner, part)
    if isinstance(owner, type):
        for klass in owner.__mro__:
            if last in vars(klass):
                return vars(klass)[last]
        raise AttributeError(f"{owner.__name__} has no attribute {last!r}")
    return getattr(owner, last)


def _assign(patch: Patch, value: Any) -> None:
    owner: Any = importlib.import_module(patch.module)
    *path, last = patch.attribute.split(".")
    for part in path:
        owner = getattr(owner, part)
    if isinstance(value, functools.cached_property):
        value.__set_name__(owner, last)
    setattr(owner, last, value)


def _parameters(signature: str) -> list[str]:
    """The parameters of a signature as `shape` writes it, each as written."""
    inner = signature.strip()[1:-1]
    parts: list[str] = []
    depth, quote, current = 0, "", ""
    for char in inner:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        current += char
    if current.strip():
        parts.append(current.strip())
    return parts


def _fix(library: str) -> str:
    ranges = LIBRARIES.get(library, {})
    return _FIX.format(", ".join(f"{package}{spec}" for package, spec in ranges.items()), library)
