"""The statements of one SQLite transaction (``driver.Tx``), on the writer's connection or a
reader's. Times are kept as seconds since the epoch; "now" is the coordinator's clock, read
once when the transaction starts: this process is the database's only writer."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import AsyncGenerator, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import orjson

from leasehold import job_fields
from leasehold.coordinator.store import sql
from leasehold.coordinator.store.contract import (
    LEASE_REQUEST_WINDOW_SECONDS,
    AttemptPage,
    DeadFilter,
    DeleteFilter,
    Expired,
    JobFilter,
    LeaseRequest,
    NewJob,
    WorkerBeat,
    WorkerSeen,
)
from leasehold.coordinator.store.driver import Narrow
from leasehold.coordinator.store.migrations import Migration
from leasehold.coordinator.store.sqlite import pick
from leasehold.coordinator.store.tally import Tally
from leasehold.job_fields import Stored
from leasehold.model import (
    Attempt,
    AttemptOutcome,
    CatchUp,
    Firing,
    Job,
    JobStatus,
    Outcome,
    Schedule,
    ScheduleSpec,
)

_COLUMNS: Final = job_fields.columns()
# A job list's columns without payload and result (JSON null and SQL NULL in their place).
_SUMMARY_COLUMNS: Final = job_fields.columns(lambda f: "NULL" if f.nullable else "'null'")
_CHUNK: Final = 500  # ids or rows per statement, well under SQLite's variable limit
# The write of a decision, guarded by the token and status it was decided on.
_GUARDED_WRITE: Final = (
    f"UPDATE jobs SET {job_fields.set_list(lambda _: '?')}"
    " WHERE id = ? AND lease_token = ? AND status = ?"
)
# The index that serves a job list, by (status given, kind given): without ANALYZE
# statistics SQLite may walk the primary key and filter every row.
_LIST_INDEXES: Final = {
    (False, False): "",
    (True, False): "INDEXED BY jobs_status",
    (False, True): "INDEXED BY jobs_kind",
    (True, True): "INDEXED BY jobs_kind_status",
}
_INSERT: Final = (
    "INSERT INTO jobs (kind, payload, status, max_attempts, run_after, created_at,"
    " idempotency_key, request_hash, priority, queue, headers, timeout_seconds) VALUES "
)
_ROW: Final = "(?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_SCHEDULE_COLUMNS: Final = (
    "name, cron, timezone, kind, payload, queue, priority, max_attempts, catch_up, enabled,"
    " next_fire_at, last_fire_at, created_at, updated_at"
)
_WORKER_COLUMNS: Final = (
    "worker_id, host, pid, version, kinds, queues, concurrency, started_at, last_seen"
)

# SQLite keeps a flag as 0 or 1 and a time as seconds since the epoch; every other field
# converts as job_fields.DECODE and ENCODE say.
_NAMESPACE: Final = {"_fromtimestamp": datetime.fromtimestamp, "_UTC": UTC}
_job: Final = job_fields.row_decoder(
    {**job_fields.DECODE, Stored.FLAG: "bool({v})", Stored.TIME: "_fromtimestamp({v}, _UTC)"},
    _NAMESPACE,
    by_name=False,
    name="_job",
)
_write_params: Final = job_fields.written_encoder(
    {**job_fields.ENCODE, Stored.TIME: "{v}.timestamp()"},  # sqlite3 stores a bool as 0 or 1
    _NAMESPACE,
    then=("before.id", "before.lease_token", "before.status"),
    name="_write_params",
)
_PAYLOAD, _RESULT = job_fields.POSITION["payload"], job_fields.POSITION["result"]

DIALECT: Final = sql.Dialect(
    mark=lambda _: "?",
    contains="instr({col}, {p}) > 0",
    any_of="{col} IN (SELECT value FROM json_each({p}))",
    as_list=lambda values: orjson.dumps(list(values)).decode(),
    older_than=None,
    as_time=lambda value: value.timestamp(),
)


def _dt(value: float | None) -> datetime | None:
    return datetime.fromtimestamp(value, UTC) if value is not None else None


def _time(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _names(value: tuple[str, ...] | None) -> str | None:
    return _json(list(value)) if value is not None else None


class TokenCounter:
    """Hands out lease tokens, one per row, to the SQL function ``next_lease_token()``
    within one lease statement; loaded from and saved to ``lease_tokens`` around it."""

    def __init__(self) -> None:
        self.last = 0

    def next(self) -> int:
        self.last += 1
        return self.last


class SqliteTx:
    """One transaction's statements on SQLite (``driver.Tx``)."""

    concurrent = False  # the writer thread is the database's only writer

    def __init__(self, conn: sqlite3.Connection, now: datetime, tokens: TokenCounter) -> None:
        self.conn = conn
        self.tally = Tally()
        self._now = now
        self._stamp = now.timestamp()
        self._tokens = tokens

    def wake(self) -> None:
        """Nothing to do: no other process writes to this database."""

    async def now(self) -> datetime:
        return self._now

    def flush(self) -> None:
        """Write what the transaction counted (before its commit)."""
        tally = self.tally.take()
        if tally.events:
            self.conn.executemany(
                "INSERT INTO counters (name, kind, value) VALUES (?, ?, ?)"
                " ON CONFLICT (name, kind) DO UPDATE SET value = value + excluded.value",
                [(name, kind, n) for (name, kind), n in tally.events.items()],
            )
            self.conn.executemany(
                "INSERT INTO rollups (second, name, kind, count, total) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (second, name, kind) DO UPDATE"
                " SET count = count + excluded.count, total = total + excluded.total",
                [
                    (int(self._stamp), name, kind, n, tally.sums[name, kind])
                    for (name, kind), n in tally.events.items()
                ],
            )
        counts = [(q, k, str(s), n) for (q, k, s), n in tally.counts.items() if n]
        if counts:
            self.conn.executemany(
                "INSERT INTO job_counts (queue, kind, status, n) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (queue, kind, status) DO UPDATE SET n = n + excluded.n",
                counts,
            )

    def _rows(self, template: str, values: Sequence[Any]) -> list[Any]:
        """``template`` (with ``{}`` for a list of marks) over ``values``, a chunk at a time."""
        rows: list[Any] = []
        for start in range(0, len(values), _CHUNK):
            chunk = list(values[start : start + _CHUNK])
            rows += self.conn.execute(template.format(",".join("?" * len(chunk))), chunk)
        return rows

    # -- jobs -------------------------------------------------------------------------------

    async def jobs_insert(self, jobs: Sequence[NewJob]) -> list[Job | None]:
        """Multi-row INSERTs; a taken key is left to ON CONFLICT. SQLite numbers the rows it
        makes in VALUES order, so the ids of the keyless ones follow their order."""
        made: list[Job | None] = []
        for start in range(0, len(jobs), _CHUNK):
            made += self._insert_chunk(jobs[start : start + _CHUNK])
        return made

    def _insert_chunk(self, chunk: Sequence[NewJob]) -> list[Job | None]:
        params: list[Any] = []
        payloads = [_json(new.payload) for new in chunk]
        for new, payload in zip(chunk, payloads, strict=True):
            run_after = new.run_after.timestamp() if new.run_after is not None else self._stamp
            params += (
                new.kind,
                payload,
                new.max_attempts,
                run_after,
                self._stamp,
                new.idempotency_key,
                new.request_hash,
                new.priority,
                new.queue,
                _json(new.headers) if new.headers is not None else None,
                new.timeout_seconds,
            )
        rows = self.conn.execute(
            _INSERT
            + ",".join([_ROW] * len(chunk))
            + " ON CONFLICT (idempotency_key) DO NOTHING RETURNING id, idempotency_key",
            params,
        ).fetchall()
        by_key = {key: job_id for job_id, key in rows if key is not None}
        keyless = iter(sorted(job_id for job_id, key in rows if key is None))
        made: list[Job | None] = []
        for new, payload in zip(chunk, payloads, strict=True):
            key = new.idempotency_key
            job_id = next(keyless) if key is None else by_key.pop(key, None)
            made.append(self._made(job_id, new, payload) if job_id is not None else None)
        return made

    def _made(self, job_id: int, new: NewJob, payload: str) -> Job:
        """The job as a read would return it, built from what was written, and counted."""
        job = Job(
            id=job_id,
            kind=new.kind,
            payload=orjson.loads(payload),
            status=JobStatus.QUEUED,
            attempts=0,
            max_attempts=new.max_attempts,
            run_after=_time(new.run_after.timestamp() if new.run_after else self._stamp),
            created_at=_time(self._stamp),
            idempotency_key=new.idempotency_key,
            request_hash=new.request_hash,
            priority=new.priority,
            queue=new.queue,
            headers=new.headers,
            timeout_seconds=new.timeout_seconds,
        )
        self.tally.made(job)
        return job

    async def jobs_by_key(self, keys: Sequence[str]) -> dict[str, Job]:
        rows = self._rows(f"SELECT {_COLUMNS} FROM jobs WHERE idempotency_key IN ({{}})", keys)
        return {job.idempotency_key: job for job in map(_job, rows) if job.idempotency_key}

    async def jobs_read(self, ids: Sequence[int]) -> dict[int, Job]:
        rows = self._rows(f"SELECT {_COLUMNS} FROM jobs WHERE id IN ({{}})", ids)
        return {row[0]: _job(row) for row in rows}

    async def jobs_lock(self, ids: Sequence[int]) -> tuple[datetime | None, dict[int, Job]]:
        jobs = await self.jobs_read(ids)
        return (self._now if jobs else None), jobs

    async def jobs_write(self, writes: Sequence[tuple[Job, Outcome]], now: datetime) -> int:
        changed = [_write_params(before, o.job) for before, o in writes if o.changed]
        written = self.conn.executemany(_GUARDED_WRITE, changed).rowcount if changed else 0
        closed = [
            (
                o.attempt,
                now.timestamp(),
                None if o.attempt is AttemptOutcome.COMPLETED else o.job.last_error,
                before.id,
                before.lease_token,
            )
            for before, o in writes
            if o.attempt is not None
        ]
        if closed:
            self.conn.executemany(
                "UPDATE attempts SET outcome = ?, finished_at = ?, error = ?"
                " WHERE job_id = ? AND token = ?",
                closed,
            )
        return int(written)

    async def jobs_expired(self, limit: int) -> list[Expired]:
        rows = self.conn.execute(
            "SELECT id, lease_token FROM jobs INDEXED BY jobs_running_expiry"
            " WHERE status = 'running' AND lease_expires_at <= ? ORDER BY lease_expires_at LIMIT ?",
            (self._stamp, limit),
        )
        return [Expired(job_id, token) for job_id, token in rows]

    async def jobs_page(self, query: JobFilter) -> AsyncGenerator[tuple[int, Job], None]:
        where = sql.job_list(query, DIALECT)
        index = _LIST_INDEXES[query.status is not None, query.kind is not None]
        columns = _SUMMARY_COLUMNS if query.summary else _COLUMNS
        order = "DESC" if query.descending else ""
        statement = (
            f"SELECT {columns} FROM jobs {index} WHERE {where.sql()} ORDER BY id {order} LIMIT ?"
        )
        # Row by row, so a page over its budget is never read whole into memory.
        for row in self.conn.execute(statement, [*where.params, query.limit]):
            yield len(row[_PAYLOAD]) + len(row[_RESULT] or ""), _job(row)

    async def jobs_dead(self, query: DeadFilter) -> list[int]:
        where = sql.dead(query, DIALECT)
        statement = f"SELECT id FROM jobs WHERE {where.sql()} ORDER BY id LIMIT ?"
        return [i for (i,) in self.conn.execute(statement, [*where.params, query.limit])]

    async def jobs_delete(self, query: DeleteFilter) -> list[tuple[str, str, JobStatus]]:
        if query.finished_age_seconds is not None:  # the age by our clock, as a time
            cutoff = _time(self._stamp - query.finished_age_seconds)
            if query.finished_before is not None:
                cutoff = min(cutoff, query.finished_before)
            query = dataclasses.replace(query, finished_before=cutoff, finished_age_seconds=None)
        where, order = sql.deletable(query, DIALECT)
        # Without ANALYZE statistics SQLite would walk jobs_status, every finished job.
        by_age = order == "finished_at" and len(query.statuses) == 1 and query.ids is None
        index = "INDEXED BY jobs_finished" if by_age else ""
        ids = [
            i
            for (i,) in self.conn.execute(
                f"SELECT id FROM jobs {index} WHERE {where.sql()} ORDER BY {order} LIMIT ?",
                [*where.params, query.limit],
            )
        ]
        if not ids:
            return []
        listed = _json(ids)
        self.conn.execute(
            "DELETE FROM attempts WHERE job_id IN (SELECT value FROM json_each(?))", (listed,)
        )
        rows = self.conn.execute(
            "DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(?))"
            " RETURNING queue, kind, status",
            (listed,),
        )
        return [(queue, kind, JobStatus(status)) for queue, kind, status in rows]

    async def job_next_run_after(self, after: datetime) -> datetime | None:
        return _dt(pick.queued_head(self.conn, None, after.timestamp()))

    async def attempts_list(self, job_id: int, page: AttemptPage | None) -> list[Attempt]:
        page = page or AttemptPage(limit=-1)  # a negative LIMIT is no limit
        rows = self.conn.execute(
            "SELECT job_id, token, worker_id, leased_at, finished_at, outcome, error"
            " FROM attempts WHERE job_id = ? AND token > ? ORDER BY token LIMIT ?",
            (job_id, page.after_token or 0, page.limit),
        )
        return [
            Attempt(j, t, w, _time(leased), _dt(finished), AttemptOutcome(outcome), error)
            for j, t, w, leased, finished, outcome, error in rows
        ]

    # -- leasing ----------------------------------------------------------------------------

    async def lease_grant(self, request: LeaseRequest, narrow: Narrow | None) -> list[Job] | None:
        n = request.max_jobs
        if narrow is not None:
            caps = dict(zip(narrow.kinds, narrow.caps, strict=True))
            found = pick.heads(self.conn, self._stamp, n, narrow.kinds, narrow.queues, caps)
        elif self._limited(request):
            return None
        else:
            found = pick.heads(self.conn, self._stamp, n, request.kinds, request.queues)
        if not found:
            return []
        # Tokens are coordinator-wide: every lease's is above every token issued before.
        (self._tokens.last,) = self.conn.execute("SELECT last FROM lease_tokens").fetchone()
        # The ids as one parameter, so the statement text never changes: SQLite then
        # reuses its compiled form (compiling it anew costs more than running it).
        rows = self.conn.execute(
            "UPDATE jobs SET status = 'running', lease_token = next_lease_token(),"
            " attempts = attempts + 1, lease_owner = :owner, lease_expires_at = :expires,"
            " lease_seconds = :seconds, leased_at = :now, report = NULL"
            " WHERE id IN (SELECT value FROM json_each(:ids)) AND status = 'queued'"
            f" RETURNING {_COLUMNS}",
            {
                "ids": _json([head[2] for head in found]),
                "now": self._stamp,
                "owner": request.worker_id,
                "expires": self._stamp + request.lease_seconds,
                "seconds": request.lease_seconds,
            },
        ).fetchall()
        self.conn.execute("UPDATE lease_tokens SET last = ?", (self._tokens.last,))
        jobs = [_job(row) for row in rows]
        self.conn.executemany(
            "INSERT INTO attempts (job_id, token, worker_id, leased_at, outcome)"
            " VALUES (?, ?, ?, ?, 'running')",
            [(j.id, j.lease_token, request.worker_id, self._stamp) for j in jobs],
        )
        for job in jobs:
            self.tally.leased(job, self._stamp - job.run_after.timestamp())
        return jobs

    def _limited(self, request: LeaseRequest) -> bool:
        """Whether a paused queue or a kind's limit could apply to what the request takes."""
        paused = self.paused_queues_now()
        if paused and (request.queues is None or not paused.isdisjoint(request.queues)):
            return True
        limited = {k for (k,) in self.conn.execute("SELECT kind FROM kind_limits")}
        return bool(limited) and (request.kinds is None or not limited.isdisjoint(request.kinds))

    async def lease_replay(self, request: LeaseRequest) -> list[tuple[int, int]] | None:
        self.conn.execute(
            "DELETE FROM lease_requests WHERE created_at < ?",
            (self._stamp - LEASE_REQUEST_WINDOW_SECONDS,),
        )
        got = self.conn.execute(
            "SELECT leases FROM lease_requests WHERE worker_id = ? AND request_id = ?",
            (request.worker_id, request.request_id),
        ).fetchone()
        return [(job_id, token) for job_id, token in orjson.loads(got[0])] if got else None

    async def lease_record(self, request: LeaseRequest, jobs: Sequence[Job]) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO lease_requests (worker_id, request_id, leases, created_at)"
            " VALUES (?, ?, ?, ?)",
            (
                request.worker_id,
                request.request_id,
                _json([[j.id, j.lease_token] for j in jobs]),
                self._stamp,
            ),
        )

    def paused_queues_now(self) -> set[str]:
        return {queue for (queue,) in self.conn.execute("SELECT queue FROM queue_pauses")}

    async def paused_queues(self) -> set[str]:
        return self.paused_queues_now()

    async def queued_queues(self) -> list[str]:
        return pick.queued_queues(self.conn)

    async def queued_kinds(self, limit: int) -> list[str]:
        return pick.queued_kinds(self.conn, limit)

    async def head_kinds(self, n: int, queues: Sequence[str] | None) -> dict[str, int]:
        return pick.kinds_of(pick.heads(self.conn, self._stamp, n, None, queues))

    async def kind_limits(self, kinds: Sequence[str], *, lock: bool = False) -> dict[str, int]:
        # One writer: nothing to lock. A lease of a limited kind and the count of its
        # running jobs cannot race.
        rows = self.conn.execute(
            "SELECT kind, max_running FROM kind_limits"
            " WHERE kind IN (SELECT value FROM json_each(?))",
            (_json(list(kinds)),),
        )
        return dict(rows.fetchall())

    async def running(self, kinds: Sequence[str]) -> dict[str, int]:
        """From the kept counts: exact, and no index on running jobs to keep up."""
        if not kinds:
            return {}
        rows = self.conn.execute(
            "SELECT kind, sum(n) FROM job_counts WHERE status = 'running'"
            " AND kind IN (SELECT value FROM json_each(?)) GROUP BY kind",
            (_json(list(kinds)),),
        )
        return {kind: int(n) for kind, n in rows}

    # -- counts and figures -----------------------------------------------------------------

    async def job_counts(self) -> list[tuple[str, str, JobStatus, int]]:
        rows = self.conn.execute("SELECT queue, kind, status, n FROM job_counts WHERE n <> 0")
        return [(queue, kind, JobStatus(status), n) for queue, kind, status, n in rows]

    async def status_counts(self) -> list[tuple[JobStatus, int]]:
        rows = self.conn.execute("SELECT status, count(*) FROM jobs GROUP BY status")
        return [(JobStatus(status), n) for status, n in rows]

    async def names_known(self) -> tuple[set[str], set[str]]:
        kinds = {k for (k,) in self.conn.execute("SELECT DISTINCT kind FROM job_counts")}
        queues = {q for (q,) in self.conn.execute("SELECT DISTINCT queue FROM job_counts")}
        return kinds, queues

    async def counter_totals(self) -> dict[tuple[str, str], int]:
        rows = self.conn.execute("SELECT name, kind, value FROM counters")
        return {(name, kind): value for name, kind, value in rows}

    async def window_sums(self, seconds: int) -> dict[tuple[str, str], tuple[int, float]]:
        rows = self.conn.execute(
            "SELECT name, kind, sum(count), sum(total) FROM rollups"
            " WHERE second > ? GROUP BY name, kind",
            (int(self._stamp) - seconds,),
        )
        return {(name, kind): (n, total) for name, kind, n, total in rows}

    async def rollups_prune(self, keep_seconds: int) -> None:
        self.conn.execute(
            "DELETE FROM rollups WHERE second < ?", (int(self._stamp) - keep_seconds,)
        )

    async def oldest_queued(self, queue: str | None) -> datetime | None:
        return _dt(pick.queued_head(self.conn, queue, None))

    async def completed_by_queue(self, seconds: float) -> dict[str, int]:
        rows = self.conn.execute(
            "SELECT queue, count(*) FROM jobs INDEXED BY jobs_finished"
            " WHERE status = 'completed' AND finished_at IS NOT NULL AND finished_at > ?"
            " GROUP BY queue",
            (self._stamp - seconds,),
        )
        return dict(rows.fetchall())

    # -- schedules and limits ---------------------------------------------------------------

    async def schedule_upsert(
        self, spec: ScheduleSpec, next_fire_at: datetime, now: datetime
    ) -> tuple[Schedule, bool]:
        existed = self.conn.execute("SELECT 1 FROM schedules WHERE name = ?", (spec.name,))
        created = existed.fetchone() is None
        row = self.conn.execute(
            f"INSERT INTO schedules ({_SCHEDULE_COLUMNS})"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)"
            " ON CONFLICT (name) DO UPDATE SET cron = excluded.cron,"
            " timezone = excluded.timezone, kind = excluded.kind, payload = excluded.payload,"
            " queue = excluded.queue, priority = excluded.priority,"
            " max_attempts = excluded.max_attempts, catch_up = excluded.catch_up,"
            " enabled = excluded.enabled, next_fire_at = excluded.next_fire_at,"
            f" updated_at = excluded.updated_at RETURNING {_SCHEDULE_COLUMNS}",
            (
                spec.name,
                spec.cron,
                spec.timezone,
                spec.kind,
                _json(spec.payload),
                spec.queue,
                spec.priority,
                spec.max_attempts,
                spec.catch_up,
                spec.enabled,
                next_fire_at.timestamp(),
                now.timestamp(),
                now.timestamp(),
            ),
        ).fetchone()
        return _schedule(row), created

    async def schedule_get(self, name: str) -> Schedule | None:
        row = self.conn.execute(
            f"SELECT {_SCHEDULE_COLUMNS} FROM schedules WHERE name = ?", (name,)
        ).fetchone()
        return _schedule(row) if row is not None else None

    async def schedule_list(self) -> list[Schedule]:
        rows = self.conn.execute(f"SELECT {_SCHEDULE_COLUMNS} FROM schedules ORDER BY name")
        return [_schedule(r) for r in rows]

    async def schedule_delete(self, name: str) -> bool:
        return self.conn.execute("DELETE FROM schedules WHERE name = ?", (name,)).rowcount == 1

    async def schedules_due(self, limit: int) -> tuple[datetime, list[Schedule]]:
        rows = self.conn.execute(
            f"SELECT {_SCHEDULE_COLUMNS} FROM schedules INDEXED BY schedules_due"
            " WHERE enabled = 1 AND next_fire_at <= ? ORDER BY next_fire_at LIMIT ?",
            (self._stamp, limit),
        )
        return self._now, [_schedule(r) for r in rows]

    async def schedule_advance(self, schedule: Schedule, firing: Firing) -> bool:
        last = max(firing.fire_times).timestamp() if firing.fire_times else None
        moved = self.conn.execute(
            "UPDATE schedules SET next_fire_at = ?, last_fire_at = coalesce(?, last_fire_at)"
            " WHERE name = ? AND next_fire_at = ?",
            (
                firing.next_fire_at.timestamp(),
                last,
                schedule.spec.name,
                schedule.next_fire_at.timestamp(),
            ),
        )
        return moved.rowcount == 1

    async def limit_upsert(self, kind: str, max_running: int) -> None:
        self.conn.execute(
            "INSERT INTO kind_limits (kind, max_running) VALUES (?, ?)"
            " ON CONFLICT (kind) DO UPDATE SET max_running = excluded.max_running",
            (kind, max_running),
        )

    async def limit_delete(self, kind: str) -> bool:
        return self.conn.execute("DELETE FROM kind_limits WHERE kind = ?", (kind,)).rowcount == 1

    async def limits_all(self) -> list[tuple[str, int]]:
        rows = self.conn.execute("SELECT kind, max_running FROM kind_limits ORDER BY kind")
        return rows.fetchall()

    # -- queues and workers -----------------------------------------------------------------

    async def queue_pause(self, queue: str) -> bool:
        cursor = self.conn.execute(
            "INSERT INTO queue_pauses (queue, paused_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (queue, self._stamp),
        )
        return cursor.rowcount == 1

    async def queue_resume(self, queue: str) -> bool:
        return self.conn.execute("DELETE FROM queue_pauses WHERE queue = ?", (queue,)).rowcount == 1

    async def queue_pauses(self) -> dict[str, datetime]:
        rows = self.conn.execute("SELECT queue, paused_at FROM queue_pauses")
        return {queue: _time(t) for queue, t in rows}

    async def worker_beat(self, beat: WorkerBeat) -> WorkerSeen:
        row = self.conn.execute(
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
                self._stamp,
            ),
        ).fetchone()
        return _worker(row)

    async def workers_list(self, seen_within_seconds: float) -> list[WorkerSeen]:
        rows = self.conn.execute(
            f"SELECT {_WORKER_COLUMNS} FROM workers WHERE last_seen >= ?"
            " ORDER BY last_seen DESC, worker_id",
            (self._stamp - seen_within_seconds,),
        )
        return [_worker(r) for r in rows]

    async def workers_forget(self, unseen_for_seconds: float) -> int:
        before = self._stamp - unseen_for_seconds
        return self.conn.execute("DELETE FROM workers WHERE last_seen < ?", (before,)).rowcount

    # -- schema -----------------------------------------------------------------------------

    async def migrations_applied(self) -> set[int]:
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations"
            " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
        )
        return {v for (v,) in self.conn.execute("SELECT version FROM schema_migrations")}

    async def migration_apply(self, migration: Migration) -> None:
        for statement in _statements(migration.sql):
            self.conn.execute(statement)
        self.conn.execute(
            "INSERT INTO schema_migrations VALUES (?, ?, strftime('%s', 'now'))",
            (migration.version, migration.name),
        )


def _statements(script: str) -> list[str]:
    """Split a script into statements the way SQLite's own parser would (triggers hold
    semicolons of their own)."""
    statements, pending = [], ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                statements.append(pending.strip())
            pending = ""
    if pending.strip():
        statements.append(pending.strip())
    return statements


def _schedule(row: tuple[Any, ...]) -> Schedule:
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
    return Schedule(spec, _time(row[10]), _time(row[12]), _time(row[13]), _dt(row[11]))


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
        started_at=_time(row[7]),
    )
    return WorkerSeen(beat, _time(row[8]))
