"""Each default and the version have one home; whatever shows or repeats one agrees with it."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime
from pathlib import Path

import typer.main

import leasehold
from leasehold._version import __version__
from leasehold.cli import app
from leasehold.coordinator import settings
from leasehold.coordinator.api.schemas.schedules import ScheduleRequest
from leasehold.coordinator.service import budget, names
from leasehold.coordinator.service import job_service as service
from leasehold.model import DEFAULT_MAX_ATTEMPTS, DEFAULT_PRIORITY, DEFAULT_QUEUE, ScheduleSpec
from leasehold.worker.heartbeat import beat_body
from leasehold.worker.settings import WorkerSettings

SOURCE = Path(leasehold.__file__).parent


def _option_defaults(*path: str) -> dict[str, object]:
    """The defaults of ``leasehold <path>``'s options, by parameter name."""
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]  # a TyperGroup
    return {p.name: p.default for p in command.params if p.name is not None}


def _defaults(cls: type) -> dict[str, object]:
    return {
        f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING
    }


def test_the_version_is_read_in_one_place() -> None:
    readers = [
        str(path.relative_to(SOURCE))
        for path in SOURCE.rglob("*.py")
        if re.search(r"metadata\.version\(", path.read_text())
    ]
    assert readers == ["_version.py"]
    assert leasehold.__version__ == __version__ != "0+unknown"


def test_a_worker_reports_leaseholds_version() -> None:
    body = beat_body("w", ("k",), None, 1, datetime(2026, 1, 1, tzinfo=UTC))
    assert body["version"] == __version__


def test_the_worker_command_shows_the_workers_defaults() -> None:
    options = _option_defaults("worker")
    shared = _defaults(WorkerSettings).keys() & options.keys()
    assert {"concurrency", "wait_seconds", "grace_seconds", "lease_seconds"} <= shared
    for name in shared:
        assert options[name] == getattr(WorkerSettings(), name), name


def test_the_rules_defaults_are_the_settings_defaults() -> None:
    # core imports no settings (its rules run without a coordinator), so each is declared
    # twice on purpose, and held equal here.
    coordinator = settings.CoordinatorSettings()
    assert coordinator.max_answer_bytes == budget.MAX_ANSWER_BYTES
    assert (coordinator.max_kinds, coordinator.max_queues) == (names.MAX_KINDS, names.MAX_QUEUES)
    assert coordinator.max_waiting_polls == service.DEFAULT_MAX_WAITING_POLLS


def test_a_schedule_has_the_jobs_defaults_wherever_it_is_made() -> None:
    spec = _defaults(ScheduleSpec)
    assert (spec["queue"], spec["priority"], spec["max_attempts"]) == (
        DEFAULT_QUEUE,
        DEFAULT_PRIORITY,
        DEFAULT_MAX_ATTEMPTS,
    )
    request = ScheduleRequest.model_validate({"cron": "* * * * *", "kind": "k"})
    put = _option_defaults("schedules", "put")
    for name in ("queue", "priority", "max_attempts", "timezone", "enabled"):
        assert getattr(request, name) == spec[name] == put[name], name
    assert request.catch_up == spec["catch_up"] == put["catch_up"]
