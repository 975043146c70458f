"""OmegaConf: `OmegaConf.load` replaced while rapidocr's pipeline is imported
(`ocr.import_rapidocr`: its modules load the same YAML file twice)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ingestflow.patches import guard
from ingestflow.patches.guard import Patch

LIBRARY = "omegaconf"
#: Checked on omegaconf 2.4.0 (the set-up's).
SUPPORTED: dict[str, str] = {"omegaconf": ">=2.4,<2.5"}
PATCHES: dict[str, Patch] = {
    "omegaconf_load": Patch(
        "omegaconf",
        "OmegaConf.load",
        "value: staticmethod (file_, *, max_yaml_expanded_nodes=10000)",
        "rapidocr's model catalogue is read once at its import (ocr.import_rapidocr)",
        LIBRARY,
    ),
}
guard.declare(LIBRARY, SUPPORTED, PATCHES)


def load(make: Callable[[Any], Any]) -> AbstractContextManager[None]:
    """While open, `OmegaConf.load` is `staticmethod(make(current))`, `current` being the
    library's function; the class's own entry is put back after."""
    return guard.replaced(("omegaconf_load", lambda entry: staticmethod(make(entry.__func__))))
