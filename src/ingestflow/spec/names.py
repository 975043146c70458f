"""Names of workflows, nodes and connectors: printable text, since lists, logs and records show
them."""

from __future__ import annotations

import unicodedata

from ingestflow.spec.problems import Problem


def control_characters(name: str) -> list[str]:
    """The control characters (Unicode category Cc: NUL, tab, line breaks, ...) in `name`, each
    as U+XXXX, in order of first appearance."""
    return list(dict.fromkeys(f"U+{ord(c):04X}" for c in name if unicodedata.category(c) == "Cc"))


def name_problem(path: str, name: str, what: str) -> Problem | None:
    """A Problem when `name` (of a workflow, node or connector) holds a control character."""
    found = control_characters(name)
    if not found:
        return None
    return Problem(
        path,
        f"the {what} name holds a control character ({', '.join(found[:5])})",
        found=name,
        hint="names are shown in lists, logs and job records: remove it (a tab or a line break "
        "too)",
    )
