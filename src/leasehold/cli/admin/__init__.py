"""The admin commands of the ``leasehold`` CLI, all through ``leasehold.client``."""

from __future__ import annotations

import typer

from leasehold.cli.admin import commands, explain, operations
from leasehold.cli.admin.connect import EXIT_CODES_HELP


def register(app: typer.Typer) -> None:
    """Add the admin commands to ``app``, each with the exit codes in its help."""
    for command in (
        commands.enqueue,
        commands.jobs,
        commands.job,
        explain.explain,
        commands.requeue,
        commands.stats,
        operations.cancel,
        operations.delete,
        operations.queues,
        operations.pause,
        operations.resume,
        operations.workers,
    ):
        app.command(epilog=EXIT_CODES_HELP)(command)
    app.command("run-now", epilog=EXIT_CODES_HELP)(operations.run_now)
