"""Typer: how its rich help names an option's or an argument's value (`cli.app`'s plain help).
Left out, as before, where Typer's classes no longer match: the help then shows Typer's own
placeholders."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ingestflow.patches import guard
from ingestflow.patches.guard import Patch

LIBRARY = "typer"
#: Checked on typer 0.29.2 (the set-up's).
SUPPORTED: dict[str, str] = {"typer": ">=0.29,<0.30"}
_WHY = "help names a value plainly (PATH, INTEGER), a flag none (cli.app)"
PATCHES: dict[str, Patch] = {
    "typer_option_label": Patch(
        "typer.core", "TyperOption.display_type_rich", "(self, ctx)", _WHY, LIBRARY, True
    ),
    "typer_argument_label": Patch(
        "typer.core", "TyperArgument.display_type_rich", "(self, ctx)", _WHY, LIBRARY, True
    ),
    "typer_argument_usage": Patch(
        "typer.core", "TyperArgument._usage_display_name", "(self)", _WHY, LIBRARY, True
    ),
}
guard.declare(LIBRARY, SUPPORTED, PATCHES)


def help_labels(label: Callable[[Any, Any], str | None], usage: Callable[[Any], str]) -> None:
    """For the rest of the process, an option's and an argument's value is named by
    `label(param, ctx)` and an argument in the usage line by `usage(param)`; all or none."""
    if not all(guard.usable(name) for name in PATCHES):
        return
    guard.installed("typer_option_label", lambda _: label)
    guard.installed("typer_argument_label", lambda _: label)
    guard.installed("typer_argument_usage", lambda _: usage)
