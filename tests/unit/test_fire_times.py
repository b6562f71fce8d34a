"""Fire times of schedules, with a fixed clock and no I/O (DST cases included)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from leasehold.coordinator.rules.fire_times import (
    CatchUp,
    Schedule,
    ScheduleSpec,
    check_cron,
    first_fire,
    idempotency_key,
    next_fire,
    plan_fires,
    zone,
)
from leasehold.errors import InvalidRequest

GRACE = timedelta(seconds=10)
NY = "America/New_York"


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc,arg-type]


def schedule(
    cron: str, next_fire_at: datetime, *, tz: str = "UTC", catch_up: CatchUp = CatchUp.SKIP
) -> Schedule:
    spec = ScheduleSpec(name="s", cron=cron, kind="k", timezone=tz, catch_up=catch_up)
    return Schedule(spec, next_fire_at, created_at=next_fire_at, updated_at=next_fire_at)


def fires(cron: str, tz: str, after: datetime, n: int) -> list[datetime]:
    out = []
    for _ in range(n):
        after = next_fire(cron, tz, after)
        out.append(after)
    return out


def test_a_new_schedule_starts_at_its_first_fire_time_after_now() -> None:
    spec = ScheduleSpec(name="s", cron="*/15 * * * *", kind="k")
    assert first_fire(spec, utc(2030, 1, 1, 10, 7, 30)) == utc(2030, 1, 1, 10, 15)
    assert first_fire(spec, utc(2030, 1, 1, 10, 15)) == utc(2030, 1, 1, 10, 30)  # strictly after


def test_six_fields_mean_seconds_first() -> None:
    assert fires("*/20 * * * * *", "UTC", utc(2030, 1, 1), 3) == [
        utc(2030, 1, 1, 0, 0, 20),
        utc(2030, 1, 1, 0, 0, 40),
        utc(2030, 1, 1, 0, 1, 0),
    ]


def test_fire_times_follow_the_time_zone() -> None:
    # 09:00 in New York is 14:00 UTC in winter and 13:00 UTC in summer.
    assert next_fire("0 9 * * *", NY, utc(2030, 1, 10)) == utc(2030, 1, 10, 14)
    assert next_fire("0 9 * * *", NY, utc(2030, 7, 10)) == utc(2030, 7, 10, 13)


def test_spring_forward_a_time_in_the_skipped_hour_runs_right_after_the_gap() -> None:
    # 2024-03-10: New York clocks jump from 02:00 to 03:00 (07:00 UTC); 02:30 never exists.
    assert fires("30 2 * * *", NY, utc(2024, 3, 9, 12), 3) == [
        utc(2024, 3, 10, 7),  # 03:00 EDT, once
        utc(2024, 3, 11, 6, 30),  # 02:30 EDT
        utc(2024, 3, 12, 6, 30),
    ]


def test_fall_back_a_time_in_the_repeated_hour_runs_once() -> None:
    # 2024-11-03: New York clocks go from 02:00 EDT back to 01:00 EST; 01:30 happens twice.
    assert fires("30 1 * * *", NY, utc(2024, 11, 2, 12), 2) == [
        utc(2024, 11, 3, 5, 30),  # 01:30 EDT, the first of the two
        utc(2024, 11, 4, 6, 30),  # 01:30 EST the next day
    ]


def test_fall_back_an_hourly_schedule_fires_every_real_hour() -> None:
    assert fires("0 * * * *", NY, utc(2024, 11, 3, 4, 30), 3) == [
        utc(2024, 11, 3, 5),  # 01:00 EDT
        utc(2024, 11, 3, 6),  # 01:00 EST
        utc(2024, 11, 3, 7),  # 02:00 EST
    ]


def test_a_due_fire_time_gets_one_job_and_the_schedule_moves_past_now() -> None:
    now = utc(2030, 1, 1, 10, 0, 0, 300_000)
    firing = plan_fires(schedule("* * * * *", utc(2030, 1, 1, 10)), now, GRACE)
    assert firing.fire_times == (utc(2030, 1, 1, 10),)
    assert firing.next_fire_at == utc(2030, 1, 1, 10, 1)
    assert not firing.missed


def test_a_schedule_not_yet_due_is_left_alone() -> None:
    due = utc(2030, 1, 1, 10)
    firing = plan_fires(schedule("* * * * *", due), due - timedelta(seconds=1), GRACE)
    assert (firing.fire_times, firing.next_fire_at) == ((), due)


def test_every_fire_time_within_the_grace_gets_a_job() -> None:
    # A scheduler pass that came 3 seconds late runs all three per-second fire times.
    firing = plan_fires(
        schedule("* * * * * *", utc(2030, 1, 1, 10)), utc(2030, 1, 1, 10, 0, 2), GRACE
    )
    assert firing.fire_times == tuple(utc(2030, 1, 1, 10, 0, s) for s in range(3))
    assert firing.next_fire_at == utc(2030, 1, 1, 10, 0, 3)


def test_catch_up_skip_drops_fire_times_missed_while_no_coordinator_ran() -> None:
    # Hourly; down from 10:30 to 14:20: 11:00, 12:00, 13:00 and 14:00 were missed.
    now = utc(2030, 1, 1, 14, 20)
    firing = plan_fires(schedule("0 * * * *", utc(2030, 1, 1, 11)), now, GRACE)
    assert firing.fire_times == ()
    assert firing.missed
    assert firing.next_fire_at == utc(2030, 1, 1, 15)


def test_catch_up_once_runs_the_latest_missed_fire_time_once() -> None:
    now = utc(2030, 1, 1, 14, 20)
    s = schedule("0 * * * *", utc(2030, 1, 1, 11), catch_up=CatchUp.ONCE)
    firing = plan_fires(s, now, GRACE)
    assert firing.fire_times == (utc(2030, 1, 1, 14),)
    assert firing.next_fire_at == utc(2030, 1, 1, 15)


def test_catch_up_once_with_an_on_time_fire_as_well() -> None:
    # Per second, down for a minute; back 2 s after a fire time: catch-up plus the recent ones.
    now = utc(2030, 1, 1, 10, 1, 2)
    s = schedule("*/5 * * * * *", utc(2030, 1, 1, 10), catch_up=CatchUp.ONCE)
    firing = plan_fires(s, now, GRACE)
    assert firing.fire_times == (
        utc(2030, 1, 1, 10, 0, 50),  # the latest missed (older than the grace)
        utc(2030, 1, 1, 10, 0, 55),
        utc(2030, 1, 1, 10, 1, 0),
    )
    skipped = plan_fires(schedule("*/5 * * * * *", utc(2030, 1, 1, 10)), now, GRACE)
    assert skipped.fire_times == (utc(2030, 1, 1, 10, 0, 55), utc(2030, 1, 1, 10, 1, 0))


def test_catch_up_across_a_dst_change_uses_real_instants() -> None:
    # Daily at 01:30 New York, down over the fall-back night: one catch-up run, for 05:30 UTC.
    s = schedule("30 1 * * *", utc(2024, 11, 3, 5, 30), tz=NY, catch_up=CatchUp.ONCE)
    firing = plan_fires(s, utc(2024, 11, 3, 12), GRACE)
    assert firing.fire_times == (utc(2024, 11, 3, 5, 30),)
    assert firing.next_fire_at == utc(2024, 11, 4, 6, 30)


def test_the_key_names_the_schedule_and_the_fire_time_in_utc() -> None:
    assert (
        idempotency_key("nightly", utc(2030, 1, 1, 2))
        == "schedule:nightly:2030-01-01T02:00:00+00:00"
    )


@pytest.mark.parametrize(
    "bad", ["", "* * *", "61 * * * *", "0 0 31 4 *", "* * * * * * *", "@hourly"]
)
def test_bad_cron_expressions_are_refused(bad: str) -> None:
    with pytest.raises(InvalidRequest):
        check_cron(bad)


@pytest.mark.parametrize("bad", ["Mars/Olympus", "", "../etc/passwd", "/etc/localtime", "UTC "])
def test_unknown_time_zones_are_refused(bad: str) -> None:
    with pytest.raises(InvalidRequest):
        zone(bad)
