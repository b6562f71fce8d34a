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

from leasehold.core.transitions import Outcome
from leasehold.errors import IdempotencyConflict, InvalidRequest, LeaseholdError, Unavailable
from leasehold.model import Attempt, AttemptOutcome, Job, JobStatus, Report
from leasehold.store.base import (
    DeadFilter,
    Decide,
    Expired,
    Inserted,
    InsertedAndLeased,
    JobFilter,
    LeaseRequest,
    NewJob,
    StatsSnapshot,
)
from leasehold.store.migrations import migrations

log = structlog.get_logger("leasehold")

CHANNEL: Final = "leasehold_jobs"
_COLUMNS: Final = (
    "id, kind, payload, status, attempts, max_attempts, run_after, created_at, lease_token,"
    " lease_owner, lease_expires_at, lease_seconds, leased_at, finished_at, idempotency_key,"
    " request_hash, result, last_error, report"
)
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

# Leasing: the jobs to take are picked in an InitPlan (``= ANY(ARRAY(...))``) so that the
# UPDATE finds them by primary key whatever the plan; ``id IN (...)`` lets a generic plan
# hash-join a scan of every queued job. The history record and the count are written by
# the same statement.
_PICK_ANY: Final = (
    "SELECT id FROM jobs WHERE status = 'queued' AND run_after <= now()"
    " ORDER BY run_after, id LIMIT $3 FOR UPDATE SKIP LOCKED"
)
# With kinds, one index range per kind, merged: ``kind = ANY($4)`` in one scan would
# either sort every queued job of those kinds or walk the whole queue for a rare kind.
# Each kind's head locks up to $3 rows and only $3 are leased; the rest are unlocked at
# commit, a moment later.
_PICK_KINDS: Final = (
    "SELECT head.id FROM unnest($4::text[]) AS k(kind) CROSS JOIN LATERAL ("
    " SELECT id, run_after FROM jobs WHERE status = 'queued' AND jobs.kind = k.kind"
    " AND run_after <= now() ORDER BY run_after, id LIMIT $3 FOR UPDATE SKIP LOCKED"
    ") AS head ORDER BY head.run_after, head.id LIMIT $3"
)
# The counter row a session adds to (see the migration): sessions of any coordinator
# rarely share one, and a total is the sum over at most 16 rows.
_SHARD: Final = "pg_backend_pid() % 16"
_SECOND: Final = "floor(extract(epoch FROM now()))::bigint"
_ROLLUP_CONFLICT: Final = (
    "ON CONFLICT (second, name, kind, shard) DO UPDATE"
    " SET count = rollups.count + excluded.count, total = rollups.total + excluded.total"
)
_LEASE: Final = (
    "WITH leased AS ("
    " UPDATE jobs SET status = 'running', lease_token = lease_token + 1,"
    " attempts = attempts + 1, lease_owner = $1,"
    " lease_expires_at = now() + make_interval(secs => $2), lease_seconds = $2,"
    " leased_at = now(), report = NULL"
    " WHERE id = ANY(ARRAY({pick})) AND status = 'queued'"
    f" RETURNING {_COLUMNS}"
    "), history AS ("
    " INSERT INTO attempts (job_id, token, worker_id, leased_at, outcome)"
    " SELECT id, lease_token, lease_owner, leased_at, 'running' FROM leased"
    "), agg AS ("
    " SELECT kind, count(*) AS n,"
    " sum(greatest(0, extract(epoch FROM leased_at - run_after)))::float8 AS waited"
    " FROM leased GROUP BY kind"
    "), counted AS ("
    " INSERT INTO counters (name, kind, shard, value)"
    f" SELECT c.name, agg.kind, {_SHARD}, c.sign * agg.n FROM agg CROSS JOIN (VALUES"
    " ('jobs:queued', -1), ('jobs:running', 1), ('leased', 1)) AS c(name, sign)"
    " ORDER BY c.name, agg.kind"
    " ON CONFLICT (name, kind, shard) DO UPDATE SET value = counters.value + excluded.value"
    "), rolled AS ("
    " INSERT INTO rollups (second, name, kind, shard, count, total)"
    f" SELECT {_SECOND}, 'leased', kind, {_SHARD}, n, waited FROM agg ORDER BY kind"
    f" {_ROLLUP_CONFLICT}"
    ") SELECT * FROM leased"
)
_LEASE_ANY: Final = _LEASE.format(pick=_PICK_ANY)
_LEASE_KINDS: Final = _LEASE.format(pick=_PICK_KINDS)
# Rows sorted so that two transactions counting the same names lock them in one order.
# Events named 'jobs:<status>' are count deltas, not events: they have no rollups.
_COUNTED: Final = (
    f"INSERT INTO counters (name, kind, shard, value) SELECT e.name, e.kind, {_SHARD}, e.n"
    " FROM jsonb_to_recordset({events}::jsonb) AS e(name text, kind text, n bigint)"
    " ORDER BY e.name, e.kind"
    " ON CONFLICT (name, kind, shard) DO UPDATE SET value = counters.value + excluded.value"
)
_ROLLED: Final = (
    "INSERT INTO rollups (second, name, kind, shard, count, total)"
    f" SELECT {_SECOND}, e.name, e.kind, {_SHARD}, e.n, e.total"
    " FROM jsonb_to_recordset({events}::jsonb) AS e(name text, kind text, n bigint, total float8)"
    " WHERE e.name NOT LIKE 'jobs:%' ORDER BY e.name, e.kind"
    f" {_ROLLUP_CONFLICT}"
)
_COUNT: Final = f"WITH counted AS ({_COUNTED.format(events='$1')}) {_ROLLED.format(events='$1')}"
# One decision's writes in one statement: a round trip costs more than the work. The job's
# write ($14: the outcome changed it) is guarded by the token and status that were read,
# and ``written`` counts what the guard let through. The attempt record is closed when $15
# is given; the batch's counts ride along with its last write. Every row is found by its
# primary key, so the plan cannot turn into a scan however the tables grow.
_WRITE: Final = (
    "WITH written AS ("
    " UPDATE jobs SET status = $4, attempts = $5, run_after = $6, lease_owner = $7,"
    " lease_expires_at = $8, lease_seconds = $9, finished_at = $10, result = $11,"
    " last_error = $12, report = $13"
    " WHERE $14 AND id = $1 AND lease_token = $2 AND status = $3 RETURNING id"
    "), closed AS ("
    " UPDATE attempts SET outcome = $15, finished_at = $16, error = $17"
    " WHERE $15::text IS NOT NULL AND job_id = $1 AND token = $2"
    f"), counted AS ({_COUNTED.format(events='$18')})"
    f", rolled AS ({_ROLLED.format(events='$18')})"
    " SELECT count(*) FROM written"
)
_NOTIFY: Final = f"NOTIFY {CHANNEL}"


def _job(row: asyncpg.Record) -> Job:
    return Job(
        id=row["id"],
        kind=row["kind"],
        payload=orjson.loads(row["payload"]),
        status=JobStatus(row["status"]),
        attempts=row["attempts"],
        max_attempts=row["max_attempts"],
        run_after=row["run_after"],
        created_at=row["created_at"],
        lease_token=row["lease_token"],
        lease_owner=row["lease_owner"],
        lease_expires_at=row["lease_expires_at"],
        lease_seconds=row["lease_seconds"],
        leased_at=row["leased_at"],
        finished_at=row["finished_at"],
        idempotency_key=row["idempotency_key"],
        request_hash=row["request_hash"],
        result=orjson.loads(row["result"]) if row["result"] is not None else None,
        last_error=row["last_error"],
        report=Report(row["report"]) if row["report"] is not None else None,
    )


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


class _Tally:
    """A transaction's events (with the seconds they carry) and job-count deltas, written
    at its end in one statement, sorted so that transactions lock counter rows in one order."""

    def __init__(self) -> None:
        self.n: Counter[tuple[str, str]] = Counter()
        self.total: dict[tuple[str, str], float] = {}

    def add(self, name: str, kind: str, n: int = 1, value: float = 0.0) -> None:
        self.n[name, kind] += n
        self.total[name, kind] = self.total.get((name, kind), 0.0) + value

    def moved(self, kind: str, before: JobStatus | None, after: JobStatus) -> None:
        if before is not after:
            if before is not None:
                self.add(f"jobs:{before}", kind, -1)
            self.add(f"jobs:{after}", kind, 1)

    def __bool__(self) -> bool:
        return any(self.n.values())

    def json(self) -> str:
        rows = [
            {"name": name, "kind": kind, "n": n, "total": self.total[name, kind]}
            for (name, kind), n in sorted(self.n.items())
            if n
        ]
        return orjson.dumps(rows).decode()


async def _count(conn: asyncpg.Connection, tally: _Tally) -> None:
    if tally:
        await conn.execute(_COUNT, tally.json())


async def _write(
    conn: asyncpg.Connection,
    before: Job,
    outcome: Outcome,
    now: datetime,
    tally: _Tally | None,
) -> None:
    after = outcome.job
    completed = outcome.attempt is AttemptOutcome.COMPLETED
    written = await conn.fetchval(
        _WRITE,
        before.id,
        before.lease_token,
        before.status,
        after.status,
        after.attempts,
        after.run_after,
        after.lease_owner,
        after.lease_expires_at,
        after.lease_seconds,
        after.finished_at,
        _json(after.result) if after.result is not None else None,
        after.last_error,
        after.report,
        outcome.changed,
        outcome.attempt,
        now,
        None if completed else after.last_error,
        tally.json() if tally else "[]",
    )
    if written != outcome.changed:  # the row is locked: refuse rather than half-apply
        raise Unavailable(f"job {before.id} changed under a guarded write")


def _tally_outcome(tally: _Tally, before: Job, outcome: Outcome, now: datetime) -> None:
    for name in outcome.events:
        ran = 0.0
        if name == "completed" and before.leased_at is not None:
            ran = max(0.0, (now - before.leased_at).total_seconds())
        tally.add(name, before.kind, 1, ran)
    if outcome.changed:
        tally.moved(before.kind, before.status, outcome.job.status)


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
        raise InvalidRequest(f"PostgreSQL cannot store a value of this request: {exc}") from exc


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
        async with self._transaction() as conn:
            inserted = [await self._insert(conn, new) for new in jobs]
            tally = _Tally()
            for i in inserted:
                if i.created:
                    tally.add("enqueued", i.job.kind)
                    tally.moved(i.job.kind, None, JobStatus.QUEUED)
            await _count(conn, tally)
            if any(i.created for i in inserted):
                await conn.execute(_NOTIFY)
            return inserted

    @staticmethod
    async def _insert(conn: asyncpg.Connection, new: NewJob) -> Inserted:
        # ON CONFLICT waits for a concurrent insert of the same key to commit or roll back,
        # so two coordinators given the same key never both create a job.
        row = await conn.fetchrow(
            "INSERT INTO jobs (kind, payload, status, max_attempts, run_after, created_at,"
            " idempotency_key, request_hash)"
            " VALUES ($1, $2, 'queued', $3, coalesce($4, now()), now(), $5, $6)"
            f" ON CONFLICT (idempotency_key) DO NOTHING RETURNING {_COLUMNS}",
            new.kind,
            _json(new.payload),
            new.max_attempts,
            new.run_after,
            new.idempotency_key,
            new.request_hash,
        )
        if row is not None:
            return Inserted(_job(row), created=True)
        existing = _job(
            await conn.fetchrow(
                f"SELECT {_COLUMNS} FROM jobs WHERE idempotency_key = $1", new.idempotency_key
            )
        )
        if existing.request_hash != new.request_hash:
            raise IdempotencyConflict(
                f"idempotency key {new.idempotency_key!r} was used for job"
                f" {existing.id} with a different request"
            )
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
        args: list[object] = [request.worker_id, request.lease_seconds, request.max_jobs]
        if request.kinds is not None:
            args.append(list(dict.fromkeys(request.kinds)))  # a kind twice would fill n twice
        async with self._connection() as conn:
            rows = await conn.fetch(_LEASE_ANY if request.kinds is None else _LEASE_KINDS, *args)
        return sorted((_job(r) for r in rows), key=lambda j: (j.run_after, j.id))

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
                    _tally_outcome(tally, before, outcome, now)
                outcomes.append(outcome)
            for i, (before, outcome) in enumerate(writes, start=1):
                await _write(conn, before, outcome, now, tally if i == len(writes) else None)
            if not writes:
                await _count(conn, tally)
            if any(o and o.changed and o.job.status is JobStatus.QUEUED for o in outcomes):
                await conn.execute(_NOTIFY)
            return outcomes

    async def jobs_expired(self, limit: int) -> list[Expired]:
        async with self._connection() as conn:
            rows = await conn.fetch(
                "SELECT id, lease_token FROM jobs WHERE status = 'running'"
                " AND lease_expires_at <= now() ORDER BY lease_expires_at LIMIT $1",
                limit,
            )
        return [Expired(r["id"], r["lease_token"]) for r in rows]

    async def job_list(self, query: JobFilter) -> list[Job]:
        where = ["id > $1"]
        params: list[object] = [query.after_id or 0]
        if query.status is not None:
            params.append(query.status)
            where.append(f"status = ${len(params)}")
        if query.kind is not None:
            params.append(query.kind)
            where.append(f"kind = ${len(params)}")
        params.append(query.limit)
        sql = (
            f"SELECT {_COLUMNS} FROM jobs WHERE {' AND '.join(where)}"
            f" ORDER BY id LIMIT ${len(params)}"
        )
        async with self._connection() as conn:
            return [_job(r) for r in await conn.fetch(sql, *params)]

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

    async def attempts_list(self, job_id: int) -> list[Attempt]:
        async with self._connection() as conn:
            rows = await conn.fetch(
                "SELECT job_id, token, worker_id, leased_at, finished_at, outcome, error"
                " FROM attempts WHERE job_id = $1 ORDER BY token",
                job_id,
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
            counts: dict[tuple[str, JobStatus], int] = {}
            totals: dict[tuple[str, str], int] = {}
            for r in await conn.fetch(
                "SELECT name, kind, sum(value)::bigint AS n FROM counters GROUP BY name, kind"
            ):
                if r["name"].startswith("jobs:"):
                    if r["n"]:
                        counts[r["kind"], JobStatus(r["name"].removeprefix("jobs:"))] = r["n"]
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
            oldest: datetime | None = await conn.fetchval(
                "SELECT min(run_after) FROM jobs WHERE status = 'queued' AND run_after <= now()"
            )
        return StatsSnapshot(now, counts, totals, sums, oldest)

    async def prune(self, keep_seconds: int) -> None:
        async with self._connection() as conn:
            await conn.execute(f"DELETE FROM rollups WHERE second < {_SECOND} - $1", keep_seconds)
