"""``leasehold conformance`` and ``leasehold certify-worker``."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path

import typer

from leasehold.client import DEFAULT_URL


def conformance(
    url: str = typer.Option(DEFAULT_URL, envvar="LEASEHOLD_URL", help="The coordinator."),
    token: str | None = typer.Option(
        None,
        envvar="LEASEHOLD_TOKEN",
        help="An admin bearer token (the vectors enqueue, lease, cancel, requeue, delete,"
        " set limits and pause a queue).",
        show_default=False,
    ),
) -> None:
    """Run the protocol's test vectors against a running coordinator: one line per vector,
    exit status 1 if any failed. Safe on a coordinator serving other work: every vector
    leases only jobs of its own kinds (conformance.<random>.*), and the run leaves them
    finished and their limits lifted (PROTOCOL.md §11)."""
    from leasehold.conformance.runner import print_table, run_vectors

    results = asyncio.run(run_vectors(url, token))
    print_table(results)
    raise typer.Exit(0 if all(r.passed for r in results) else 1)


def certify_worker(
    command: list[str] = typer.Argument(
        ..., metavar="-- CMD [ARGS]...", help="The worker command under test."
    ),
    also: list[str] = typer.Option(  # typer reads its options from defaults
        [],
        "--with",
        help="Another worker command (a shell-quoted string) run alongside: a mixed run.",
    ),
    keep: Path | None = typer.Option(
        None, help="Keep the database and the processes' logs in this folder."
    ),
    workflows: bool = typer.Option(
        False,
        "--workflows",
        help="Every command claims workflows: its handlers get their jobs' parents and"
        " spawn children under the job's token. Adds cert.spawn and cert.join to the run.",
    ),
) -> None:
    """Certify a worker: start a coordinator on a temporary SQLite file, run CMD against a
    scripted workload with faults (a cancelled job, SIGKILL, SIGSTOP past the lease, stale
    reports), and check the invariants: no job lost, one accepted outcome per job from the
    current token, the cancellation honoured, a graceful SIGTERM. Exit status 1 on a failure.

    CMD gets LEASEHOLD_URL, LEASEHOLD_KINDS, LEASEHOLD_WORKER_ID, LEASEHOLD_LEASE_SECONDS and
    LEASEHOLD_CONCURRENCY in its environment, and must handle the kinds cert.echo,
    cert.sleep and cert.flaky, and with --workflows cert.spawn and cert.join (PROTOCOL.md
    §11)."""
    from leasehold.conformance.certify import certify_in_temp

    commands = [command, *(shlex.split(c) for c in also)]
    checks = certify_in_temp(commands, keep, workflows)
    width = max(len(c.name) for c in checks)
    for c in checks:
        typer.echo(f"{'PASS' if c.passed else 'FAIL'}  {c.name:<{width}}  {c.detail}")
    failed = sum(not c.passed for c in checks)
    typer.echo(f"{len(checks) - failed} passed, {failed} failed")
    raise typer.Exit(0 if failed == 0 else 1)


def register(app: typer.Typer) -> None:
    app.command()(conformance)
    app.command("certify-worker")(certify_worker)
