"""The coordinator URLs the command-line clients (worker, admin commands) take: one, or
several on one database separated by commas, checked before anything is sent."""

from __future__ import annotations

import typer

from leasehold.client._endpoints import parse_urls

URL_HELP = (
    "The coordinator, or several on one database separated by commas"
    " (http://a:8080,http://b:8080): a call that gets no answer from one moves on to the next."
)


def check_urls(value: str) -> str:
    """Option callback: a malformed list is a usage error (one line, exit status 2) that
    names the fix, before any request is sent."""
    try:
        parse_urls(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    return value
