"""How ``--help`` lists a command's subcommands: each with the first sentence of its help,
wrapped to the terminal, never cut short with "..." as click does to fit one line."""

from __future__ import annotations

from typing import Any

from typer.core import TyperGroup

# get_short_help_str cuts the first sentence to this many characters: none is this long.
_WHOLE = 10_000


class Commands(TyperGroup):
    """A group whose ``--help`` shows each subcommand's first sentence whole."""

    # Any: typer passes the context and formatter of click, or of its own copy of click in
    # newer releases (the same names, other classes).
    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(_WHOLE)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
