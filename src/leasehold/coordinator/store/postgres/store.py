"""The PostgreSQL backend: several coordinators sharing one database.

Every method is one transaction on a pooled asyncpg connection. "Now" is the database's
clock (``now()``, the start of the transaction), never a coordinator's, so coordinators
with skewed clocks agree on expiry. Leasing picks rows with ``FOR UPDATE SKIP LOCKED``:
concurrent lessees on any coordinator neither wait for nor both take the same job.
``jobs_decide`` locks its jobs in id order, so two batches (two reapers, or a reaper and a
bulk requeue) never deadlock, hands each job to the rule and writes the outcome with the
same guarded UPDATE as SQLite. A change that makes work available sends NOTIFY in its
transaction; each store LISTENs on a connection of its own and calls its subscribers, which
wake the long polls of that coordinator.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from datetime import datetime
from typing import Any, Final

import asyncpg
import orjson
import structlog

from leasehold import job_fields
from leasehold.coordinator.store.contract import (
    AttemptPage,
    DeadFilter,
    Decide,
    DeleteFilter,
    Expired,
    Fired,
    FirstFire,
    Inserted,
    InsertedAndLeased,
    JobFilter,
    JobList,
    KindLimit,
    LeaseRequest,
    NewJob,
    PlanFires,
    QueuesSnapshot,
    StatsSnapshot,
    WorkerBeat,
    WorkerSeen,
    lease_order,
    scheduled_job,
)
from leasehold.coordinator.store.migrations import migrations
from leasehold.coordinator.store.postgres import lease as pick
from leasehold.coordinator.store.postgres import lease_ids as lease_ids
from leasehold.coordinator.store.postgres import ops as ops
from leasehold.coordinator.store.postgres import schedules_limits as sched
from leasehold.errors import InvalidRequest, LeaseholdError, Unavailable
from leasehold.job_fields import Stored
from leasehold.model import (
    Attempt,
    AttemptOutcome,
    Job,
    JobStatus,
    Outcome,
    Schedule,
    ScheduleSpec,
)

log = structlog.get_logger("leasehold")

CHANNEL: Final = "leasehold_jobs"
_COLUMNS: Final = pick.COLUMNS


def _blank(field: job_fields.JobField) -> str:
    """A summary's stand-in for a (JSON) field it leaves out: JSON null where the column is
    NOT NULL (payload), else NULL (result)."""
    value = "NULL" if field.nullable else "'null'"
    return f"{value}::jsonb AS {field.name}"


# A job list's columns without payload and result.
_SUMMARY_COLUMNS: Final = job_fields.columns(_blank)
# An arbitrary key every coordinator agrees on ("leasehol" in ASCII): one migrator at a time.
_MIGRATION_LOCK: Final = 0x6C65617365686F6C
_ACQUIRE_TIMEOUT: Final = 30.0  # seconds a request may wait for a pooled connection
_RELISTEN_SECONDS: Final = 1.0  # pause between attempts to get the LISTEN connection back

# Errors after which a connection is in doubt: it is closed rather than pooled again.
# InternalClientError is what asyncpg raises when the server's goodbye (an admin shutdown)
# arrived on an idle connection before the socket closed.
_CONNECTION_LOST: Final = (
    OSError,
    TimeoutError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.OperatorInterventionError,
)
# Errors that say "the database cannot serve now", answered with 503. A deadlock or a
# serialisation failure (class 40) rolled the transaction back whole: a retry is safe.
_UNAVAILABLE: Final = (
    *_CONNECTION_LOST,
    asyncpg.exceptions.InsufficientResourcesError,
    asyncpg.exceptions.TransactionRollbackError,
)
# Text and jsonb cannot hold the NUL character, which JSON strings and SQLite can: a
# request carrying one is refused as invalid, not answered with a server error.
_UNSTORABLE: Final = (
    asyncpg.exceptions.CharacterNotInRepertoireError,
    asyncpg.exceptions.UntranslatableCharacterError,
)

_SHARD: Final = pick.SHARD
_SECOND: Final = pick.SECOND
_ROLLUP_CONFLICT: Final = (
    "ON CONFLICT (second, name, kind, shard) DO UPDATE"
    " SET count = rollups.count + excluded.count, total = rollups.total + excluded.total"
)
_MAX_KINDS_SCANNED: Final = 10_000  # kinds an unfiltered lease considers once limits exist
# Rows sorted so that two transactions counting the same names lock them in one order.
# Events named 'jobs:<status>' are count deltas, not events: they have no rollups.
_COUNTED: Final = (
    "INSERT INTO counters (name, kind, queue, shard, value)"
    f" SELECT e.name, e.kind, e.queue, {_SHARD}, e.n"
    " FROM jsonb_to_recordset({events}::jsonb) AS e(name text, kind text, queue text, n bigint)"
    " ORDER BY e.name, e.kind, e.queue ON CONFLICT (name, kind, queue, shard)"
    " DO UPDATE SET value = counters.value + excluded.value"
)
_ROLLED: Final = (
    "INSERT INTO rollups (second, name, kind, shard, count, total)"
    f" SELECT {_SECOND}, e.name, e.kind, {_SHARD}, e.n, e.total"
    " FROM jsonb_to_recordset({events}::jsonb) AS e(name text, kind text, n bigint, total float8)"
    " WHERE e.name NOT LIKE 'jobs:%' ORDER BY e.name, e.kind"
    f" {_ROLLUP_CONFLICT}"
)
_COUNT: Final = f"WITH counted AS ({_COUNTED.format(events='$1')}) {_ROLLED.format(events='$1')}"
_NOTIFY: Final = f"NOTIFY {CHANNEL}"
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
# A batch of decisions' writes in one statement: a round trip costs more than the work (a
# batch of 200 reports was 200 round trips when each job had a statement). The rows come as
# arrays: $1-$3 the guards (id, token, status read), then the fields each decision changed
# (job_fields.WRITTEN), the time, the attempts to close and the batch's counts. Each job's
# write is guarded by the token and status that were read, and ``written`` counts what the
# guards let through. Every row is found by its primary key, so the plan cannot turn into a
# scan however the tables grow. A row can be written once per statement: a batch that decides
# one job twice writes in turn (``jobs_decide``).
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
    " SELECT count(*) FROM written"
)
_INSERT: Final = (
    "INSERT INTO jobs (kind, payload, status, max_attempts, run_after, created_at,"
    " idempotency_key, request_hash, priority, queue, headers, timeout_seconds)"
    " VALUES ($1, $2, 'queued', $3, coalesce($4, now()), now(), $5, $6, $7, $8, $9, $10)"
    f" ON CONFLICT (idempotency_key) DO NOTHING RETURNING {_COLUMNS}"
)
# One job enqueued in one statement, so in one round trip and its own transaction: the
# row, its counts ($11, counted only if the row was made) and the wake-up of other
# coordinators' long polls. BEGIN, INSERT, counts, NOTIFY and COMMIT were five round
# trips, most of a lone enqueue's time.
_INSERT_ONE: Final = (
    f"WITH new AS ({_INSERT})"
    f", counted AS ({_COUNTED.format(events='(SELECT $11::jsonb FROM new)')})"
    f", rolled AS ({_ROLLED.format(events='(SELECT $11::jsonb FROM new)')})"
    f", notified AS (SELECT pg_notify('{CHANNEL}', '') FROM new)"
    # A CTE that modifies nothing runs only if read: the always-true test reads it.
    " SELECT new.* FROM new WHERE (SELECT count(*) FROM notified) >= 0"
)


# asyncpg gives and takes timestamptz as aware datetimes and jsonb as JSON text, so every
# field converts as job_fields.DECODE and ENCODE say.
# A row holding _COLUMNS (and maybe more) as a Job, by column name.
_job: Final = job_fields.row_decoder(by_name=True, name="_job")
# One decision's changed fields, a row of _WRITE's arrays $4, $5, ...
_written: Final = job_fields.written_encoder(name="_written")


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


class _Tally:
    """A transaction's events (with the seconds they carry) and job-count deltas, written
    at its end in one statement, sorted so that transactions lock counter rows in one order."""

    def __init__(self) -> None:
        self.n: Counter[tuple[str, str, str]] = Counter()
        self.total: dict[tuple[str, str, str], float] = {}

    def add(self, name: str, kind: str, n: int = 1, value: float = 0.0, queue: str = "") -> None:
        """Events carry no queue (''); job counts ('jobs:<status>') do."""
        key = (name, kind, queue)
        self.n[key] += n
        self.total[key] = self.total.get(key, 0.0) + value

    def moved(self, job: Job, before: JobStatus | None, after: JobStatus) -> None:
        if before is not after:
            if before is not None:
                self.add(f"jobs:{before}", job.kind, -1, queue=job.queue)
            self.add(f"jobs:{after}", job.kind, 1, queue=job.queue)

    def enqueued(self, kind: str, queue: str) -> None:
        """A job made: its event, and one more queued job of its kind and queue."""
        self.add("enqueued", kind)
        self.add(f"jobs:{JobStatus.QUEUED}", kind, queue=queue)

    def __bool__(self) -> bool:
        return any(self.n.values())

    def json(self) -> str:
        rows = [
            {"name": name, "kind": kind, "queue": queue, "n": n, "total": self.total[key]}
            for key, n in sorted(self.n.items())
            if n
            for name, kind, queue in [key]
        ]
        return orjson.dumps(rows).decode()


def _insert_args(new: NewJob) -> tuple[object, ...]:
    """``_INSERT``'s parameters, $1 to $10."""
    return (
        new.kind,
        _json(new.payload),
        new.max_attempts,
        new.run_after,
        new.idempotency_key,
        new.request_hash,
        new.priority,
        new.queue,
        _json(new.headers) if new.headers is not None else None,
        new.timeout_seconds,
    )


async def _count(conn: asyncpg.Connection, tally: _Tally) -> None:
    if tally:
        await conn.execute(_COUNT, tally.json())


async def _write(
    conn: asyncpg.Connection, writes: Sequence[tuple[Job, Outcome]], now: datetime, tally: _Tally
) -> None:
    """The writes of decisions on distinct jobs, in one statement (``_WRITE``)."""
    changed = [(before, outcome.job) for before, outcome in writes if outcome.changed]
    closing = [(before, outcome) for before, outcome in writes if outcome.attempt is not None]
    rows = [_written(before, after) for before, after in changed]
    # The rows' fields as columns, one array parameter each.
    fields = [list(c) for c in zip(*rows, strict=True)] or [[] for _ in job_fields.WRITTEN]
    written = await conn.fetchval(
        _WRITE,
        [before.id for before, _ in changed],
        [before.lease_token for before, _ in changed],
        [before.status for before, _ in changed],
        *fields,
        now,
        [before.id for before, _ in closing],
        [before.lease_token for before, _ in closing],
        [outcome.attempt for _, outcome in closing],
        [
            None if outcome.attempt is AttemptOutcome.COMPLETED else outcome.job.last_error
            for _, outcome in closing
        ],
        tally.json() if tally else "[]",
    )
    if written != len(changed):  # the rows are locked: refuse rather than half-apply
        raise Unavailable("a job changed under a guarded write")


def _tally_outcome(tally: _Tally, before: Job, outcome: Outcome) -> None:
    for name, value in outcome.counted():
        tally.add(name, before.kind, 1, value)
    if outcome.changed:
        tally.moved(before, before.status, outcome.job.status)


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Pool connections keep no session state (no SET, LISTEN or session locks), so the
    reset query asyncpg would send on every release is a round trip for nothing."""


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    """Driver errors become leasehold errors here, at the edge of the store."""
    try:
        yield
    except _UNAVAILABLE as exc:
        log.warning("store.unavailable", error=f"{type(exc).__name__}: {exc}")
        raise Unavailable(f"database unavailable: {type(exc).__name__}: {exc}") from exc
    except _UNSTORABLE as exc:
        # The database's message quotes the offending bytes: input is never echoed.
        log.info("store.unstorable", error=type(exc).__name__)
        raise InvalidRequest("the database cannot store a value of this request") from exc


class PostgresStore:
    """A Store on a PostgreSQL database shared by any number of coordinators."""

    def __init__(self, url: str, *, min_connections: int = 2, max_connections: int = 10) -> None:
        self._url = url
        self._min = min_connections
        self._max = max_connections
        self._pool: asyncpg.Pool | None = None
        self._subscribers: list[Callable[[], None]] = []
        self._listener: asyncio.Task[None] | None = None

    # -- lifecycle ------------------------------------------------------------------------

    async def open(self) -> None:
        with _translated():
            self._pool = await asyncpg.create_pool(
                self._url, min_size=self._min, max_size=self._max, reset=_keep_session
            )
            async with self._pool.acquire() as conn:
                await self._migrate(conn)
        listening: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._listener = asyncio.create_task(self._listen(listening), name="leasehold-listen")
        try:
            await listening
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
            self._listener = None
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

    @staticmethod
    async def _migrate(conn: asyncpg.Connection) -> None:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", _MIGRATION_LOCK)
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY,"
                " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            done = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
            for migration in migrations("postgres"):
                if migration.version in done:
                    continue
                await conn.execute(migration.sql)  # no arguments: run as one script
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                    migration.version,
                    migration.name,
                )

    # -- wake-ups across coordinators ----------------------------------------------------

    def subscribe(self, on_available: Callable[[], None]) -> None:
        self._subscribers.append(on_available)

    def _wake(self, *_: object) -> None:
        for on_available in self._subscribers:
            on_available()

    async def _listen(self, listening: asyncio.Future[None]) -> None:
        """Hold a LISTEN connection for as long as the store is open, reconnecting after a
        loss; notifications missed meanwhile are made up for by waking every subscriber."""
        while True:
            try:
                await self._listen_once(listening)
            except (*_UNAVAILABLE, asyncpg.PostgresError) as exc:
                if not listening.done():
                    listening.set_exception(Unavailable(f"cannot LISTEN: {exc}"))
                    return
                log.warning("store.listen_lost", error=str(exc))
            await asyncio.sleep(_RELISTEN_SECONDS)

    async def _listen_once(self, listening: asyncio.Future[None]) -> None:
        conn = await asyncpg.connect(self._url)
        try:
            lost = asyncio.Event()
            conn.add_termination_listener(lambda _conn: lost.set())
            await conn.add_listener(CHANNEL, self._wake)
            if listening.done():
                log.info("store.listen_restored")
                self._wake()
            else:
                listening.set_result(None)
            await lost.wait()
            log.warning("store.listen_lost")
        finally:
            conn.terminate()

    # -- transactions ---------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[asyncpg.Connection]:
        if self._pool is None:
            raise Unavailable("the store is not open")
        with _translated():
            async with self._pool.acquire(timeout=_ACQUIRE_TIMEOUT) as conn:
                try:
                    yield conn
                except _CONNECTION_LOST:
                    conn.terminate()
                    raise

    @contextlib.asynccontextmanager
    async def _transaction(self) -> AsyncIterator[asyncpg.Connection]:
        async with self._connection() as conn, conn.transaction():
            yield conn

    # -- the Store protocol -------------------------------------------------------------

    async def now(self) -> datetime:
        async with self._connection() as conn:
            now: datetime = await conn.fetchval("SELECT clock_timestamp()")
            return now

    async def job_insert_many(self, jobs: Sequence[NewJob]) -> list[Inserted]:
        if len(jobs) == 1:
            return [await self._insert_one(jobs[0])]
        async with self._transaction() as conn:
            inserted = [await self._insert(conn, new) for new in jobs]
            tally = _Tally()
            for i in inserted:
                if i.created:
                    tally.enqueued(i.job.kind, i.job.queue)
            await _count(conn, tally)
            if any(i.created for i in inserted):
                await conn.execute(_NOTIFY)
            return inserted

    async def _insert_one(self, new: NewJob) -> Inserted:
        """A lone job: one statement (``_INSERT_ONE``) unless its key was used before."""
        tally = _Tally()
        tally.enqueued(new.kind, new.queue)  # counted only if the row is made
        async with self._connection() as conn:
            row = await conn.fetchrow(_INSERT_ONE, *_insert_args(new), tally.json())
            if row is not None:
                return Inserted(_job(row), created=True)
            return await self._existing(conn, new, compare=True)

    @staticmethod
    async def _insert(conn: asyncpg.Connection, new: NewJob, *, compare: bool = True) -> Inserted:
        """``compare=False``: a used key is taken as this job, whatever its request."""
        # ON CONFLICT waits for a concurrent insert of the same key to commit or roll back,
        # so two coordinators given the same key never both create a job.
        row = await conn.fetchrow(_INSERT, *_insert_args(new))
        if row is not None:
            return Inserted(_job(row), created=True)
        return await PostgresStore._existing(conn, new, compare=compare)

    @staticmethod
    async def _existing(conn: asyncpg.Connection, new: NewJob, *, compare: bool) -> Inserted:
        """The job stored under ``new``'s key, which an insert found used."""
        existing = _job(
            await conn.fetchrow(
                f"SELECT {_COLUMNS} FROM jobs WHERE idempotency_key = $1", new.idempotency_key
            )
        )
        if compare:
            new.check_reuse(existing.request_hash, f"job {existing.id}")
        return Inserted(existing, created=False)

    async def job_insert_and_lease(
        self, jobs: Sequence[NewJob], leases: Sequence[LeaseRequest]
    ) -> InsertedAndLeased:
        # Separate transactions: each commit here is a round trip of its own anyway, and a
        # lease never waits for another coordinator's insert.
        inserted: list[Inserted] = []
        error: LeaseholdError | None = None
        try:
            inserted = await self.job_insert_many(jobs)
        except LeaseholdError as exc:
            error = exc
        leased: list[list[Job] | None] = []
        for request in leases:
            try:
                leased.append(await self.job_lease(request))
            except LeaseholdError:
                leased.append(None)
        return InsertedAndLeased(inserted, error, leased)

    async def job_lease(self, request: LeaseRequest) -> list[Job]:
        kinds = list(dict.fromkeys(request.kinds)) if request.kinds is not None else None
        queues = list(dict.fromkeys(request.queues)) if request.queues is not None else None
        sql = pick.lease_sql(kinds=kinds is not None, queues=queues is not None, capped=False)
        args: list[object] = [request.worker_id, request.lease_seconds, request.max_jobs]
        args += [a for a in (kinds, queues) if a is not None]
        async with self._connection() as conn, conn.transaction():
            replayed = await self._replayed(conn, request)
            if replayed is not None:
                jobs = replayed
            else:
                rows = await conn.fetch(sql, *args)
                if rows[0]["limited"]:
                    rows = await self._lease_capped(conn, request, kinds, queues)
                jobs = sorted((_job(r) for r in rows if r["id"] is not None), key=lease_order)
                if request.request_id is not None:
                    await lease_ids.remember(conn, request, jobs)
            if request.seal is not None:
                request.seal(jobs)  # raising rolls the lease back
        return jobs

    @staticmethod
    async def _replayed(conn: asyncpg.Connection, request: LeaseRequest) -> list[Job] | None:
        """The leases a request with this id made before (PROTOCOL.md §5), or None."""
        if request.request_id is None:
            return None
        rows = await lease_ids.replay(conn, request, _COLUMNS)
        return None if rows is None else sorted((_job(r) for r in rows), key=lease_order)

    async def _lease_capped(
        self,
        conn: asyncpg.Connection,
        request: LeaseRequest,
        kinds: list[str] | None,
        queues: list[str] | None,
    ) -> list[asyncpg.Record]:
        """A lease that some kind's limit or a paused queue applies to: leave the paused
        queues out, lock the limited kinds' rows, count their running jobs, and lease no
        kind past its room, in one transaction."""
        async with conn.transaction():
            paused = {r["queue"] for r in await conn.fetch(pick.PAUSED)}
            if paused:
                wanted = queues or [r["queue"] for r in await conn.fetch(pick.QUEUED_QUEUES)]
                queues = [q for q in wanted if q not in paused]
                if not queues:
                    return []
            if kinds is None:
                kinds = await self._kinds_to_probe(conn, request, queues)
            room = dict.fromkeys(kinds, request.max_jobs)
            # A kind already at its limit is left out without waiting for its lock: running
            # jobs of a limited kind only grow under that lock, so the count cannot be low.
            limits = {r["kind"]: r["max_running"] for r in await conn.fetch(pick.LIMITS, kinds)}
            room |= await self._room(conn, limits)
            wanted = [k for k in limits if room[k] > 0]
            locked = {
                r["kind"]: r["max_running"] for r in await conn.fetch(pick.LOCK_LIMITS, wanted)
            }
            room |= await self._room(conn, locked)
            room |= {k: 0 for k in wanted if k not in locked}  # its limit went meanwhile: next time
            open_kinds = [k for k in kinds if room[k] > 0]
            if not open_kinds:
                return []
            sql = pick.lease_sql(kinds=True, queues=queues is not None, capped=True)
            args: list[object] = [request.worker_id, request.lease_seconds, request.max_jobs]
            args += [open_kinds, [min(room[k], request.max_jobs) for k in open_kinds]]
            if queues is not None:
                args.append(queues)
            rows: list[asyncpg.Record] = await conn.fetch(sql, *args)
            return rows

    async def _kinds_to_probe(
        self, conn: asyncpg.Connection, request: LeaseRequest, queues: list[str] | None
    ) -> list[str]:
        """The kinds an unnarrowed lease reads heads of once some kind is limited.

        Usually no limit stops the first due jobs (their limited kinds have room for them):
        then their kinds alone, at most ``max_jobs`` of them, so a limit on one kind does
        not make every lease probe thousands of tenant kinds. Otherwise every queued kind,
        so that jobs behind a full kind are still found (as on SQLite, sqlite_lease.py)."""
        args: list[object] = [request.max_jobs] + ([queues] if queues is not None else [])
        heads = {
            r["kind"]: r["n"]
            for r in await conn.fetch(pick.head_kinds_sql(queues=queues is not None), *args)
        }
        limits = {r["kind"]: r["max_running"] for r in await conn.fetch(pick.LIMITS, list(heads))}
        room = await self._room(conn, limits)
        if all(room[kind] >= heads[kind] for kind in limits):
            return list(heads)
        return [r["kind"] for r in await conn.fetch(pick.QUEUED_KINDS, _MAX_KINDS_SCANNED)]

    @staticmethod
    async def _room(conn: asyncpg.Connection, limits: dict[str, int]) -> dict[str, int]:
        """How many more jobs of each limited kind may run, counted now."""
        if not limits:
            return {}
        running = {r["kind"]: r["n"] for r in await conn.fetch(pick.RUNNING, list(limits))}
        return {kind: n - running.get(kind, 0) for kind, n in limits.items()}

    async def job_get(self, job_id: int) -> Job | None:
        async with self._connection() as conn:
            row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM jobs WHERE id = $1", job_id)
        return _job(row) if row is not None else None

    async def jobs_decide(self, items: Sequence[tuple[int, Decide]]) -> list[Outcome | None]:
        async with self._transaction() as conn:
            rows = await conn.fetch(
                f"SELECT now() AS now, {_COLUMNS} FROM jobs WHERE id = ANY($1::bigint[])"
                " ORDER BY id FOR UPDATE",
                sorted({job_id for job_id, _ in items}),
            )
            if not rows:
                return [None] * len(items)
            now: datetime = rows[0]["now"]
            current = {row["id"]: _job(row) for row in rows}
            outcomes: list[Outcome | None] = []
            writes: list[tuple[Job, Outcome]] = []
            tally = _Tally()
            for job_id, decide in items:
                before = current.get(job_id)
                outcome = decide(before, now) if before is not None else None
                if before is not None and outcome is not None:
                    if outcome.changed or outcome.attempt is not None:
                        writes.append((before, outcome))
                    current[job_id] = outcome.job
                    _tally_outcome(tally, before, outcome)
                outcomes.append(outcome)
            if len({before.id for before, _ in writes}) == len(writes):
                if writes:
                    await _write(conn, writes, now, tally)
            else:  # a job decided twice: each write sees the one before, the counts ride last
                for i, write in enumerate(writes, start=1):
                    await _write(conn, [write], now, tally if i == len(writes) else _Tally())
            if not writes:
                await _count(conn, tally)
            if any(o and o.changed and o.job.status is JobStatus.QUEUED for o in outcomes):
                await conn.execute(_NOTIFY)
            return outcomes

    async def names_known(self) -> tuple[set[str], set[str]]:
        # The job counts are kept as deltas under 'jobs:<status>' per kind and queue.
        async with self._connection() as conn:
            kinds = await conn.fetch("SELECT DISTINCT kind FROM counters WHERE name LIKE 'jobs:%'")
            queues = await conn.fetch(
                "SELECT DISTINCT queue FROM counters WHERE name LIKE 'jobs:%' AND queue <> ''"
            )
        return {r["kind"] for r in kinds}, {r["queue"] for r in queues}

    async def job_next_run_after(self, after: datetime) -> datetime | None:
        async with self._connection() as conn:
            earliest: datetime | None = await conn.fetchval(pick.NEXT_RUN_AFTER, after)
        return earliest

    async def jobs_expired(self, limit: int) -> list[Expired]:
        async with self._connection() as conn:
            rows = await conn.fetch(
                "SELECT id, lease_token FROM jobs WHERE status = 'running'"
                " AND lease_expires_at <= now() ORDER BY lease_expires_at LIMIT $1",
                limit,
            )
        return [Expired(r["id"], r["lease_token"]) for r in rows]

    async def job_list(self, query: JobFilter) -> JobList:
        where, params = ops.list_where(query)
        params.append(query.limit)
        order = "id DESC" if query.descending else "id"
        columns = _SUMMARY_COLUMNS if query.summary else _COLUMNS
        size = (
            "0"
            if query.summary
            else "octet_length(payload::text) + coalesce(octet_length(result::text), 0)"
        )
        page_sql = (
            f"SELECT {columns}, {size} AS size"
            f" FROM jobs WHERE {where} ORDER BY {order} LIMIT ${len(params)}"
        )
        params.append(query.max_bytes if query.max_bytes is not None else -1)
        # The budget is applied in the database, so a page over it never reaches memory
        # here: the running total of sizes in the list's order, the first job always kept.
        sql = (
            "SELECT *, count(*) OVER () AS listed FROM (SELECT *, sum(size) OVER"
            f" (ORDER BY {order}) AS spent, row_number() OVER (ORDER BY {order}) AS nth"
            f" FROM ({page_sql}) AS page) AS paged"
        )
        sql = (
            f"SELECT * FROM ({sql}) AS budgeted WHERE ${len(params)} < 0"
            f" OR spent <= ${len(params)} OR nth = 1 ORDER BY {order}"
        )
        async with self._connection() as conn:
            rows = await conn.fetch(sql, *params)
        page = JobList(_job(r) for r in rows)
        page.cut = bool(rows) and len(rows) < rows[0]["listed"]
        return page

    async def jobs_dead(self, query: DeadFilter) -> list[int]:
        where = ["status = 'dead'"]
        params: list[object] = []
        if query.kind is not None:
            params.append(query.kind)
            where.append(f"kind = ${len(params)}")
        if query.error_contains is not None:
            params.append(query.error_contains)
            where.append(f"strpos(last_error, ${len(params)}) > 0")
        params.append(query.limit)
        sql = f"SELECT id FROM jobs WHERE {' AND '.join(where)} ORDER BY id LIMIT ${len(params)}"
        async with self._connection() as conn:
            return [r["id"] for r in await conn.fetch(sql, *params)]

    async def attempts_list(self, job_id: int, page: AttemptPage | None = None) -> list[Attempt]:
        page = page or AttemptPage(limit=0)
        async with self._connection() as conn:
            rows = await conn.fetch(
                "SELECT job_id, token, worker_id, leased_at, finished_at, outcome, error"
                " FROM attempts WHERE job_id = $1 AND token > $2 ORDER BY token"
                " LIMIT nullif($3, 0)",  # LIMIT NULL: no limit
                job_id,
                page.after_token or 0,
                page.limit,
            )
        return [
            Attempt(
                job_id=r["job_id"],
                token=r["token"],
                worker_id=r["worker_id"],
                leased_at=r["leased_at"],
                finished_at=r["finished_at"],
                outcome=AttemptOutcome(r["outcome"]),
                error=r["error"],
            )
            for r in rows
        ]

    async def ping(self) -> None:
        async with self._connection() as conn:
            await conn.fetchval("SELECT 1")

    async def counts_by_status(self) -> dict[JobStatus, int]:
        """Counted from the jobs themselves (the ground truth the kept counts must match)."""
        async with self._connection() as conn:
            rows = await conn.fetch("SELECT status, count(*) AS n FROM jobs GROUP BY status")
        counts = dict.fromkeys(JobStatus, 0)
        for r in rows:
            counts[JobStatus(r["status"])] = r["n"]
        return counts

    async def counter_totals(self) -> dict[tuple[str, str], int]:
        async with self._connection() as conn:
            rows = await conn.fetch(
                "SELECT name, kind, sum(value)::bigint AS total FROM counters"
                " WHERE name NOT LIKE 'jobs:%' GROUP BY name, kind"
            )
        return {(r["name"], r["kind"]): r["total"] for r in rows if r["total"]}

    async def stats(self, windows: Sequence[int]) -> StatsSnapshot:
        async with self._transaction() as conn:
            now: datetime = await conn.fetchval("SELECT now()")
            counts: Counter[tuple[str, JobStatus]] = Counter()
            queue_counts: Counter[tuple[str, JobStatus]] = Counter()
            queued_pairs: Counter[tuple[str, str]] = Counter()
            totals: dict[tuple[str, str], int] = {}
            for r in await conn.fetch(
                "SELECT name, kind, queue, sum(value)::bigint AS n FROM counters"
                " GROUP BY name, kind, queue"
            ):
                if r["name"].startswith("jobs:"):
                    if r["n"]:
                        status = JobStatus(r["name"].removeprefix("jobs:"))
                        counts[r["kind"], status] += r["n"]
                        queue_counts[r["queue"], status] += r["n"]
                        if status is JobStatus.QUEUED:
                            queued_pairs[r["queue"], r["kind"]] += r["n"]
                else:
                    totals[r["name"], r["kind"]] = r["n"]
            sums: dict[int, dict[tuple[str, str], tuple[int, float]]] = {}
            for window in windows:
                rows = await conn.fetch(
                    "SELECT name, kind, sum(count)::bigint AS n, sum(total) AS total"
                    f" FROM rollups WHERE second > {_SECOND} - $1 GROUP BY name, kind",
                    window,
                )
                sums[window] = {(r["name"], r["kind"]): (r["n"], r["total"]) for r in rows}
            oldest: datetime | None = await conn.fetchval(pick.OLDEST_AVAILABLE)
        available = oldest if oldest is not None and oldest <= now else None
        return StatsSnapshot(
            now, dict(counts), totals, sums, available, dict(queue_counts), dict(queued_pairs)
        )

    async def prune(self, keep_seconds: int) -> None:
        async with self._connection() as conn:
            await conn.execute(f"DELETE FROM rollups WHERE second < {_SECOND} - $1", keep_seconds)

    # -- schedules and limits -----------------------------------------------------------

    async def schedule_put(self, spec: ScheduleSpec, first: FirstFire) -> tuple[Schedule, bool]:
        async with self._transaction() as conn:
            return await sched.schedule_put(conn, spec, first)

    async def schedule_get(self, name: str) -> Schedule | None:
        async with self._connection() as conn:
            return await sched.schedule_get(conn, name)

    async def schedule_list(self) -> list[Schedule]:
        async with self._connection() as conn:
            return await sched.schedule_list(conn)

    async def schedule_delete(self, name: str) -> bool:
        async with self._connection() as conn:
            return await sched.schedule_delete(conn, name)

    async def schedules_fire(self, plan: PlanFires, limit: int) -> list[Fired]:
        async with self._transaction() as conn:
            fired = []
            tally = _Tally()
            for row in await conn.fetch(sched.DUE, limit):
                schedule = sched.schedule_of(row)
                firing = plan(schedule, row["now"])
                inserted = [
                    await self._insert(conn, scheduled_job(schedule, t), compare=False)
                    for t in firing.fire_times
                ]
                await sched.schedule_advance(conn, schedule, firing)
                for i in inserted:
                    if i.created:
                        tally.enqueued(i.job.kind, i.job.queue)
                fired.append(Fired(schedule.spec.name, firing, inserted))
            await _count(conn, tally)
            if tally:
                await conn.execute(_NOTIFY)
            return fired

    async def limit_put(self, kind: str, max_running: int) -> KindLimit:
        async with self._transaction() as conn:
            return await sched.limit_put(conn, kind, max_running)

    async def limit_delete(self, kind: str) -> bool:
        async with self._connection() as conn:
            return await sched.limit_delete(conn, kind)

    async def limit_list(self) -> list[KindLimit]:
        async with self._connection() as conn:
            return await sched.limit_list(conn)

    # -- operations: deleting, paused queues, workers (postgres_ops.py) -----------------

    async def jobs_delete(self, query: DeleteFilter) -> int:
        async with self._transaction() as conn:
            gone = await ops.jobs_delete(conn, query)
            tally = _Tally()
            for row in gone:
                tally.add(f"jobs:{row['status']}", row["kind"], -1, queue=row["queue"])
            await _count(conn, tally)
            return len(gone)

    async def queue_pause(self, queue: str) -> bool:
        async with self._connection() as conn:
            return await ops.queue_pause(conn, queue)

    async def queue_resume(self, queue: str) -> bool:
        async with self._transaction() as conn:
            resumed = await ops.queue_resume(conn, queue)
            if resumed:
                await conn.execute(_NOTIFY)  # wakes long polls on every coordinator
            return resumed

    async def queues_snapshot(self, window_seconds: int) -> QueuesSnapshot:
        async with self._transaction() as conn:
            return await ops.queues_snapshot(conn, window_seconds)

    async def worker_beat(self, beat: WorkerBeat) -> WorkerSeen:
        async with self._connection() as conn:
            return await ops.worker_beat(conn, beat)

    async def workers_list(self, seen_within_seconds: float) -> list[WorkerSeen]:
        async with self._connection() as conn:
            return await ops.workers_list(conn, seen_within_seconds)

    async def workers_forget(self, unseen_for_seconds: float) -> int:
        async with self._connection() as conn:
            return await ops.workers_forget(conn, unseen_for_seconds)
