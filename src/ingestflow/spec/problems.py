"""A Problem: one broken rule, with where it is, what was found, what is allowed and a hint."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One rule broken at one JSON path (`workflow_nodes[2].settings.max_characters`)."""

    path: str
    message: str
    found: Any = None
    allowed: Any = None
    hint: str | None = None

    def __post_init__(self) -> None:
        # bounded: a 1 MB key or value in the input is never echoed whole
        object.__setattr__(self, "path", _cut(self.path, 300))
        object.__setattr__(self, "message", _cut(self.message, 600))
        for name in ("found", "allowed"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, _cut(value, 200))
            elif value is not None and len(short(value, 2001)) > 2000:
                object.__setattr__(self, name, short(value, 200))

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape `validate --json` prints."""
        return asdict(self)

    def one_line(self) -> str:
        """A single-line rendering for error messages and logs."""
        parts = [f"{self.path or '$'}: {self.message}"]
        if self.found is not None:
            parts.append(f"found {short(self.found)}")
        if self.allowed is not None:
            parts.append(f"allowed {short(self.allowed)}")
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "; ".join(parts)


def short(value: Any, limit: int = 120) -> str:
    """Render a value compactly as JSON, cut to `limit` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def join_path(*parts: str | int) -> str:
    """Join keys and indices into a JSON path: ('nodes', 2, 'name') -> nodes[2].name."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part:
            out += f".{part}" if out else str(part)
    return out
