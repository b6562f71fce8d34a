"""Deleting jobs, paused queues and worker presence on SQLite: the statements the
SqliteStore runs on its writer thread (each function inside that thread's transaction)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any, Final

import orjson

from leasehold.coordinator.store.contract import (
    DeleteFilter,
    JobFilter,
    QueuesSnapshot,
    WorkerBeat,
    WorkerSeen,
)

_WORKER_COLUMNS: Final = (
    "worker_id, host, pid, version, kinds, queues, concurrency, started_at, last_seen"
)


def _dt(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def list_where(query: JobFilter) -> tuple[str, list[object]]:
    """The WHERE clause of a job list (ordered by id, either way, after the cursor)."""
    where: list[str] = []
    params: list[object] = []
    if query.after_id is not None or not query.descending:
        where.append("id < ?" if query.descending else "id > ?")
        params.append(query.after_id or 0)
    for column, value in (
        ("status", query.status),
        ("kind", query.kind),
        ("queue", query.queue),
        ("idempotency_key", query.idempotency_key),
    ):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if query.error_contains is not None:
        where.append("instr(last_error, ?) > 0")
        params.append(query.error_contains)
    return " AND ".join(where) or "1", params


def jobs_delete(conn: sqlite3.Connection, query: DeleteFilter, now: float) -> int:
    """Delete one batch; the job_counts trigger takes each job out of the counts."""
    marks = ",".join("?" * len(query.statuses))
    where: list[str] = [f"status IN ({marks})"]
    params: list[object] = list(query.statuses)
    if query.ids is not None:
        where.append("id IN (SELECT value FROM json_each(?))")
        params.append(orjson.dumps(query.ids).decode())
    for column, value in (("kind", query.kind), ("queue", query.queue)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    cutoffs = []
    if query.finished_before is not None:
        cutoffs.append(query.finished_before.timestamp())
    if query.finished_age_seconds is not None:
        cutoffs.append(now - query.finished_age_seconds)
    order, index = "id", ""
    if cutoffs:
        where.append("finished_at IS NOT NULL AND finished_at < ?")
        params.append(min(cutoffs))
        order = "finished_at"
        if len(query.statuses) == 1 and query.ids is None:
            # Without ANALYZE statistics SQLite would walk jobs_status, every finished job.
            index = "INDEXED BY jobs_finished"
    rows = conn.execute(
        f"SELECT id FROM jobs {index} WHERE {' AND '.join(where)} ORDER BY {order} LIMIT ?",
        [*params, query.limit],
    ).fetchall()
    if not rows:
        return 0
    ids = orjson.dumps([job_id for (job_id,) in rows]).decode()
    conn.execute("DELETE FROM attempts WHERE job_id IN (SELECT value FROM json_each(?))", (ids,))
    return conn.execute(
        "DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(?))", (ids,)
    ).rowcount


def paused_queues(conn: sqlite3.Connection) -> set[str]:
    return {queue for (queue,) in conn.execute("SELECT queue FROM queue_pauses")}


def queue_pause(conn: sqlite3.Connection, queue: str, now: float) -> bool:
    cursor = conn.execute(
        "INSERT INTO queue_pauses (queue, paused_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
        (queue, now),
    )
    return cursor.rowcount == 1


def queue_resume(conn: sqlite3.Connection, queue: str) -> bool:
    return conn.execute("DELETE FROM queue_pauses WHERE queue = ?", (queue,)).rowcount == 1


def queued_queues(conn: sqlite3.Connection) -> list[str]:
    """The queues that have queued jobs, one index probe each (a loose index scan)."""
    rows = conn.execute(
        "WITH RECURSIVE q(queue) AS ("
        " SELECT (SELECT queue FROM jobs INDEXED BY jobs_pick_queue WHERE status = 'queued'"
        " ORDER BY queue LIMIT 1)"
        " UNION ALL SELECT (SELECT queue FROM jobs INDEXED BY jobs_pick_queue"
        " WHERE status = 'queued' AND queue > q.queue ORDER BY queue LIMIT 1)"
        " FROM q WHERE q.queue IS NOT NULL"
        ") SELECT queue FROM q WHERE queue IS NOT NULL"
    )
    return [queue for (queue,) in rows]


def _oldest_in(conn: sqlite3.Connection, queue: str) -> float | None:
    """run_after of the queue's oldest queued job: the oldest head of each of its priority
    levels (a loose index scan, as ``sqlite_lease.oldest_available``)."""
    (oldest,) = conn.execute(
        "WITH RECURSIVE p(priority) AS ("
        " SELECT (SELECT priority FROM jobs INDEXED BY jobs_pick_queue WHERE status = 'queued'"
        " AND queue = :q ORDER BY priority DESC LIMIT 1)"
        " UNION ALL SELECT (SELECT priority FROM jobs INDEXED BY jobs_pick_queue"
        " WHERE status = 'queued' AND queue = :q AND priority < p.priority"
        " ORDER BY priority DESC LIMIT 1) FROM p WHERE p.priority IS NOT NULL"
        ") SELECT min((SELECT run_after FROM jobs INDEXED BY jobs_pick_queue"
        " WHERE status = 'queued' AND queue = :q AND priority = p.priority"
        " ORDER BY priority DESC, run_after LIMIT 1)) FROM p WHERE p.priority IS NOT NULL",
        {"q": queue},
    ).fetchone()
    return oldest if oldest is None else float(oldest)


def queues_snapshot(conn: sqlite3.Connection, now: float, window: int) -> QueuesSnapshot:
    paused = {q: _dt(t) for q, t in conn.execute("SELECT queue, paused_at FROM queue_pauses")}
    oldest = {}
    for queue in queued_queues(conn):
        head = _oldest_in(conn, queue)
        if head is not None and head <= now:
            oldest[queue] = _dt(head)
    completed = dict(
        conn.execute(
            "SELECT queue, count(*) FROM jobs INDEXED BY jobs_finished"
            " WHERE status = 'completed' AND finished_at IS NOT NULL AND finished_at > ?"
            " GROUP BY queue",
            (now - window,),
        ).fetchall()
    )
    return QueuesSnapshot(_dt(now), paused, oldest, completed)


def _names(value: tuple[str, ...] | None) -> str | None:
    return orjson.dumps(list(value)).decode() if value is not None else None


def _worker(row: tuple[Any, ...]) -> WorkerSeen:
    kinds, queues = row[4], row[5]
    beat = WorkerBeat(
        worker_id=row[0],
        host=row[1],
        pid=row[2],
        version=row[3],
        kinds=tuple(orjson.loads(kinds)) if kinds is not None else None,
        queues=tuple(orjson.loads(queues)) if queues is not None else None,
        concurrency=row[6],
        started_at=_dt(row[7]),
    )
    return WorkerSeen(beat, _dt(row[8]))


def worker_beat(conn: sqlite3.Connection, beat: WorkerBeat, now: float) -> WorkerSeen:
    row = conn.execute(
        f"INSERT INTO workers ({_WORKER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (worker_id) DO UPDATE SET host = excluded.host, pid = excluded.pid,"
        " version = excluded.version, kinds = excluded.kinds, queues = excluded.queues,"
        " concurrency = excluded.concurrency, started_at = excluded.started_at,"
        f" last_seen = excluded.last_seen RETURNING {_WORKER_COLUMNS}",
        (
            beat.worker_id,
            beat.host,
            beat.pid,
            beat.version,
            _names(beat.kinds),
            _names(beat.queues),
            beat.concurrency,
            beat.started_at.timestamp(),
            now,
        ),
    ).fetchone()
    return _worker(row)


def workers_list(conn: sqlite3.Connection, since: float) -> list[WorkerSeen]:
    rows = conn.execute(
        f"SELECT {_WORKER_COLUMNS} FROM workers WHERE last_seen >= ?"
        " ORDER BY last_seen DESC, worker_id",
        (since,),
    )
    return [_worker(r) for r in rows]


def workers_forget(conn: sqlite3.Connection, before: float) -> int:
    return conn.execute("DELETE FROM workers WHERE last_seen < ?", (before,)).rowcount
