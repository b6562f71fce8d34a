"""``leasehold serve``: the coordinator, with every setting as an option and its
LEASEHOLD_<NAME> environment fallback."""

from __future__ import annotations

import dataclasses
import inspect
import os
import socket
from pathlib import Path
from typing import Any

import typer

from leasehold.cli.logs import (
    LOG_FORMAT_OPTION,
    LOG_LEVEL_OPTION,
    LogFormat,
    LogLevel,
    configure_logging,
)
from leasehold.cli.options import declared, option, settings_from, takes
from leasehold.coordinator.auth_tokens import (
    HashedToken,
    TokenConfigError,
    TokenSource,
    parse_tokens_env,
)
from leasehold.coordinator.settings import CoordinatorSettings, StartOptions
from leasehold.coordinator.startup import (
    StartupError,
    check_database_url,
    exit_with,
    prepare_database,
)


def _options() -> list[inspect.Parameter]:
    """serve's options in the order ``--help`` lists them: the coordinator's settings, with
    those of the process itself (its logging, and how it starts, the tokens file among
    them) where the tokens setting, which that file gives, is declared."""
    process = [
        option("log_format", LogFormat, LOG_FORMAT_OPTION),
        option("log_level", LogLevel, LOG_LEVEL_OPTION),
        *declared(StartOptions),
    ]
    settings = declared(CoordinatorSettings)
    order = [f.name for f in dataclasses.fields(CoordinatorSettings)]
    at = next(i for i, p in enumerate(settings) if order.index(p.name) > order.index("tokens"))
    return [*settings[:at], *process, *settings[at:]]


@takes(_options())
def serve(**given: Any) -> None:
    """Run the coordinator."""
    from leasehold.coordinator.app import create_app
    from leasehold.coordinator.server.run import serve as serve_app

    start = settings_from(StartOptions, given)
    source = _token_source(start.tokens_file, os.environ.get("LEASEHOLD_TOKENS"))
    settings = settings_from(CoordinatorSettings, given, tokens=_load(source))
    _check_proxy_settings(settings)
    instance = settings.instance or f"{socket.gethostname()}:{settings.port}"
    configure_logging(given["log_format"], given["log_level"], {"instance": instance})
    try:
        check_database_url(settings.database_url, allow_ephemeral=start.allow_ephemeral_database)
    except StartupError as exc:
        exit_with(exc)

    def open_database() -> None:
        try:
            prepare_database(
                settings.database_url,
                synchronous=settings.sqlite_synchronous,
                wait_seconds=start.database_wait_seconds,
            )
        except StartupError as exc:
            exit_with(exc)

    serve_app(create_app(settings), settings, before_start=open_database, tokens=source)


def _check_proxy_settings(settings: CoordinatorSettings) -> None:
    """A usage error (exit 2) for a public origin or a trusted proxy that does not parse."""
    from leasehold.coordinator.api.middleware.forwarded import ProxyConfigError, ProxySettings

    try:
        ProxySettings.from_text(settings.public_origin, settings.trusted_proxies)
    except ProxyConfigError as exc:
        raise typer.BadParameter(
            str(exc), param_hint="--public-origin / --trusted-proxies"
        ) from None


_TOKENS_HINT = "--tokens-file / LEASEHOLD_TOKENS"


def _token_source(path: Path | None, env: str | None) -> TokenSource:
    try:
        return TokenSource(path, tuple(parse_tokens_env(env)) if env is not None else ())
    except TokenConfigError as exc:
        raise typer.BadParameter(str(exc), param_hint=_TOKENS_HINT) from None


def _load(source: TokenSource) -> tuple[HashedToken, ...]:
    try:
        return source.load()
    except TokenConfigError as exc:
        raise typer.BadParameter(str(exc), param_hint=_TOKENS_HINT) from None
