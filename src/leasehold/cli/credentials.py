"""Where the command-line clients (worker, admin commands) take their bearer token from.

A command line is visible to every user of the machine (``ps``), so a token belongs in the
environment (``LEASEHOLD_TOKEN``) or in a file only its owner can read (``--token-file``);
``--token`` still works, with a warning.
"""

from __future__ import annotations

from pathlib import Path

import typer

TOKEN_HELP = (
    "Bearer token. Prefer LEASEHOLD_TOKEN or --token-file: a command line is visible to"
    " every user of the machine (a warning says so)."
)
TOKEN_FILE_HELP = "A file holding the bearer token (its first line), readable by you alone."


def warn_if_on_command_line(ctx: typer.Context, value: str | None) -> str | None:
    """Option callback for ``--token``: a token typed as a flag gets a warning on stderr."""
    source = ctx.get_parameter_source("token")
    if value is not None and source is not None and source.name == "COMMANDLINE":
        typer.echo(
            "leasehold: warning: --token shows the token to every user of this machine"
            " (ps); use LEASEHOLD_TOKEN or --token-file instead",
            err=True,
        )
    return value


def resolve_token(token: str | None, token_file: Path | None) -> str | None:
    """The token given by ``--token``/``LEASEHOLD_TOKEN`` or by ``--token-file`` (not both)."""
    if token_file is None:
        return token
    if token is not None:
        raise typer.BadParameter(
            "give the token once: --token (or LEASEHOLD_TOKEN) or --token-file, not both",
            param_hint="--token-file",
        )
    try:
        text = token_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise typer.BadParameter(
            f"cannot read {token_file}: {exc.__class__.__name__}", param_hint="--token-file"
        ) from None
    lines = text.strip().splitlines()
    if not lines or not lines[0].strip():
        raise typer.BadParameter(f"{token_file} is empty", param_hint="--token-file")
    return lines[0].strip()
