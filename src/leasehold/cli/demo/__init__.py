"""``leasehold demo``: a coordinator, workers with example handlers, and jobs to watch."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer
from rich.console import Console


def demo(
    jobs: Annotated[
        int, typer.Option("--jobs", min=1, max=1_000_000, help="How many jobs.")
    ] = 10_000,
    workers: Annotated[int, typer.Option("--workers", min=1, max=64, help="Worker processes.")] = 4,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, max=1000, help="Jobs each worker runs at once.")
    ] = 8,
    port: Annotated[
        int,
        typer.Option(
            "--port",
            min=0,
            max=65535,
            # Not 8080: the demo must not clash with a coordinator started by `make run`.
            help="The demo coordinator's port (0: any free one).",
        ),
    ] = 8090,
    keep: Annotated[
        bool,
        typer.Option(
            "--keep",
            help="When the jobs are done, keep everything running until Ctrl+C (to look around).",
        ),
    ] = False,
) -> None:
    """Start a coordinator (temporary SQLite database) and worker processes with example
    handlers (quick, flaky, failing, slow), enqueue JOBS jobs and show their progress.
    Everything it starts is stopped on exit or Ctrl+C."""
    # Here, not at the top: `leasehold` registers this command at every start, and the
    # demo's parts import the HTTP client.
    from leasehold.cli.demo.processes import DemoError, free_port, port_is_free
    from leasehold.cli.demo.run import DemoSettings, run_demo

    console = Console()
    if port == 0:
        port = free_port()
    elif not port_is_free(port):
        typer.echo(
            f"leasehold: port {port} is in use (a coordinator already?); try --port 0", err=True
        )
        raise typer.Exit(1)
    try:
        settings = DemoSettings(jobs, workers, concurrency, port, keep)
        code = asyncio.run(run_demo(settings, console))
    except DemoError as exc:
        typer.echo(f"leasehold: demo failed: {exc}", err=True)
        raise typer.Exit(1) from None
    raise typer.Exit(code)
