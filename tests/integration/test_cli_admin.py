"""``leasehold schedules ...`` and ``leasehold limits ...`` against a real coordinator."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from leasehold import cli
from tests.process import Coordinator


def run(coordinator: Coordinator, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli.app, [*args, "--url", coordinator.url], env={"COLUMNS": "200"})
    return result.exit_code, result.output


def test_schedules_commands(coordinator: Coordinator) -> None:
    code, out = run(
        coordinator,
        "schedules",
        "put",
        "nightly",
        "--cron",
        "30 2 * * *",
        "--kind",
        "backup",
        "--timezone",
        "Europe/London",
        "--payload",
        '{"full": true}',
        "--catch-up",
        "once",
        "--json",
    )
    assert code == 0, out
    created = json.loads(out)
    assert (created["name"], created["payload"], created["catch_up"]) == (
        "nightly",
        {"full": True},
        "once",
    )
    code, out = run(coordinator, "schedules", "list", "--json")
    assert [s["name"] for s in json.loads(out)] == ["nightly"]
    code, out = run(coordinator, "schedules", "list")
    assert (code, "NEXT FIRE" in out, "nightly" in out, "30 2 * * *" in out) == (
        0,
        True,
        True,
        True,
    )
    code, out = run(coordinator, "schedules", "get", "nightly", "--json")
    assert json.loads(out)["next_fire_at"] == created["next_fire_at"]
    assert run(coordinator, "schedules", "delete", "nightly")[0] == 0
    code, out = run(coordinator, "schedules", "get", "nightly")
    assert (code, "not found" in out) == (4, True)  # the admin commands' exit codes
    code, out = run(coordinator, "schedules", "put", "x", "--cron", "nope", "--kind", "k")
    assert (code, "invalid cron expression" in out) == (7, True)


def test_limits_commands(coordinator: Coordinator) -> None:
    code, out = run(coordinator, "limits", "set", "charge-card", "4", "--json")
    assert (code, json.loads(out)) == (
        0,
        {
            "kind": "charge-card",
            "max_running": 4,
            "running": 0,
            "max_running_per_group": None,
            "rate": None,
            "fair": False,
        },
    )
    assert json.loads(run(coordinator, "limits", "list", "--json")[1])[0]["kind"] == "charge-card"
    code, out = run(coordinator, "limits", "list")
    assert (code, "MAX RUNNING" in out, "charge-card" in out) == (0, True, True)
    assert run(coordinator, "limits", "delete", "charge-card")[0] == 0
    assert run(coordinator, "limits", "delete", "charge-card")[0] == 4
