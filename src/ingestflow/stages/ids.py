"""Element ids for what ingestflow creates: deterministic hashes or random UUIDs."""

from __future__ import annotations

import hashlib
import uuid

_SEPARATOR = "\x1f"  # ASCII unit separator: no part can run into the next one


def stable_id(*parts: object) -> str:
    """SHA-256 over the parts, cut to 32 hex digits (the length `unstructured` uses for ids)."""
    data = _SEPARATOR.join(str(part) for part in parts)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:32]


def new_id(unique: bool, *parts: object) -> str:
    """A random UUID4 when `unique`, else `stable_id(*parts)`.

    The parts must make the id unique within its document (include a sequence number) and stable
    across runs (no memory addresses, times or random values).
    """
    return str(uuid.uuid4()) if unique else stable_id(*parts)
