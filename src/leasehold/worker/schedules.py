"""Schedules declared in code, and how a starting worker brings the coordinator in line.

::

    registry.schedule("nightly-report", build_report.new_job(day="yesterday"),
                      cron="0 3 * * *", timezone="Europe/Paris", catch_up="once")

The coordinator stores and fires schedules (DESIGN.md §18); code only declares them. When a
worker starts (``leasehold worker``, or ``leasehold schedules sync APP`` in a deploy step),
``sync_schedules`` compares the declared ones with the stored ones:

- a declared schedule that is missing is created, one that differs is replaced (it starts
  again at its first fire time from now, as any replacement does), and one that is stored
  as declared is left alone: not even written, so that its next fire time stays as it is.
  Many workers starting at once therefore write nothing but the first change, and the
  coordinator ignores a replacement with the very same schedule anyway;
- a stored schedule that the code does not declare is kept, since a worker cannot tell a
  schedule removed from the code from one an operator or another application made, and an
  older worker of a rolling deploy still declares it. Those of a kind this registry
  handles are named in the ``schedules.synced`` log line (``undeclared``). A registry made
  with ``Registry(prune_schedules=True)`` owns every schedule of its kinds instead: the
  undeclared ones are deleted.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from leasehold.client import Client, NewJob
from leasehold.errors import ScheduleNotFound
from leasehold.model import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
    DEFAULT_QUEUE,
    DEFAULT_TIMEZONE,
    JSON,
    SCHEDULE_NAME_PATTERN,
    CatchUp,
    ScheduleSpec,
)


def declare(
    name: str,
    job: str | NewJob,
    *,
    cron: str,
    timezone: str = DEFAULT_TIMEZONE,
    payload: JSON = None,
    catch_up: CatchUp | str = CatchUp.SKIP,
    enabled: bool = True,
) -> ScheduleSpec:
    """A schedule as code declares it, checked now (a mistake fails at import, with the
    line that made it, rather than when a worker starts).

    ``job`` is a kind (its jobs get ``payload``) or a ``NewJob``, typically a typed task's
    ``task.new_job(...)``, whose arguments are checked against the task's signature and
    whose queue, priority and max_attempts the schedule's jobs get. A scheduled run's
    idempotency key is the scheduler's (``schedule:{name}:{fire time}``): a task's own key
    function does not apply."""
    if not re.fullmatch(SCHEDULE_NAME_PATTERN, name):
        raise ValueError(
            f"a schedule name is 1-100 letters, digits, '.', '_' or '-', starting with a"
            f" letter or digit, not {name!r}"
        )
    _check_cron(cron)
    _check_zone(timezone)
    if isinstance(job, NewJob):
        if payload is not None:
            raise ValueError("give the payload in the NewJob, not beside it")
        if job.run_after is not None or job.timeout_seconds is not None or job.headers:
            raise ValueError(
                "a schedule's jobs carry no run_after, timeout_seconds or headers of their own"
            )
        kind, payload = job.kind, job.payload
        queue, priority, attempts = job.queue, job.priority, job.max_attempts
    else:
        kind, queue, priority, attempts = job, None, None, None
    if not isinstance(kind, str) or not kind.strip():
        raise ValueError(f"a job kind is a non-empty string, not {kind!r}")
    return ScheduleSpec(
        name=name,
        cron=cron,
        kind=kind,
        timezone=timezone,
        payload=payload,
        queue=queue or DEFAULT_QUEUE,
        priority=DEFAULT_PRIORITY if priority is None else priority,
        max_attempts=DEFAULT_MAX_ATTEMPTS if attempts is None else attempts,
        catch_up=CatchUp(catch_up),
        enabled=enabled,
    )


def _check_cron(cron: str) -> None:
    # The coordinator checks it again and is the authority; this only moves the error to
    # the declaration. cronsim raises more than its own error for some inputs.
    try:
        CronSim(cron, datetime(2000, 1, 1, tzinfo=UTC))
    except (CronSimError, ValueError, IndexError) as exc:
        raise ValueError(f"invalid cron expression {cron!r}: {exc}") from None


def _check_zone(name: str) -> None:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (give an IANA name such as UTC)") from None


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What a sync did, by schedule name."""

    created: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    undeclared: list[str] = field(default_factory=list)  # kept: see the module docstring

    def fields(self) -> dict[str, list[str]]:
        """For the log line: the lists that are not empty."""
        every = {
            "created": self.created,
            "replaced": self.replaced,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "undeclared": self.undeclared,
        }
        return {k: v for k, v in every.items() if v}


def _stored_spec(stored: Mapping[str, Any]) -> ScheduleSpec:
    """A stored schedule (as ``GET /schedules`` answers it) as a spec, to compare."""
    return ScheduleSpec(
        name=stored["name"],
        cron=stored["cron"],
        kind=stored["kind"],
        timezone=stored["timezone"],
        payload=stored["payload"],
        queue=stored["queue"],
        priority=stored["priority"],
        max_attempts=stored["max_attempts"],
        catch_up=CatchUp(stored["catch_up"]),
        enabled=stored["enabled"],
    )


async def sync_schedules(
    client: Client,
    declared: Iterable[ScheduleSpec],
    kinds: Iterable[str],
    *,
    prune: bool = False,
) -> SyncReport:
    """Bring the coordinator's schedules in line with the declared ones (see the module
    docstring); ``kinds`` are the registry's, whose undeclared schedules are reported (or,
    with ``prune``, deleted)."""
    report = SyncReport()
    stored = {s["name"]: s for s in await client.schedules()}
    wanted = {spec.name: spec for spec in declared}
    for name, spec in wanted.items():
        have = stored.get(name)
        if have is not None and _stored_spec(have) == spec:
            report.unchanged.append(name)
            continue
        await client.put_schedule(
            name,
            cron=spec.cron,
            kind=spec.kind,
            timezone=spec.timezone,
            payload=spec.payload,
            queue=spec.queue,
            priority=spec.priority,
            max_attempts=spec.max_attempts,
            catch_up=spec.catch_up.value,
            enabled=spec.enabled,
        )
        (report.created if have is None else report.replaced).append(name)
    owned = set(kinds)
    for name, have in sorted(stored.items()):
        if name in wanted or have["kind"] not in owned:
            continue
        if not prune:
            report.undeclared.append(name)
            continue
        with contextlib.suppress(ScheduleNotFound):  # another worker deleted it first
            await client.delete_schedule(name)
        report.deleted.append(name)
    return report
