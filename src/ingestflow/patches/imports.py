"""Changes to what an `import` finds (`sys.modules`): a module blocked, or stood in for until
its first use. The standard library documents both (the import system's module cache: a `None`
entry makes `import name` raise ImportError)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

_stand_in_lock = threading.RLock()  # one real import may bring another


def block(name: str) -> None:
    """Make `import name` raise ImportError in this process (unless it is imported already):
    for a library that another imports when it can (spaCy's thinc imports torch) though
    nothing here uses it. The import system documents the idiom: a `None` in `sys.modules`."""
    sys.modules.setdefault(name, None)  # type: ignore[arg-type]


def stand_in(name: str, names: tuple[str, ...] = ()) -> None:
    """Put a module in `sys.modules[name]` that imports the real one at its first use (an
    attribute, a submodule) and hands every use on to it; nothing when `name` is imported or
    not installed. `names` are bound as functions up front, for `from name import f`."""
    import importlib.util
    import types

    if name in sys.modules:
        return
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # its package is missing or broken
        spec = None
    if spec is None:  # not installed: the import that needs it says so
        return
    stand_in = types.ModuleType(name, "imported at first use (ingestflow: patches.imports)")
    stand_in.__spec__ = spec  # `find_spec` answers from it, as for the real module

    def real() -> Any:
        with _stand_in_lock:  # two first uses at once: one import
            if sys.modules.get(name) is stand_in:
                sys.modules.pop(name, None)
            return importlib.import_module(name)

    def delegate(function: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            return getattr(real(), function)(*args, **kwargs)

        call.__name__ = call.__qualname__ = function
        return call

    def attribute(attr: str) -> Any:
        if attr == "__path__" and spec.submodule_search_locations is not None:
            return real().__path__  # a submodule's import: the package itself first
        if attr.startswith("__"):  # the import system's other questions: a module's
            raise AttributeError(attr)
        return getattr(real(), attr)

    for function in names:
        setattr(stand_in, function, delegate(function))
    stand_in.__getattr__ = attribute  # type: ignore[method-assign]
    sys.modules[name] = stand_in
