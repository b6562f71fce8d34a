"""Deleting jobs, paused queues and worker presence on PostgreSQL: statements run by the
PostgresStore on one of its connections, inside the transaction it holds. Times are the
database's."""

from __future__ import annotations

from typing import Final

import asyncpg
import orjson

from leasehold.coordinator.store.contract import (
    DeleteFilter,
    JobFilter,
    QueuesSnapshot,
    WorkerBeat,
    WorkerSeen,
)
from leasehold.coordinator.store.postgres.lease import QUEUED_QUEUES

_WORKER_COLUMNS: Final = (
    "worker_id, host, pid, version, kinds, queues, concurrency, started_at, last_seen"
)


def list_where(query: JobFilter) -> tuple[str, list[object]]:
    """The WHERE clause of a job list (ordered by id, either way, after the cursor)."""
    where: list[str] = []
    params: list[object] = []
    if query.after_id is not None or not query.descending:
        params.append(query.after_id or 0)
        where.append(f"id {'<' if query.descending else '>'} ${len(params)}")
    for column, value in (
        ("status", query.status),
        ("kind", query.kind),
        ("queue", query.queue),
        ("idempotency_key", query.idempotency_key),
    ):
        if value is not None:
            params.append(value)
            where.append(f"{column} = ${len(params)}")
    if query.error_contains is not None:
        params.append(query.error_contains)
        where.append(f"strpos(last_error, ${len(params)}) > 0")
    return " AND ".join(where) or "true", params


async def jobs_delete(conn: asyncpg.Connection, query: DeleteFilter) -> list[asyncpg.Record]:
    """Delete one batch; the rows deleted (status, kind, queue), for the kept counts.

    Rows another transaction holds (a lease, a report, another coordinator's pruner) are
    skipped, so pruners on several coordinators share the work and never wait on a lease.
    """
    params: list[object] = [list(query.statuses)]
    where = ["status = ANY($1::text[])"]
    if query.ids is not None:
        params.append(list(query.ids))
        where.append(f"id = ANY(${len(params)}::bigint[])")
    for column, value in (("kind", query.kind), ("queue", query.queue)):
        if value is not None:
            params.append(value)
            where.append(f"{column} = ${len(params)}")
    order = "id"
    if query.finished_before is not None:
        params.append(query.finished_before)
        where.append(f"finished_at < ${len(params)}")
        order = "finished_at"
    if query.finished_age_seconds is not None:
        params.append(query.finished_age_seconds)
        where.append(f"finished_at < now() - make_interval(secs => ${len(params)})")
        order = "finished_at"
    params.append(query.limit)
    rows: list[asyncpg.Record] = await conn.fetch(
        f"WITH doomed AS (SELECT id FROM jobs WHERE {' AND '.join(where)}"
        f" ORDER BY {order} LIMIT ${len(params)} FOR UPDATE SKIP LOCKED),"
        " history AS (DELETE FROM attempts WHERE job_id IN (SELECT id FROM doomed))"
        " DELETE FROM jobs WHERE id IN (SELECT id FROM doomed) RETURNING status, kind, queue",
        *params,
    )
    return rows


async def queue_pause(conn: asyncpg.Connection, queue: str) -> bool:
    status: str = await conn.execute(
        "INSERT INTO queue_pauses (queue, paused_at) VALUES ($1, now()) ON CONFLICT DO NOTHING",
        queue,
    )
    return status.endswith(" 1")


async def queue_resume(conn: asyncpg.Connection, queue: str) -> bool:
    status: str = await conn.execute("DELETE FROM queue_pauses WHERE queue = $1", queue)
    return status.endswith(" 1")


# The oldest queued job of one queue: the oldest head of each of its priority levels.
_OLDEST_IN: Final = (
    "WITH RECURSIVE p(priority) AS ("
    " (SELECT priority FROM jobs WHERE status = 'queued' AND queue = $1"
    " ORDER BY priority DESC LIMIT 1)"
    " UNION ALL SELECT (SELECT priority FROM jobs WHERE status = 'queued' AND queue = $1"
    " AND priority < p.priority ORDER BY priority DESC LIMIT 1)"
    " FROM p WHERE p.priority IS NOT NULL"
    ") SELECT min((SELECT run_after FROM jobs WHERE status = 'queued' AND queue = $1"
    " AND priority = p.priority ORDER BY priority DESC, run_after LIMIT 1))"
    " FROM p WHERE p.priority IS NOT NULL"
)


async def queues_snapshot(conn: asyncpg.Connection, window: int) -> QueuesSnapshot:
    now = await conn.fetchval("SELECT now()")
    paused = {r["queue"]: r["paused_at"] for r in await conn.fetch("SELECT * FROM queue_pauses")}
    oldest = {}
    for r in await conn.fetch(QUEUED_QUEUES):
        head = await conn.fetchval(_OLDEST_IN, r["queue"])
        if head is not None and head <= now:
            oldest[r["queue"]] = head
    rows = await conn.fetch(
        "SELECT queue, count(*) AS n FROM jobs WHERE status = 'completed'"
        " AND finished_at > now() - make_interval(secs => $1) GROUP BY queue",
        window,
    )
    return QueuesSnapshot(now, paused, oldest, {r["queue"]: r["n"] for r in rows})


def _names(value: tuple[str, ...] | None) -> str | None:
    return orjson.dumps(list(value)).decode() if value is not None else None


def _worker(row: asyncpg.Record) -> WorkerSeen:
    kinds, queues = row["kinds"], row["queues"]
    beat = WorkerBeat(
        worker_id=row["worker_id"],
        host=row["host"],
        pid=row["pid"],
        version=row["version"],
        kinds=tuple(orjson.loads(kinds)) if kinds is not None else None,
        queues=tuple(orjson.loads(queues)) if queues is not None else None,
        concurrency=row["concurrency"],
        started_at=row["started_at"],
    )
    return WorkerSeen(beat, row["last_seen"])


async def worker_beat(conn: asyncpg.Connection, beat: WorkerBeat) -> WorkerSeen:
    row = await conn.fetchrow(
        f"INSERT INTO workers ({_WORKER_COLUMNS})"
        " VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7, $8, now())"
        " ON CONFLICT (worker_id) DO UPDATE SET host = excluded.host, pid = excluded.pid,"
        " version = excluded.version, kinds = excluded.kinds, queues = excluded.queues,"
        " concurrency = excluded.concurrency, started_at = excluded.started_at,"
        f" last_seen = excluded.last_seen RETURNING {_WORKER_COLUMNS}",
        beat.worker_id,
        beat.host,
        beat.pid,
        beat.version,
        _names(beat.kinds),
        _names(beat.queues),
        beat.concurrency,
        beat.started_at,
    )
    return _worker(row)


async def workers_list(conn: asyncpg.Connection, within: float) -> list[WorkerSeen]:
    rows = await conn.fetch(
        f"SELECT {_WORKER_COLUMNS} FROM workers"
        " WHERE last_seen >= now() - make_interval(secs => $1)"
        " ORDER BY last_seen DESC, worker_id",
        within,
    )
    return [_worker(r) for r in rows]


async def workers_forget(conn: asyncpg.Connection, unseen_for: float) -> int:
    status: str = await conn.execute(
        "DELETE FROM workers WHERE last_seen < now() - make_interval(secs => $1)", unseen_for
    )
    return int(status.split()[-1])
