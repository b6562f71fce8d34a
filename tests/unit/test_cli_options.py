"""The options of ``leasehold serve`` and ``leasehold worker``: their names, environment
fallbacks, defaults and help, as users and the README know them."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import typer.main

from leasehold.cli import app
from leasehold.cli.options import settings_from
from leasehold.coordinator.settings import CoordinatorSettings, StartOptions


def _params(command: str) -> list[Any]:
    return list(typer.main.get_command(app).commands[command].params)  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_every_option_falls_back_to_leasehold_name(command: str) -> None:
    for param in _params(command):
        if param.name == "help":
            continue
        expected = (
            "LEASEHOLD_APP" if param.name == "app_spec" else f"LEASEHOLD_{param.name.upper()}"
        )
        assert param.envvar == expected, param.name


def _parsed(args: list[str]) -> dict[str, Any]:
    """The values ``leasehold ARGS`` would run with (parsed only: nothing runs)."""
    command = typer.main.get_command(app).commands[args[0]]  # type: ignore[attr-defined]
    return dict(command.make_context(args[0], args[1:]).params)


@pytest.mark.parametrize("args", [["serve"], ["worker", "module:handlers"]])
def test_the_log_options_read_the_environment(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEASEHOLD_LOG_FORMAT", "json")
    monkeypatch.setenv("LEASEHOLD_LOG_LEVEL", "debug")
    parsed = _parsed(args)
    assert (parsed["log_format"], parsed["log_level"]) == ("json", "debug")


# Pinned: the options of `leasehold serve` as deployments and the README know them (flag,
# default, bounds), in the order --help lists them. Each has LEASEHOLD_<NAME> as well.
SERVE = [
    ("--host", "127.0.0.1", None, None),
    ("--port", 8080, 0, 65535),
    ("--database-url", "sqlite:///leasehold.db", None, None),
    ("--default-lease-seconds", 30.0, 0.001, 86400),
    ("--min-lease-seconds", 1.0, 0.001, 86400),
    ("--retry-base-seconds", 1.0, 0, None),
    ("--retry-max-seconds", 3600.0, 0, None),
    ("--reap-interval-seconds", 1.0, 0.001, None),
    ("--schedule-interval-seconds", 1.0, 0.001, None),
    ("--schedule-grace-seconds", 10.0, 0, 600.0),
    ("--sqlite-synchronous", "FULL", None, None),
    ("--log-format", "auto", None, None),
    ("--log-level", "info", None, None),
    ("--allow-ephemeral-database", False, None, None),
    ("--database-wait-seconds", 30.0, 0, 3600),
    ("--tokens-file", None, None, None),
    ("--allow-open-access", False, None, None),
    ("--public-origin", "", None, None),
    ("--trusted-proxies", "", None, None),
    ("--instance", "", None, None),
    ("--max-payload-bytes", 262144, 1, None),
    ("--max-header-bytes", 65536, 1024, None),
    ("--max-headers", 100, 8, None),
    ("--request-timeout-seconds", 10.0, 0.1, 600),
    ("--keep-alive-timeout-seconds", 5, 1, 600),
    ("--send-timeout-seconds", 10.0, 0.1, 600),
    ("--max-connections", 0, 0, None),
    ("--max-connections-per-peer", 1024, 0, None),
    ("--max-header-bytes-total", 16777216, 1024, None),
    ("--max-waiting-polls", 4096, 0, None),
    ("--max-answer-bytes", 8388608, 1, None),
    ("--max-kinds", 1000, 1, None),
    ("--max-queues", 100, 1, None),
    ("--max-groups", 100000, 1, None),
    ("--max-workers", 1000, 1, None),
    ("--max-waiting-results", 4096, 0, None),
    ("--retain-completed-seconds", 86400.0, 0, None),
    ("--retain-cancelled-seconds", 86400.0, 0, None),
    ("--retain-dead-seconds", 604800.0, 0, None),
    ("--prune-interval-seconds", 10.0, 0.001, None),
]


def test_serve_offers_the_options_it_always_did() -> None:
    options = [p for p in _params("serve") if p.name != "help"]
    shown = [
        (p.opts[0], p.default, getattr(p, "min", None), getattr(p, "max", None)) for p in options
    ]
    assert shown == SERVE
    # Shown as written: an int bound as 86400, a float one as 600.0.
    assert [type(p[2]) for p in shown] == [type(p[2]) for p in SERVE]
    assert [type(p[3]) for p in shown] == [type(p[3]) for p in SERVE]
    switches = {p.opts[0]: p.secondary_opts for p in options if p.is_flag}
    assert switches == {"--allow-ephemeral-database": [], "--allow-open-access": []}
    unhelped = {p.opts[0] for p in options if not p.help}
    assert unhelped == {"--port", "--default-lease-seconds", "--log-level"}


def test_serve_builds_its_settings_from_the_options_and_their_fallbacks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LEASEHOLD_MAX_QUEUES", "7")
    monkeypatch.setenv("LEASEHOLD_DATABASE_WAIT_SECONDS", "2.5")
    given = _parsed(
        ["serve", "--port", "9", "--allow-open-access", "--sqlite-synchronous", "normal"]
    )
    settings = settings_from(CoordinatorSettings, given, tokens=())
    assert settings == CoordinatorSettings(
        port=9, allow_open_access=True, sqlite_synchronous="NORMAL", max_queues=7
    )
    assert settings_from(StartOptions, given) == StartOptions(database_wait_seconds=2.5)


def test_every_option_of_a_setting_is_declared_once() -> None:
    # Only the tokens (from --tokens-file and LEASEHOLD_TOKENS) and the body cap (which
    # follows the payload cap) are settings that serve offers no option of their own for.
    names = {p.name for p in _params("serve")}
    fields = {f.name for f in dataclasses.fields(CoordinatorSettings)}
    assert fields - names == {"tokens", "max_body_bytes"}
    assert {f.name for f in dataclasses.fields(StartOptions)} <= names
