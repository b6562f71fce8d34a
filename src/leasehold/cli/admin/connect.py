"""What every admin command shares: the coordinator's address and token, the client, and
how errors end the command (one line on stderr, an exit code per kind of error)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from leasehold.cli.credentials import (
    TOKEN_FILE_HELP,
    TOKEN_HELP,
    resolve_token,
    warn_if_on_command_line,
)
from leasehold.cli.terminal import safe
from leasehold.cli.urls import URL_HELP, check_urls
from leasehold.client._retry import RetryPolicy
from leasehold.errors import (
    Conflict,
    Forbidden,
    InvalidRequest,
    LeaseholdError,
    NotFound,
    PayloadTooLarge,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
)

if TYPE_CHECKING:
    from leasehold.client import SyncClient

# A person is waiting: three quick rounds (about half a second when nothing listens), not
# the worker's patience. Each try still gets the client's full timeout; with several
# coordinators, a round tries each that has not failed lately.
CLI_RETRY = RetryPolicy(attempts=3, base_seconds=0.2, max_seconds=1.0)
CLI_TIMEOUT_SECONDS = 10.0

EXIT_OK = 0
EXIT_ERROR = 1  # any other error (e.g. the URL is not a leasehold coordinator)
EXIT_USAGE = 2  # a bad option or argument, found before sending anything (click's code)
EXIT_UNREACHABLE = 3
EXIT_NOT_FOUND = 4
EXIT_AUTH = 5
EXIT_CONFLICT = 6
EXIT_REFUSED = 7

EXIT_CODES_HELP = """Exit codes:
  0  done
  1  any other error (e.g. the URL is not a leasehold coordinator)
  2  bad option or argument, caught before sending (e.g. --payload not JSON)
  3  coordinator unreachable: network error, timeout or 5xx, after 3 tries
     (of each coordinator, when --url lists several)
  4  not found (404): no such job, schedule or limit
  5  token missing or invalid (401), or its role may not do this (403)
  6  conflict with the job's state (409), e.g. requeue of a job that is queued
  7  request refused as invalid (422, 413)"""

Url = Annotated[
    str,
    typer.Option(
        "--url",
        envvar="LEASEHOLD_URL",
        help=URL_HELP,
        callback=check_urls,
        rich_help_panel="Connection",
    ),
]
Token = Annotated[
    str | None,
    typer.Option(
        "--token",
        envvar="LEASEHOLD_TOKEN",
        help=TOKEN_HELP,
        callback=warn_if_on_command_line,
        show_default=False,
        rich_help_panel="Connection",
    ),
]
TokenFile = Annotated[
    Path | None,
    typer.Option(
        "--token-file",
        envvar="LEASEHOLD_TOKEN_FILE",
        help=TOKEN_FILE_HELP,
        show_default=False,
        rich_help_panel="Connection",
    ),
]
AsJson = Annotated[
    bool,
    typer.Option("--json", help="Print JSON on stdout (and nothing else) instead of tables."),
]


@contextmanager
def connected(url: str, token: str | None, token_file: Path | None = None) -> Iterator[SyncClient]:
    """A client for the command; any leasehold error inside ends the command (``fail``)."""
    from leasehold.client import SyncClient  # here: `leasehold serve` never imports aiohttp

    token = resolve_token(token, token_file)
    try:
        with SyncClient(
            url, token=token, retry=CLI_RETRY, timeout_seconds=CLI_TIMEOUT_SECONDS
        ) as client:
            yield client
    except LeaseholdError as exc:
        fail(*describe(exc, url))


def describe(exc: LeaseholdError, url: str) -> tuple[str, int]:
    """The one-line message and the exit code for an error."""
    text = _one_line(exc.message)
    if isinstance(exc, Unavailable):
        where = f"any coordinator of {url}" if "," in url else f"the coordinator at {url}"
        return f"cannot reach {where} ({text})", EXIT_UNREACHABLE
    if isinstance(exc, NotFound):
        return f"not found: {text}", EXIT_NOT_FOUND
    if isinstance(exc, Unauthorized):
        return f"unauthorized: {text} Set LEASEHOLD_TOKEN or --token-file.", EXIT_AUTH
    if isinstance(exc, Forbidden):
        return f"forbidden: {text}", EXIT_AUTH
    if isinstance(exc, Conflict):
        return f"conflict: {text}", EXIT_CONFLICT
    if isinstance(exc, InvalidRequest | PayloadTooLarge | UnsupportedMediaType):
        return f"refused: {text}", EXIT_REFUSED
    return f"{text}", EXIT_ERROR


def fail(message: str, code: int) -> NoReturn:
    # click.echo, not rich: rich would wrap a long message over several lines. The message
    # may quote the coordinator (an error body, a proxy's page): made safe for a terminal.
    typer.echo(f"leasehold: {safe(message)}", err=True)
    raise typer.Exit(code)


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()
