"""Schedules and concurrency limits on SQLite: the statements the SqliteStore runs on its
writer thread (each function is called inside that thread's transaction)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any, Final

import orjson

from leasehold.coordinator.store.contract import FirstFire, KindLimit
from leasehold.coordinator.store.sqlite.lease import running
from leasehold.errors import Unavailable
from leasehold.model import CatchUp, Firing, Schedule, ScheduleSpec

SCHEDULE_COLUMNS: Final = (
    "name, cron, timezone, kind, payload, queue, priority, max_attempts, catch_up, enabled,"
    " next_fire_at, last_fire_at, created_at, updated_at"
)


def _dt(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def schedule_of(row: tuple[Any, ...]) -> Schedule:
    spec = ScheduleSpec(
        name=row[0],
        cron=row[1],
        timezone=row[2],
        kind=row[3],
        payload=orjson.loads(row[4]),
        queue=row[5],
        priority=row[6],
        max_attempts=row[7],
        catch_up=CatchUp(row[8]),
        enabled=bool(row[9]),
    )
    return Schedule(
        spec=spec,
        next_fire_at=_dt(row[10]),
        last_fire_at=_dt(row[11]) if row[11] is not None else None,
        created_at=_dt(row[12]),
        updated_at=_dt(row[13]),
    )


def schedule_put(
    conn: sqlite3.Connection, spec: ScheduleSpec, first: FirstFire, now: datetime
) -> tuple[Schedule, bool]:
    existed = conn.execute("SELECT 1 FROM schedules WHERE name = ?", (spec.name,)).fetchone()
    row = conn.execute(
        f"INSERT INTO schedules ({SCHEDULE_COLUMNS})"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)"
        " ON CONFLICT (name) DO UPDATE SET cron = excluded.cron, timezone = excluded.timezone,"
        " kind = excluded.kind, payload = excluded.payload, queue = excluded.queue,"
        " priority = excluded.priority, max_attempts = excluded.max_attempts,"
        " catch_up = excluded.catch_up, enabled = excluded.enabled,"
        " next_fire_at = excluded.next_fire_at, updated_at = excluded.updated_at"
        f" RETURNING {SCHEDULE_COLUMNS}",
        (
            spec.name,
            spec.cron,
            spec.timezone,
            spec.kind,
            orjson.dumps(spec.payload).decode(),
            spec.queue,
            spec.priority,
            spec.max_attempts,
            spec.catch_up,
            spec.enabled,
            first(spec, now).timestamp(),
            now.timestamp(),
            now.timestamp(),
        ),
    ).fetchone()
    return schedule_of(row), existed is None


def schedule_get(conn: sqlite3.Connection, name: str) -> Schedule | None:
    row = conn.execute(
        f"SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE name = ?", (name,)
    ).fetchone()
    return schedule_of(row) if row is not None else None


def schedule_list(conn: sqlite3.Connection) -> list[Schedule]:
    rows = conn.execute(f"SELECT {SCHEDULE_COLUMNS} FROM schedules ORDER BY name")
    return [schedule_of(r) for r in rows]


def schedule_delete(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("DELETE FROM schedules WHERE name = ?", (name,)).rowcount == 1


def schedules_due(conn: sqlite3.Connection, now: datetime, limit: int) -> list[Schedule]:
    rows = conn.execute(
        f"SELECT {SCHEDULE_COLUMNS} FROM schedules INDEXED BY schedules_due"
        " WHERE enabled = 1 AND next_fire_at <= ? ORDER BY next_fire_at LIMIT ?",
        (now.timestamp(), limit),
    )
    return [schedule_of(r) for r in rows]


def schedule_advance(conn: sqlite3.Connection, schedule: Schedule, firing: Firing) -> None:
    """The compare-and-set that moves a schedule on: only from the fire time read."""
    last = max(firing.fire_times).timestamp() if firing.fire_times else None
    moved = conn.execute(
        "UPDATE schedules SET next_fire_at = ?, last_fire_at = coalesce(?, last_fire_at)"
        " WHERE name = ? AND next_fire_at = ?",
        (
            firing.next_fire_at.timestamp(),
            last,
            schedule.spec.name,
            schedule.next_fire_at.timestamp(),
        ),
    ).rowcount
    if moved != 1:  # impossible with one writer; refuse rather than enqueue twice
        raise Unavailable(f"schedule {schedule.spec.name!r} changed while it fired")


def limit_put(conn: sqlite3.Connection, kind: str, max_running: int) -> KindLimit:
    conn.execute(
        "INSERT INTO kind_limits (kind, max_running) VALUES (?, ?)"
        " ON CONFLICT (kind) DO UPDATE SET max_running = excluded.max_running",
        (kind, max_running),
    )
    return KindLimit(kind, max_running, running(conn, kind))


def limit_delete(conn: sqlite3.Connection, kind: str) -> bool:
    return conn.execute("DELETE FROM kind_limits WHERE kind = ?", (kind,)).rowcount == 1


def limit_list(conn: sqlite3.Connection) -> list[KindLimit]:
    rows = conn.execute("SELECT kind, max_running FROM kind_limits ORDER BY kind").fetchall()
    return [KindLimit(kind, n, running(conn, kind)) for kind, n in rows]
