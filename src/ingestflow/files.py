"""Files written whole or not at all."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def write_json_atomic(target: Path, payload: object) -> None:
    """Write JSON to a temporary file beside `target`, then rename it over `target`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, ensure_ascii=False, indent=2)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
