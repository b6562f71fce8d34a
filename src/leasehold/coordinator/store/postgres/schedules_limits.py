"""Schedules and concurrency limits on PostgreSQL: statements run by the PostgresStore on
one of its connections, inside the transaction it holds. Times are the database's."""

from __future__ import annotations

from datetime import datetime
from typing import Final

import asyncpg
import orjson

from leasehold.coordinator.store.contract import FirstFire, KindLimit
from leasehold.errors import Unavailable
from leasehold.model import CatchUp, Firing, Schedule, ScheduleSpec

COLUMNS: Final = (
    "name, cron, timezone, kind, payload, queue, priority, max_attempts, catch_up, enabled,"
    " next_fire_at, last_fire_at, created_at, updated_at"
)
# Due schedules that no other coordinator is firing right now, locked for this one.
DUE: Final = (
    f"SELECT now() AS now, {COLUMNS} FROM schedules WHERE enabled AND next_fire_at <= now()"
    " ORDER BY next_fire_at LIMIT $1 FOR UPDATE SKIP LOCKED"
)


def schedule_of(row: asyncpg.Record) -> Schedule:
    spec = ScheduleSpec(
        name=row["name"],
        cron=row["cron"],
        timezone=row["timezone"],
        kind=row["kind"],
        payload=orjson.loads(row["payload"]),
        queue=row["queue"],
        priority=row["priority"],
        max_attempts=row["max_attempts"],
        catch_up=CatchUp(row["catch_up"]),
        enabled=row["enabled"],
    )
    return Schedule(
        spec=spec,
        next_fire_at=row["next_fire_at"],
        last_fire_at=row["last_fire_at"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


async def schedule_put(
    conn: asyncpg.Connection, spec: ScheduleSpec, first: FirstFire
) -> tuple[Schedule, bool]:
    now: datetime = await conn.fetchval("SELECT now()")
    row = await conn.fetchrow(
        f"INSERT INTO schedules ({COLUMNS})"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, NULL, now(), now())"
        " ON CONFLICT (name) DO UPDATE SET cron = excluded.cron, timezone = excluded.timezone,"
        " kind = excluded.kind, payload = excluded.payload, queue = excluded.queue,"
        " priority = excluded.priority, max_attempts = excluded.max_attempts,"
        " catch_up = excluded.catch_up, enabled = excluded.enabled,"
        " next_fire_at = excluded.next_fire_at, updated_at = excluded.updated_at"
        # xmax is 0 for a row this statement inserted, and set for one it updated.
        f" RETURNING {COLUMNS}, xmax = 0 AS created",
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
        first(spec, now),
    )
    return schedule_of(row), bool(row["created"])


async def schedule_get(conn: asyncpg.Connection, name: str) -> Schedule | None:
    row = await conn.fetchrow(f"SELECT {COLUMNS} FROM schedules WHERE name = $1", name)
    return schedule_of(row) if row is not None else None


async def schedule_list(conn: asyncpg.Connection) -> list[Schedule]:
    return [
        schedule_of(r) for r in await conn.fetch(f"SELECT {COLUMNS} FROM schedules ORDER BY name")
    ]


async def schedule_delete(conn: asyncpg.Connection, name: str) -> bool:
    status: str = await conn.execute("DELETE FROM schedules WHERE name = $1", name)
    return status == "DELETE 1"


async def schedule_advance(conn: asyncpg.Connection, schedule: Schedule, firing: Firing) -> None:
    """The compare-and-set that moves a schedule on: only from the fire time read. The row
    is locked too; the guard keeps the rule visible in the statement itself."""
    status: str = await conn.execute(
        "UPDATE schedules SET next_fire_at = $2, last_fire_at = coalesce($3, last_fire_at)"
        " WHERE name = $1 AND next_fire_at = $4",
        schedule.spec.name,
        firing.next_fire_at,
        max(firing.fire_times) if firing.fire_times else None,
        schedule.next_fire_at,
    )
    if status != "UPDATE 1":  # roll the whole firing back rather than enqueue twice
        raise Unavailable(f"schedule {schedule.spec.name!r} changed while it fired")


async def limit_put(conn: asyncpg.Connection, kind: str, max_running: int) -> KindLimit:
    await conn.execute(
        "INSERT INTO kind_limits (kind, max_running) VALUES ($1, $2)"
        " ON CONFLICT (kind) DO UPDATE SET max_running = excluded.max_running",
        kind,
        max_running,
    )
    return KindLimit(kind, max_running, await running(conn, kind))


async def limit_delete(conn: asyncpg.Connection, kind: str) -> bool:
    status: str = await conn.execute("DELETE FROM kind_limits WHERE kind = $1", kind)
    return status == "DELETE 1"


async def limit_list(conn: asyncpg.Connection) -> list[KindLimit]:
    rows = await conn.fetch(
        "SELECT l.kind, l.max_running, (SELECT coalesce(sum(value), 0)::bigint FROM counters"
        " WHERE name = 'jobs:running' AND counters.kind = l.kind) AS running"
        " FROM kind_limits AS l ORDER BY l.kind"
    )
    return [KindLimit(r["kind"], r["max_running"], r["running"]) for r in rows]


async def running(conn: asyncpg.Connection, kind: str) -> int:
    n: int = await conn.fetchval(
        "SELECT coalesce(sum(value), 0) FROM counters WHERE name = 'jobs:running' AND kind = $1",
        kind,
    )
    return int(n)
