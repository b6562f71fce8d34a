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
    DeleteFilter,
    JobFilter,
    LeaseRequest,
    NewJob,
)
from leasehold.coordinator.store.driver import Head, Narrow
from leasehold.coordinator.store.portable import (
    COLUMNS,
    GROUPS_WOKEN,
    INSERT_COLUMNS,
    KEY_CONFLICT,
    SCHEDULE_COLUMNS,
    SCHEDULE_UPSERT,
    PortableTx,
    insert_params,
    json_text,
    schedule_params,
)
from leasehold.coordinator.store.sqlite import pick
from leasehold.coordinator.store.sqlite.schema import SqliteSchema
from leasehold.coordinator.store.tally import Tally
from leasehold.job_fields import Stored
from leasehold.model import AttemptOutcome, Job, JobStatus, Outcome, Schedule, ScheduleSpec

# A job list's columns without payload and result (JSON null and SQL NULL in their place).
_SUMMARY_COLUMNS: Final = job_fields.columns(lambda f: "NULL" if f.nullable else "'null'")
_CHUNK: Final = 500  # rows per INSERT, well under SQLite's variable limit
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
_INSERT: Final = f"INSERT INTO jobs ({INSERT_COLUMNS}) VALUES "
_ROW: Final = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?)"

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
    contains="instr({col}, {p}) > 0",
    any_of="{col} IN (SELECT value FROM json_each({p}))",
    as_list=lambda values: orjson.dumps(list(values)).decode(),
    older_than=None,
    as_time=lambda value: value.timestamp(),
    indexed_by="INDEXED BY {index}",
)


def _time(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


class TokenCounter:
    """Hands out lease tokens, one per row, to the SQL function ``next_lease_token()``
    within one lease statement; loaded from and saved to ``lease_tokens`` around it."""

    def __init__(self) -> None:
        self.last = 0

    def next(self) -> int:
        self.last += 1
        return self.last


class SqliteTx(SqliteSchema, PortableTx):
    """One transaction's statements on SQLite (``driver.Tx``)."""

    concurrent = False  # the writer thread is the database's only writer
    dialect = DIALECT

    def __init__(self, conn: sqlite3.Connection, now: datetime, tokens: TokenCounter) -> None:
        self.conn = conn
        self.tally = Tally()
        self._now = now
        self._stamp = now.timestamp()
        self._tokens = tokens

    def wake(self) -> None:
        """Nothing to do: no other process writes to this database."""

    def finished(self, job_ids: Sequence[int]) -> None:
        """Nothing to do: no other process writes to this database."""

    async def now(self) -> datetime:
        return self._now

    async def clock(self) -> datetime:
        return self._now  # the only writer: it never waited for another

    def flush(self) -> None:
        """Write what the transaction counted (before its commit)."""
        tally = self.tally.take()
        if not tally:
            return
        if tally.running:
            self.conn.executemany(
                "INSERT INTO group_counts (kind, group_key, running) VALUES (?, ?, ?)"
                " ON CONFLICT (kind, group_key) DO UPDATE SET running = running + excluded.running",
                tally.group_rows(),
            )
        if tally.woken:
            self.conn.executemany(GROUPS_WOKEN, sorted(tally.woken))
        rows = tally.rows()
        self.conn.executemany(
            "INSERT INTO counters (name, kind, queue, value) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (name, kind, queue) DO UPDATE SET value = value + excluded.value",
            [row[:4] for row in rows],
        )
        self.conn.executemany(
            "INSERT INTO rollups (second, name, kind, count, total) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (second, name, kind) DO UPDATE"
            " SET count = count + excluded.count, total = total + excluded.total",
            [(int(self._stamp), n, k, c, t) for n, k, q, c, t in rows if not q],
        )

    async def _all(self, statement: str, *params: Any) -> list[Any]:
        return self.conn.execute(statement, params).fetchall()

    async def _one(self, statement: str, *params: Any) -> Any:
        return self.conn.execute(statement, params).fetchone()

    async def _changed(self, statement: str, *params: Any) -> int:
        return self.conn.execute(statement, params).rowcount

    async def _many(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(statement, rows)

    _skip_locked = ""  # the only writer: nothing to skip

    def _job(self, row: Any) -> Job:
        return _job(row)

    def _time(self, value: Any) -> datetime:
        return _time(value)

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
        payloads = [json_text(new.payload) for new in chunk]
        for new, payload in zip(chunk, payloads, strict=True):
            run_after = new.run_after.timestamp() if new.run_after is not None else self._stamp
            start_by = new.start_by.timestamp() if new.start_by is not None else None
            params += (*insert_params(new, payload, run_after, start_by), self._stamp)
        rows = self.conn.execute(
            _INSERT
            + ",".join([_ROW] * len(chunk))
            + f" {KEY_CONFLICT} DO NOTHING RETURNING id, kind, idempotency_key",
            params,
        ).fetchall()
        by_key = {(kind, key): job_id for job_id, kind, key in rows if key is not None}
        keyless = iter(sorted(job_id for job_id, _, key in rows if key is None))
        made: list[Job | None] = []
        for new, payload in zip(chunk, payloads, strict=True):
            key = new.idempotency_key
            job_id = next(keyless) if key is None else by_key.pop((new.kind, key), None)
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
            group_key=new.group_key,
            weight=new.weight,
            start_by=_time(new.start_by.timestamp()) if new.start_by is not None else None,
        )
        self.tally.made(job.queue, job.kind, group_key=job.group_key)
        return job

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

    async def jobs_page(self, query: JobFilter) -> AsyncGenerator[tuple[int, Job], None]:
        where = sql.job_list(query, DIALECT)
        index = _LIST_INDEXES[query.status is not None, query.kind is not None]
        columns = _SUMMARY_COLUMNS if query.summary else COLUMNS
        order = "DESC" if query.descending else ""
        statement = (
            f"SELECT {columns} FROM jobs {index} WHERE {where.sql()} ORDER BY id {order} LIMIT ?"
        )
        # Row by row, so a page over its budget is never read whole into memory.
        for row in self.conn.execute(statement, [*where.params, query.limit]):
            yield len(row[_PAYLOAD]) + len(row[_RESULT] or ""), _job(row)

    async def jobs_delete(self, query: DeleteFilter) -> list[tuple[int, str, str, JobStatus, int]]:
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
        listed = json_text(ids)
        self.conn.execute(
            "DELETE FROM attempts WHERE job_id IN (SELECT value FROM json_each(?))", (listed,)
        )
        self.conn.execute(
            "DELETE FROM job_deps WHERE job_id IN (SELECT value FROM json_each(?))", (listed,)
        )
        rows = self.conn.execute(
            "DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(?))"
            " RETURNING id, queue, kind, status, dependents",
            (listed,),
        )
        return [(i, queue, kind, JobStatus(status), n) for i, queue, kind, status, n in rows]

    async def job_next_run_after(self, after: datetime) -> datetime | None:
        return self._maybe_time(pick.queued_head(self.conn, None, after.timestamp()))

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
        return await self.lease_take(request, [head.id for head in found]) if found else []

    async def lease_heads(
        self, kinds: Sequence[str], caps: Sequence[int], queues: Sequence[str] | None, n: int
    ) -> list[Head]:
        limits = dict(zip(kinds, caps, strict=True))
        return pick.heads(self.conn, self._stamp, n, kinds, queues, limits)

    async def group_heads(
        self, kind: str, group_key: str | None, queues: Sequence[str] | None, n: int
    ) -> list[Head]:
        return pick.group_heads(self.conn, self._stamp, kind, group_key, queues, n)

    async def group_next_due(self, kind: str, group_key: str | None) -> datetime | None:
        return self._maybe_time(pick.group_next_due(self.conn, kind, group_key))

    async def lease_take(self, request: LeaseRequest, ids: Sequence[int]) -> list[Job]:
        # Tokens are coordinator-wide: every lease's is above every token issued before.
        (self._tokens.last,) = self.conn.execute("SELECT last FROM lease_tokens").fetchone()
        # The ids as one parameter, so the statement text never changes: SQLite then
        # reuses its compiled form (compiling it anew costs more than running it).
        rows = self.conn.execute(
            "UPDATE jobs SET status = 'running', lease_token = next_lease_token(),"
            " attempts = attempts + 1, lease_owner = :owner, lease_expires_at = :expires,"
            " lease_seconds = :seconds, leased_at = :now, report = NULL"
            " WHERE id IN (SELECT value FROM json_each(:ids)) AND status = 'queued'"
            f" RETURNING {COLUMNS}",
            {
                "ids": json_text(list(ids)),
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
        paused = {queue for (queue,) in self.conn.execute("SELECT queue FROM queue_pauses")}
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
                json_text([[j.id, j.lease_token] for j in jobs]),
                self._stamp,
            ),
        )

    async def queued_queues(self) -> list[str]:
        return pick.queued_queues(self.conn)

    async def queued_kinds(self, limit: int) -> list[str]:
        return pick.queued_kinds(self.conn, limit)

    async def head_kinds(self, n: int, queues: Sequence[str] | None) -> dict[str, int]:
        return pick.kinds_of(pick.heads(self.conn, self._stamp, n, None, queues))

    # -- counts and figures -----------------------------------------------------------------

    async def oldest_queued(self, queue: str | None) -> datetime | None:
        return self._maybe_time(pick.queued_head(self.conn, queue, None))

    # -- schedules and limits ---------------------------------------------------------------

    async def schedule_upsert(
        self, spec: ScheduleSpec, next_fire_at: datetime, now: datetime
    ) -> tuple[Schedule, bool]:
        created = await self._one("SELECT 1 FROM schedules WHERE name = ?", spec.name) is None
        row = await self._one(
            f"INSERT INTO schedules ({SCHEDULE_COLUMNS})"
            f" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?) {SCHEDULE_UPSERT}"
            f" RETURNING {SCHEDULE_COLUMNS}",
            *schedule_params(spec),
            next_fire_at.timestamp(),
            now.timestamp(),
            now.timestamp(),
        )
        return self._schedule(row), created

    async def schedules_due(self, limit: int) -> tuple[datetime | None, list[Schedule]]:
        rows = await self._all(
            f"SELECT {SCHEDULE_COLUMNS} FROM schedules INDEXED BY schedules_due"
            " WHERE enabled = 1 AND next_fire_at <= ? ORDER BY next_fire_at LIMIT ?",
            self._stamp,
            limit,
        )
        return self._now, [self._schedule(r) for r in rows]
