"""The options of ``leasehold serve`` and ``leasehold worker``: their names, environment
fallbacks, defaults and help, as users and the README know them."""

from __future__ import annotations

from typing import Any

import pytest
import typer.main

from leasehold.cli import app


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
