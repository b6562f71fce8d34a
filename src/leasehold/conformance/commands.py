"""``leasehold conformance`` and ``leasehold certify-worker``."""

from __future__ import annotations

import asyncio

import typer

from leasehold.client import DEFAULT_URL


def conformance(
    url: str = typer.Option(DEFAULT_URL, envvar="LEASEHOLD_URL", help="The coordinator."),
    token: str | None = typer.Option(
        None,
        envvar="LEASEHOLD_TOKEN",
        help="An admin bearer token (the vectors enqueue, lease, cancel and requeue).",
        show_default=False,
    ),
) -> None:
    """Run the protocol's test vectors against a running coordinator: one line per vector,
    exit status 1 if any failed. Safe on a coordinator serving other work: every vector
    leases only jobs of its own kinds (conformance.<random>.*), and leaves them finished."""
    from leasehold.conformance.runner import print_table, run_vectors

    results = asyncio.run(run_vectors(url, token))
    print_table(results)
    raise typer.Exit(0 if all(r.passed for r in results) else 1)


def register(app: typer.Typer) -> None:
    app.command()(conformance)
