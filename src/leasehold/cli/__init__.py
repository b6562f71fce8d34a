"""The ``leasehold`` command. Every option has a LEASEHOLD_<NAME> environment fallback."""

from __future__ import annotations

import sys
from typing import Any

import typer

from leasehold._version import describe
from leasehold.cli import admin as _admin
from leasehold.cli import database as _database
from leasehold.cli.admin.scheduling import limits, schedules
from leasehold.cli.demo import demo as _demo
from leasehold.cli.help import Commands
from leasehold.cli.logs import configure_quiet_logging
from leasehold.cli.serve import serve
from leasehold.cli.tokens import new_token_command
from leasehold.cli.worker import worker
from leasehold.conformance import commands as _conformance
from leasehold.coordinator.startup import EXIT_CODES_HELP

app = typer.Typer(
    name="leasehold",
    help="A distributed job queue with fenced leases.",
    no_args_is_help=True,
    add_completion=False,
    # click's plain layout: rich's table cuts long flag names at 80 columns.
    rich_markup_mode=None,
    cls=Commands,
)


app.add_typer(schedules, name="schedules")
app.add_typer(limits, name="limits")


def _show_version(show: bool) -> None:
    if show:
        typer.echo(f"leasehold {describe()}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_show_version,
        is_eager=True,
        help="Print the version and the build (the commit) and exit.",
    ),
) -> None:
    """A distributed job queue with fenced leases."""


def _is_a(exc: BaseException, name: str) -> bool:
    # By class name: typer raises click's exceptions, or those of its own copy of click in
    # newer releases, and the two share names but not classes.
    return any(cls.__name__ == name for cls in type(exc).__mro__)


def _usage_exit(exc: Any) -> int:
    """Say what click's exception ``exc`` says, as the command line does, and return the
    exit status: a usage error is one line (not a framed box), the commonest start-up
    error being a mistyped option."""
    if _is_a(exc, "Abort"):
        print("Aborted!", file=sys.stderr)  # as click says it
        return 1
    if _is_a(exc, "UsageError") and not _is_a(exc, "NoArgsIsHelpError"):
        ctx = getattr(exc, "ctx", None)
        where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        # Pydantic's "Value error, " prefix says nothing to someone who mistyped an option.
        message = str(exc.format_message()).replace("Value error, ", "")
        print(f"leasehold: error: {message}{where}", file=sys.stderr)
    else:
        exc.show()  # a bare `leasehold` shows the help, as usual
    code: int = exc.exit_code
    return code


def main() -> None:
    """The command line's entry point: usage errors are one line on stderr, exit status 2."""
    configure_quiet_logging()  # serve and worker set up their own
    try:
        code = app(standalone_mode=False)
    except Exception as exc:
        if not (_is_a(exc, "ClickException") or _is_a(exc, "Abort")):
            raise
        raise SystemExit(_usage_exit(exc)) from None
    if isinstance(code, int) and code != 0:
        raise SystemExit(code)


app.command(epilog=EXIT_CODES_HELP)(serve)
app.command("new-token")(new_token_command)
app.command()(worker)
# Admin commands (enqueue, jobs, job, requeue, stats) and the demo live in their own modules.
_admin.register(app)
_database.register(app)
app.command()(_demo)
_conformance.register(app)
