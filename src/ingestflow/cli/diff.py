"""How `jobs diff` reads in a terminal."""

from __future__ import annotations

from typing import Any

import typer


def _stats(side: dict[str, Any] | None) -> str:
    if side is None:
        return "-"
    lengths = side["text_length"]
    return f"{side['elements']} ({lengths['min']}/{lengths['median']:g}/{lengths['max']})"


def _types(a: dict[str, Any] | None, b: dict[str, Any] | None) -> str:
    ta, tb = (a or {}).get("types", {}), (b or {}).get("types", {})
    moved = [
        f"{t} {ta.get(t, 0)}→{tb.get(t, 0)}"
        for t in sorted(set(ta) | set(tb))
        if ta.get(t, 0) != tb.get(t, 0)
    ]
    return ", ".join(moved) or "same types"


def print_diff(result: dict[str, Any], texts: bool = False) -> None:
    """Per node: the settings that differ; per file: elements (min/median/max text length) in A
    and B, type counts that moved, and how many elements changed; with `texts` the changes."""
    a, b = result["a"], result["b"]
    typer.echo(f"A {a['id'][:8]} {a['workflow']}   B {b['id'][:8]} {b['workflow']}")
    for node in result["nodes"]:
        typer.echo(f"\n{node['position']}. {node['name']}")
        for key, (va, vb) in node["settings"].items():
            typer.echo(f"   {key}: {va!r} → {vb!r}")
        if not node["settings"]:
            typer.echo("   same settings")
        for row in node["files"]:
            if row["changed"] is None:
                typer.echo(f"   {row['file']}: {row.get('note', '')}")
                continue
            verdict = "unchanged" if row["changed"] == 0 else f"{row['changed']} changed"
            typer.echo(
                f"   {row['file']}: {_stats(row['a'])} → {_stats(row['b'])}, {verdict}; "
                f"{_types(row['a'], row['b'])}"
            )
            if texts:
                for change in row["changes"]:
                    for mark, side in (("-", "a"), ("+", "b")):
                        for element in change[side]:
                            typer.echo(_wrapped(f"{mark} [{element['type']}] ", element["text"]))
    typer.echo("\nelements: count (min/median/max text length); --json has every change")


def _wrapped(head: str, text: str, indent: str = "     ") -> str:
    """A changed element whole (two chunks that differ late must not look the same), wrapped
    to the terminal: `head` on its first line, its lines kept, continuations indented under
    the text."""
    import shutil
    import textwrap

    width = max(40, shutil.get_terminal_size().columns - 1)
    first = indent + head
    rest = " " * len(first)
    lines: list[str] = []
    for line in text.splitlines() or [""]:
        wrapped = textwrap.wrap(
            line,
            width=width,
            initial_indent=first if not lines else rest,
            subsequent_indent=rest,
            break_on_hyphens=False,
        )
        lines.extend(wrapped or [(first if not lines else rest).rstrip()])
    return "\n".join(lines)
