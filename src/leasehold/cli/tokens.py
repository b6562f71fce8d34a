"""``leasehold new-token ROLE``: a random bearer token and its line for the tokens file."""

from __future__ import annotations

import typer

from leasehold.coordinator.auth_tokens import (
    Role,
    hash_token,
    new_token,
)


def new_token_command(
    role: Role = typer.Argument(..., help="producer, worker, reader, metrics or admin"),
) -> None:
    """Make a random bearer token: prints the token (give it to the client, as
    LEASEHOLD_TOKEN for one) and then the line for the coordinator's tokens file."""
    token = new_token()
    typer.echo(token)
    typer.echo(f"{role.value}:{hash_token(token).hex()}")
