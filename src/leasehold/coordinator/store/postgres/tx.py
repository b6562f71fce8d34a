"""The statements of one PostgreSQL transaction (``driver.Tx``) on a pooled connection.

"Now" is the database's (``now()``, the start of the transaction). Rows a transaction
changes are locked as it reads them (``FOR UPDATE``, in id order), and what another
transaction holds is skipped where waiting would be wrong (``SKIP LOCKED``: a lease, a
scheduler, a pruner on another coordinator). What a transaction counts is folded into the
statement that writes its change where there is one (a round trip costs more than the
work), else written once before the commit, with the NOTIFY that wakes the other
coordinators' long polls.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any, Final

import asyncpg

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
    INSERT_COLUMNS,
    KEY_CONFLICT,
    SCHEDULE_COLUMNS,
    SCHEDULE_UPSERT,
    PortableTx,
    insert_params,
    json_text,
    schedule_params,
)
from leasehold.coordinator.store.postgres import lease_sql as q
from leasehold.coordinator.store.postgres.schema import PgSchema
from leasehold.coordinator.store.tally import Tally
from leasehold.job_fields import Stored
from leasehold.model import AttemptOutcome, Job, JobStatus, Outcome, Schedule, ScheduleSpec

CHANNEL: Final = "leasehold_jobs"
_NOTIFY: Final = f"NOTIFY {CHANNEL}"
FINISHED_CHANNEL: Final = "leasehold_finished"
"""Carries the ids of jobs that ended, comma-separated, for result waits elsewhere."""
_PAYLOAD_BYTES: Final = 7_900  # a notification's payload holds under 8,000 bytes
_NOTIFY_FINISHED: Final = f"SELECT pg_notify('{FINISHED_CHANNEL}', p) FROM unnest($1::text[]) AS p"
_COLUMNS: Final = q.COLUMNS
# A job list's columns without payload and result: JSON null where the column is NOT NULL
# (payload), else NULL (result).
_SUMMARY_COLUMNS: Final = job_fields.columns(
    lambda f: f"{'NULL' if f.nullable else chr(39) + 'null' + chr(39)}::jsonb AS {f.name}"
)
_ROLLUP_CONFLICT: Final = (
    "ON CONFLICT (second, name, kind, shard) DO UPDATE"
    " SET count = rollups.count + excluded.count, total = rollups.total + excluded.total"
)
# A tally as rows, sorted so that two transactions counting the same names lock them in
# one order. Job counts are named 'jobs:<status>' and kept by queue; they have no rollups.
_COUNTED: Final = (
    "INSERT INTO counters (name, kind, queue, shard, value)"
    f" SELECT e.name, e.kind, e.queue, {q.SHARD}, e.n"
    " FROM jsonb_to_recordset({events}::jsonb) AS e(name text, kind text, queue text, n bigint)"
    " ORDER BY e.name, e.kind, e.queue ON CONFLICT (name, kind, queue, shard)"
    " DO UPDATE SET value = counters.value + excluded.value"
)
_ROLLED: Final = (
    "INSERT INTO rollups (second, name, kind, shard, count, total)"
    f" SELECT {q.SECOND}, e.name, e.kind, {q.SHARD}, e.n, e.total"
    " FROM jsonb_to_recordset({events}::jsonb) AS e(name text, kind text, n bigint, total float8)"
    f" WHERE e.name NOT LIKE 'jobs:%' ORDER BY e.name, e.kind {_ROLLUP_CONFLICT}"
)
_COUNT: Final = f"WITH counted AS ({_COUNTED.format(events='$1')}) {_ROLLED.format(events='$1')}"
# An array of each kind of field, as _WRITE's parameters carry them.
_ARRAY_TYPE: Final = {
    Stored.INT: "bigint[]",
    Stored.FLOAT: "float8[]",
    Stored.TEXT: "text[]",
    Stored.FLAG: "boolean[]",
    Stored.TIME: "timestamptz[]",
    Stored.JSON: "jsonb[]",
    Stored.STATUS: "text[]",
    Stored.REPORT: "text[]",
}
_W: Final = len(job_fields.WRITTEN) + 4  # the first parameter after the jobs' fields
# Decisions' writes in one statement: $1-$3 the guards (id, token, status read), then the
# fields each decision changed (job_fields.WRITTEN) as arrays, the time, the attempts to
# close, the tally and whether to notify. Each row is found by its primary key, so the plan
# cannot turn into a scan however the tables grow; ``written`` counts what the guards let
# through.
_WRITE: Final = (
    "WITH v AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], "
    + ", ".join(f"${i + 4}::{_ARRAY_TYPE[f.stored]}" for i, f in enumerate(job_fields.WRITTEN))
    + ") AS v(id, token, was, "
    + ", ".join(f.name for f in job_fields.WRITTEN)
    + ")), written AS ("
    f" UPDATE jobs SET {job_fields.set_list(lambda i: f'v.{job_fields.WRITTEN[i].name}')}"
    " FROM v WHERE jobs.id = v.id AND jobs.lease_token = v.token AND jobs.status = v.was"
    " RETURNING jobs.id"
    "), closed AS ("
    f" UPDATE attempts SET outcome = a.outcome, finished_at = ${_W}, error = a.error"
    f" FROM unnest(${_W + 1}::bigint[], ${_W + 2}::bigint[], ${_W + 3}::text[],"
    f" ${_W + 4}::text[]) AS a(job_id, token, outcome, error)"
    " WHERE attempts.job_id = a.job_id AND attempts.token = a.token"
    f"), counted AS ({_COUNTED.format(events=f'${_W + 5}')})"
    f", rolled AS ({_ROLLED.format(events=f'${_W + 5}')})"
    f", notified AS (SELECT pg_notify('{CHANNEL}', '') WHERE ${_W + 6})"
    f", ended AS (SELECT pg_notify('{FINISHED_CHANNEL}', p) FROM unnest(${_W + 7}::text[]) AS p)"
    f", grouped AS ({{groups}})"
    " SELECT (SELECT count(*) FROM written) AS written, (SELECT count(*) FROM notified),"
    " (SELECT count(*) FROM ended)"
)
# Running jobs' changes by group ($1: [kind, group key, n] rows), and the groups a job
# was queued in ($2: [kind, group key] rows): store/flow.py reads them.
_GROUP_COUNTS: Final = (
    "INSERT INTO group_counts (kind, group_key, shard, running)"
    f" SELECT g.kind, g.group_key, {q.SHARD}, g.n FROM jsonb_to_recordset({{rows}}::jsonb)"
    " AS g(kind text, group_key text, n bigint) ORDER BY g.kind, g.group_key"
    " ON CONFLICT (kind, group_key, shard)"
    " DO UPDATE SET running = group_counts.running + excluded.running"
)
_GROUPS_WOKEN: Final = (
    "INSERT INTO flow_groups (kind, group_key)"
    " SELECT w.kind, w.group_key FROM jsonb_to_recordset({rows}::jsonb)"
    " AS w(kind text, group_key text) ORDER BY w.kind, w.group_key"
    " ON CONFLICT (kind, group_key) DO UPDATE SET active = true, blocked_until = 0"
)
_WRITE_PLAIN: Final = _WRITE.format(groups="SELECT 1")
_WRITE_GROUPS: Final = _WRITE.format(
    groups=f"{_GROUP_COUNTS.format(rows=f'${_W + 8}')}), woken AS ({_GROUPS_WOKEN.format(rows=f'${_W + 9}')}"
)
_INSERT: Final = (
    f"INSERT INTO jobs ({INSERT_COLUMNS}) VALUES ($1, $2, $3, coalesce($4, now()), $5, $6,"
    " $7, $8, $9, $10, $11, $12, $13, 'queued', now())"
    f" {KEY_CONFLICT} DO NOTHING RETURNING {_COLUMNS}"
)
# One job in one statement, so in one round trip: the row, its counts ($14, counted only
# if the row was made), its group's turn and the wake-up of other coordinators' long
# polls. Sent outside an explicit transaction (BEGIN, INSERT, counts, NOTIFY and COMMIT
# were five round trips).
_INSERT_ONE: Final = (
    f"WITH new AS ({_INSERT})"
    f", counted AS ({_COUNTED.format(events='(SELECT $14::jsonb FROM new)')})"
    f", rolled AS ({_ROLLED.format(events='(SELECT $14::jsonb FROM new)')})"
    # Its group is looked at again by the next lease (store/flow.py), as a batch's are.
    ", woken AS (INSERT INTO flow_groups (kind, group_key) SELECT kind, group_key FROM new"
    " WHERE group_key IS NOT NULL ON CONFLICT (kind, group_key)"
    " DO UPDATE SET active = true, blocked_until = 0)"
    f", notified AS (SELECT pg_notify('{CHANNEL}', '') FROM new)"
    # A CTE that modifies nothing runs only if read: the always-true test reads it.
    " SELECT new.* FROM new WHERE (SELECT count(*) FROM notified) >= 0"
)
_PAGE_PREFETCH: Final = 16  # rows of a job list fetched per round trip

# asyncpg gives and takes timestamptz as aware datetimes and jsonb as JSON text, so every
# field converts as job_fields.DECODE and ENCODE say.
_job: Final = job_fields.row_decoder(by_name=True, name="_job")
_written: Final = job_fields.written_encoder(name="_written")

DIALECT: Final = sql.Dialect(
    contains="strpos({col}, {p}) > 0",
    any_of="{col} = ANY({p})",
    as_list=list,
    older_than="{col} < now() - make_interval(secs => {p})",
)


@lru_cache(maxsize=256)
def _numbered(statement: str) -> str:
    """A statement written with ``?`` marks in PostgreSQL's ``$1, $2, ...``."""
    marks = iter(range(1, statement.count("?") + 1))
    return re.sub(r"\?", lambda _: f"${next(marks)}", statement)


def tally_json(tally: Tally) -> str:
    """A tally as ``_COUNTED``'s rows."""
    keys = ("name", "kind", "queue", "n", "total")
    return json_text([dict(zip(keys, row, strict=True)) for row in tally.rows()])


def _group_args(tally: Tally) -> tuple[str, str] | tuple[()]:
    """A tally's group rows as ``_GROUP_COUNTS``' and ``_GROUPS_WOKEN``'s parameters, or
    none when it counted no job with a group key."""
    if not tally.running and not tally.woken:
        return ()
    counts = [{"kind": k, "group_key": g, "n": n} for k, g, n in tally.group_rows()]
    woken = [{"kind": k, "group_key": g} for k, g in sorted(tally.woken)]
    return json_text(counts), json_text(woken)


def _insert_args(new: NewJob) -> tuple[object, ...]:
    """``_INSERT``'s parameters, $1 to $13."""
    return insert_params(new, json_text(new.payload), new.run_after, new.start_by)


class PgTx(PgSchema, PortableTx):
    """One transaction's statements on PostgreSQL (``driver.Tx``)."""

    concurrent = True  # other coordinators lease from the same database
    dialect = DIALECT

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn
        self.tally = Tally()
        self.woken = False
        self._ended: list[int] = []
        self._now: datetime | None = None

    def wake(self) -> None:
        self.woken = True

    def finished(self, job_ids: Sequence[int]) -> None:
        self._ended += job_ids

    def _ended_payloads(self) -> list[str]:
        """The ended jobs' ids as notification payloads, taken (none are sent twice)."""
        payloads: list[str] = []
        text = ""
        for job_id in self._ended:
            if len(text) + 21 > _PAYLOAD_BYTES:
                payloads.append(text)
                text = ""
            text = f"{text},{job_id}" if text else str(job_id)
        self._ended = []
        return [*payloads, text] if text else payloads

    async def _all(self, statement: str, *params: Any) -> list[Any]:
        rows: list[Any] = await self.conn.fetch(_numbered(statement), *params)
        return rows

    async def _one(self, statement: str, *params: Any) -> Any:
        return await self.conn.fetchrow(_numbered(statement), *params)

    async def _changed(self, statement: str, *params: Any) -> int:
        status: str = await self.conn.execute(_numbered(statement), *params)
        return int(status.rsplit(" ", 1)[-1])  # "UPDATE 1", "INSERT 0 1", ...

    async def _many(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        await self.conn.executemany(_numbered(statement), rows)

    # Other coordinators write at once: rows read to be changed are locked, parents read
    # for a new dependent are held against their end until it commits.
    _row_lock = " FOR UPDATE"
    _skip_locked = " FOR UPDATE SKIP LOCKED"

    async def _lock_key(self, key: str) -> None:
        await self.conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 1))", key)

    def _json_text(self, column: str) -> str:
        return f"{column}::text"

    def _job(self, row: Any) -> Job:
        return _job(row)

    def _time(self, value: Any) -> datetime:
        stored: datetime = value  # asyncpg gives timestamptz as an aware datetime
        return stored

    async def now(self) -> datetime:
        """The transaction's start (``now()``), read once."""
        if self._now is None:
            self._now = await self.conn.fetchval("SELECT now()")
        return self._now

    async def clock(self) -> datetime:
        """The statement's time: after the locks this transaction waited for."""
        stamp: datetime = await self.conn.fetchval("SELECT statement_timestamp()")
        return stamp

    async def flush(self) -> None:
        """Write what is still counted, and notify, before the commit."""
        if self.tally:
            tally = self.tally.take()
            await self.conn.execute(_COUNT, tally_json(tally))
            if groups := _group_args(tally):
                await self.conn.execute(
                    f"WITH counted AS ({_GROUP_COUNTS.format(rows='$1')})"
                    f" {_GROUPS_WOKEN.format(rows='$2')}",
                    *groups,
                )
        if self.woken:
            self.woken = False
            await self.conn.execute(_NOTIFY)
        if self._ended:
            await self.conn.execute(_NOTIFY_FINISHED, self._ended_payloads())

    # -- jobs -------------------------------------------------------------------------------

    async def jobs_insert(self, jobs: Sequence[NewJob]) -> list[Job | None]:
        """One job: ``_INSERT_ONE`` (its counts, its group woken and the NOTIFY in the same
        statement). More: a statement each (ON CONFLICT waits for a concurrent insert of the
        same key to commit or roll back, so two coordinators given the same key never both
        create a job), counted and announced once."""
        if len(jobs) == 1:
            (new,) = jobs
            counts = Tally()
            counts.made(new.queue, new.kind)  # counted only if the row is made
            row = await self.conn.fetchrow(_INSERT_ONE, *_insert_args(new), tally_json(counts))
            return [_job(row) if row is not None else None]
        made: list[Job | None] = []
        for new in jobs:
            row = await self.conn.fetchrow(_INSERT, *_insert_args(new))
            made.append(_job(row) if row is not None else None)
            if row is not None:
                self.tally.made(new.queue, new.kind, group_key=new.group_key)
                self.woken = True
        return made

    async def jobs_lock(self, ids: Sequence[int]) -> tuple[datetime | None, dict[int, Job]]:
        rows = await self.conn.fetch(
            f"SELECT now() AS now, {_COLUMNS} FROM jobs WHERE id = ANY($1::bigint[])"
            " ORDER BY id FOR UPDATE",
            list(ids),
        )
        return (rows[0]["now"] if rows else None), {row["id"]: _job(row) for row in rows}

    async def jobs_write(self, writes: Sequence[tuple[Job, Outcome]], now: datetime) -> int:
        changed = [(before, o.job) for before, o in writes if o.changed]
        closing = [(before, o) for before, o in writes if o.attempt is not None]
        rows = [_written(before, after) for before, after in changed]
        # The rows' fields as columns, one array parameter each.
        fields = [list(c) for c in zip(*rows, strict=True)] or [[] for _ in job_fields.WRITTEN]
        notify, self.woken = self.woken, False
        tally = self.tally.take()
        groups = _group_args(tally)
        row = await self.conn.fetchrow(
            _WRITE_GROUPS if groups else _WRITE_PLAIN,
            [before.id for before, _ in changed],
            [before.lease_token for before, _ in changed],
            [before.status for before, _ in changed],
            *fields,
            now,
            [before.id for before, _ in closing],
            [before.lease_token for before, _ in closing],
            [o.attempt for _, o in closing],
            [
                None if o.attempt is AttemptOutcome.COMPLETED else o.job.last_error
                for _, o in closing
            ],
            tally_json(tally),
            notify,
            self._ended_payloads(),
            *groups,
        )
        written: int = row["written"]
        return written

    async def jobs_page(self, query: JobFilter) -> AsyncGenerator[tuple[int, Job], None]:
        where = sql.job_list(query, DIALECT)
        columns = _SUMMARY_COLUMNS if query.summary else _COLUMNS
        size = "0" if query.summary else "octet_length(payload::text)"
        size += "" if query.summary else " + coalesce(octet_length(result::text), 0)"
        statement = (
            f"SELECT {columns}, {size} AS size FROM jobs WHERE {where.sql()}"
            f" ORDER BY id {'DESC' if query.descending else ''} LIMIT ?"
        )
        # A cursor, a few rows a round trip: a page over its budget never reaches memory.
        async with self.conn.transaction():
            cursor = self.conn.cursor(
                _numbered(statement), *where.params, query.limit, prefetch=_PAGE_PREFETCH
            )
            async for row in cursor:
                yield row["size"], _job(row)

    async def jobs_delete(self, query: DeleteFilter) -> list[tuple[int, str, str, JobStatus, int]]:
        where, order = sql.deletable(query, DIALECT)
        rows = await self._all(
            f"WITH doomed AS (SELECT id FROM jobs WHERE {where.sql()}"
            f" ORDER BY {order} LIMIT ? FOR UPDATE SKIP LOCKED),"
            " history AS (DELETE FROM attempts WHERE job_id IN (SELECT id FROM doomed)),"
            " edges AS (DELETE FROM job_deps WHERE job_id IN (SELECT id FROM doomed))"
            " DELETE FROM jobs WHERE id IN (SELECT id FROM doomed)"
            " RETURNING id, queue, kind, status, dependents",
            *where.params,
            query.limit,
        )
        return [
            (r["id"], r["queue"], r["kind"], JobStatus(r["status"]), r["dependents"]) for r in rows
        ]

    async def job_next_run_after(self, after: datetime) -> datetime | None:
        earliest: datetime | None = await self.conn.fetchval(q.NEXT_RUN_AFTER, after)
        return earliest

    # -- leasing ----------------------------------------------------------------------------

    async def lease_grant(self, request: LeaseRequest, narrow: Narrow | None) -> list[Job] | None:
        args: list[object] = [request.worker_id, request.lease_seconds, request.max_jobs]
        if narrow is None:
            kinds = list(dict.fromkeys(request.kinds)) if request.kinds is not None else None
            queues = list(dict.fromkeys(request.queues)) if request.queues is not None else None
            args += [a for a in (kinds, queues) if a is not None]
            statement = q.lease_sql(
                kinds=kinds is not None, queues=queues is not None, capped=False
            )
        else:
            args += [list(narrow.kinds), list(narrow.caps)]
            args += [list(narrow.queues)] if narrow.queues is not None else []
            statement = q.lease_sql(kinds=True, queues=narrow.queues is not None, capped=True)
        rows = await self.conn.fetch(statement, *args)
        if rows[0]["limited"]:
            return None
        return [_job(r) for r in rows if r["id"] is not None]

    async def lease_heads(
        self, kinds: Sequence[str], caps: Sequence[int], queues: Sequence[str] | None, n: int
    ) -> list[Head]:
        args: list[object] = [list(kinds), list(caps), n]
        args += [list(queues)] if queues is not None else []
        rows = await self.conn.fetch(q.heads_sql(queues=queues is not None), *args)
        return [Head(*row) for row in rows]

    async def group_heads(
        self, kind: str, group_key: str | None, queues: Sequence[str] | None, n: int
    ) -> list[Head]:
        args: list[object] = [kind, n]
        args += [group_key] if group_key is not None else []
        args += [list(queues)] if queues is not None else []
        statement = q.group_heads_sql(grouped=group_key is not None, queues=queues is not None)
        return [Head(*row) for row in await self.conn.fetch(statement, *args)]

    async def group_next_due(self, kind: str, group_key: str | None) -> datetime | None:
        args = [kind] if group_key is None else [kind, group_key]
        due: datetime | None = await self.conn.fetchval(
            q.group_next_due_sql(grouped=group_key is not None), *args
        )
        return due

    async def lease_take(self, request: LeaseRequest, ids: Sequence[int]) -> list[Job]:
        rows = await self.conn.fetch(
            q.LEASE_TAKE,
            request.worker_id,
            request.lease_seconds,
            list(ids),
        )
        return [_job(r) for r in rows if r["id"] is not None]

    async def lease_replay(self, request: LeaseRequest) -> list[tuple[int, int]] | None:
        # Two copies of one request arriving at two coordinators at once lease only once.
        await self.conn.execute(
            # Length-prefixed, so no two (worker, id) pairs spell the same text.
            "SELECT pg_advisory_xact_lock(hashtextextended(length($1) || ':' || $1 || $2, 0))",
            request.worker_id,
            request.request_id,
        )
        await self.conn.execute(
            "DELETE FROM lease_requests WHERE created_at < now() - make_interval(secs => $1)",
            LEASE_REQUEST_WINDOW_SECONDS,
        )
        row = await self.conn.fetchrow(
            "SELECT job_ids, tokens FROM lease_requests WHERE worker_id = $1 AND request_id = $2",
            request.worker_id,
            request.request_id,
        )
        return list(zip(row["job_ids"], row["tokens"], strict=True)) if row else None

    async def lease_record(self, request: LeaseRequest, jobs: Sequence[Job]) -> None:
        await self.conn.execute(
            "INSERT INTO lease_requests (worker_id, request_id, job_ids, tokens)"
            " VALUES ($1, $2, $3, $4)"
            " ON CONFLICT (worker_id, request_id) DO UPDATE SET job_ids = excluded.job_ids,"
            " tokens = excluded.tokens, created_at = now()",
            request.worker_id,
            request.request_id,
            [j.id for j in jobs],
            [j.lease_token for j in jobs],
        )

    async def queued_queues(self) -> list[str]:
        return [r["queue"] for r in await self.conn.fetch(q.QUEUED_QUEUES)]

    async def queued_kinds(self, limit: int) -> list[str]:
        return [r["kind"] for r in await self.conn.fetch(q.QUEUED_KINDS, limit)]

    async def head_kinds(self, n: int, queues: Sequence[str] | None) -> dict[str, int]:
        args: list[object] = [n] + ([list(queues)] if queues is not None else [])
        rows = await self.conn.fetch(q.head_kinds_sql(queues=queues is not None), *args)
        return {r["kind"]: r["n"] for r in rows}

    # -- counts and figures -----------------------------------------------------------------

    async def oldest_queued(self, queue: str | None) -> datetime | None:
        if queue is None:
            oldest: datetime | None = await self.conn.fetchval(q.OLDEST_QUEUED)
        else:
            oldest = await self.conn.fetchval(q.OLDEST_QUEUED_IN, queue)
        return oldest

    # -- schedules and limits ---------------------------------------------------------------

    async def schedule_upsert(
        self, spec: ScheduleSpec, next_fire_at: datetime, now: datetime
    ) -> tuple[Schedule, bool]:
        row = await self._one(
            f"INSERT INTO schedules ({SCHEDULE_COLUMNS})"
            f" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, now(), now()) {SCHEDULE_UPSERT}"
            # xmax is 0 for a row this statement inserted, and set for one it updated.
            f" RETURNING {SCHEDULE_COLUMNS}, xmax = 0 AS created",
            *schedule_params(spec),
            next_fire_at,
        )
        return self._schedule(row), bool(row["created"])

    async def schedules_due(self, limit: int) -> tuple[datetime | None, list[Schedule]]:
        rows = await self._all(
            f"SELECT {SCHEDULE_COLUMNS}, now() AS now FROM schedules"
            " WHERE enabled AND next_fire_at <= now()"
            " ORDER BY next_fire_at LIMIT ? FOR UPDATE SKIP LOCKED",
            limit,
        )
        return (rows[0]["now"] if rows else None), [self._schedule(r) for r in rows]
