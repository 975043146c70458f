"""A command whose `--input` takes several paths after one flag (`-i a b c`), as `-i a -i b -i c`
does: Click options take one value each, so the parser's option (Typer's own copy of Click's
parser) is taught to take the non-option words that follow it."""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand

#: The options that take every word after them up to the next option.
SPREAD = ("--input",)


class SpreadInputs(TyperCommand):
    """A Typer command whose `--input` (`-i`) takes several values after one flag. The words it
    takes stop at the next option; when the command's positional arguments are still missing,
    the last words are left to them (`run -i a wf.json` still names the workflow)."""

    def make_parser(self, ctx: Any) -> Any:
        parser: Any = super().make_parser(ctx)
        wanted = sum(
            p.nargs for p in self.params if p.param_type_name == "argument" and p.nargs > 0
        )
        for name in SPREAD:
            option = parser._long_opt.get(name)
            if option is not None:
                option.process = _spreading(option.process, parser, wanted)
        return parser


def _spreading(process: Any, parser: Any, wanted: int) -> Any:
    def spread(value: Any, state: Any) -> None:
        process(value, state)
        words = 0
        while words < len(state.rargs) and not _is_option(state.rargs[words], parser):
            words += 1
        words -= max(0, wanted - len(state.largs))  # the positionals' words stay theirs
        for _ in range(max(0, words)):
            process(state.rargs.pop(0), state)

    return spread


def _is_option(word: str, parser: Any) -> bool:
    return len(word) > 1 and word[:1] in parser._opt_prefixes
