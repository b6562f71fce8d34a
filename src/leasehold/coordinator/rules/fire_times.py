"""Periodic jobs: when a schedule fires, decided without I/O.

Cron expressions are parsed and iterated by cronsim, which follows Debian's cron, DST
quirks included: a fire time that falls in the hour skipped when clocks go forward runs
right after the gap, and one in the hour repeated when clocks go back runs once. Five
fields (minute resolution) or six, the first being seconds. Fire times are computed in the
schedule's IANA time zone and handed out in UTC.

``plan_fires`` is the scheduler's rule: given a schedule's next fire time and now, which
fire times get a job and where the next fire time moves. Fire times at most ``grace``
seconds old are on time and all get a job; older ones were missed (no coordinator ran the
scheduler then) and are skipped, or, with ``catch_up = once``, the latest of them gets one.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from leasehold.errors import InvalidRequest
from leasehold.model import RESERVED_KEY_PREFIX as RESERVED_KEY_PREFIX

# The schedule's data types live in the model (the stores use them); named here as well.
from leasehold.model import CatchUp as CatchUp
from leasehold.model import Firing as Firing
from leasehold.model import Schedule as Schedule
from leasehold.model import ScheduleSpec as ScheduleSpec
from leasehold.model import schedule_idempotency_key

idempotency_key = schedule_idempotency_key  # the name this module has always given it

_TICK = timedelta(microseconds=1)
# The grace is at most 600 s (settings), so a per-second schedule has at most 601 on-time
# fire times in one plan; this bound holds whatever grace the rule is handed.
_MAX_FIRES_PER_PLAN = 10_000


def zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name``; InvalidRequest if there is none by that name."""
    try:
        return _zone(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        # The name is not quoted: it is client input (DESIGN.md §10).
        raise InvalidRequest("unknown time zone (give an IANA name such as UTC)") from exc


@lru_cache(maxsize=256)
def _zone(name: str) -> ZoneInfo:
    if not name or name.startswith("/") or ".." in name:
        raise ValueError("not a zone name")
    return ZoneInfo(name)


def check_cron(expression: str) -> str:
    """The expression if cronsim accepts it; InvalidRequest naming the bad field if not."""
    try:
        CronSim(expression, datetime(2000, 1, 1, tzinfo=UTC))
    except (CronSimError, ValueError, IndexError) as exc:  # input: a 422, never a 500
        raise InvalidRequest(f"invalid cron expression: {exc}") from exc
    return expression


def next_fire(expression: str, timezone: str, after: datetime) -> datetime:
    """The first fire time strictly after ``after``, in UTC."""
    return _first(CronSim(expression, after.astimezone(zone(timezone))))


def latest_fire(expression: str, timezone: str, before: datetime) -> datetime:
    """The last fire time strictly before ``before``, in UTC."""
    return _first(CronSim(expression, before.astimezone(zone(timezone)), reverse=True))


def _first(fires: CronSim) -> datetime:
    # An iterator that ends would raise StopIteration, which cannot cross a future (the
    # SQLite store's thread) or a coroutine: say what it means instead.
    for fire in fires:
        return fire.astimezone(UTC)
    raise InvalidRequest("the cron expression has no fire time in that direction")


def first_fire(spec: ScheduleSpec, now: datetime) -> datetime:
    """Where a new (or replaced) schedule starts: its first fire time after now."""
    return next_fire(spec.cron, spec.timezone, now)


def plan_fires(schedule: Schedule, now: datetime, grace: timedelta) -> Firing:
    """Which due fire times get a job, and the next fire time after now (see the module
    docstring). A schedule that is not yet due gets no job and keeps its fire time."""
    spec = schedule.spec
    due = schedule.next_fire_at
    if due > now:
        return Firing((), due)
    horizon = now - grace
    on_time: list[datetime] = []
    start = max(due, horizon)
    fire = next_fire(spec.cron, spec.timezone, start - _TICK)
    while fire <= now and len(on_time) < _MAX_FIRES_PER_PLAN:
        on_time.append(fire)
        fire = next_fire(spec.cron, spec.timezone, fire)
    following = fire if fire > now else next_fire(spec.cron, spec.timezone, now)
    if due >= start:
        return Firing(tuple(on_time), following)
    # Fire times in [due, start) were missed: no scheduler ran while they were due.
    latest_missed = latest_fire(spec.cron, spec.timezone, start)
    if spec.catch_up is CatchUp.ONCE:
        return Firing((latest_missed, *on_time), following, missed=True)
    return Firing(tuple(on_time), following, missed=True)
