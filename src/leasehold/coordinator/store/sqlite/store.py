"""The embedded SQLite backend, the default.

One thread owns the one connection, so two transactions can never interleave on it. It
commits in groups: every operation waiting when a transaction starts joins it, each inside
its own SAVEPOINT (one failing operation never undoes the others), and all are answered
after the single COMMIT. Under load the cost of a commit (an fsync with
``synchronous=FULL``) is shared by many requests; an operation is still answered only
after its change is durable. Times are stored as seconds since the epoch.

When the writer thread is idle, a small operation (one job: an enqueue, a lease, a report,
a read) commits on the event loop instead, together with the small ones submitted in the
same turn of the loop: that spares the two thread hops (to the writer and back) of a lone
request. Larger operations (batches) always go to the writer thread, where SQLite's work
runs beside the event loop's instead of blocking it; while the writer works, everything
queues for it as before, so group commit under load is unchanged. One lock keeps the two
from ever using the connection at once.
"""

from __future__ import annotations

import asyncio
import functools
import queue
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

import orjson

from leasehold import job_fields
from leasehold.coordinator.clock import Clock, SystemClock
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
from leasehold.coordinator.store.sqlite import lease_ids as lease_ids
from leasehold.coordinator.store.sqlite import ops as ops
from leasehold.coordinator.store.sqlite import schedules_limits as sched
from leasehold.coordinator.store.sqlite.lease import next_run_after, oldest_available, pick
from leasehold.coordinator.store.sqlite.readers import Readers
from leasehold.errors import LeaseholdError, Unavailable
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

T = TypeVar("T")
Op = Callable[[sqlite3.Connection], Any]

SYNCHRONOUS_MODES: Final = ("FULL", "NORMAL", "OFF")
_COLUMNS: Final = job_fields.columns()
_BATCH_LIMIT: Final = 512  # operations sharing one commit, at most
_READ_CHUNK: Final = 500  # ids per "IN (...)" read, well under SQLite's variable limit
_INSERT_CHUNK: Final = 500  # rows per multi-row INSERT (10 variables each)
# The write of a decision, guarded by the token and status it was decided on.
_GUARDED_WRITE: Final = (
    f"UPDATE jobs SET {job_fields.set_list(lambda _: '?')}"
    " WHERE id = ? AND lease_token = ? AND status = ?"
)
_STOP: Final = object()
# A job list's columns without payload and result (JSON null and SQL NULL in their place).
_SUMMARY_COLUMNS: Final = job_fields.columns(lambda f: "NULL" if f.nullable else "'null'")
# The index that serves a job list, by (status given, kind given).
_LIST_INDEXES: Final = {
    (False, False): "",
    (True, False): "INDEXED BY jobs_status",
    (False, True): "INDEXED BY jobs_kind",
    (True, True): "INDEXED BY jobs_kind_status",
}


def _ts(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def _dt(value: float | None) -> datetime | None:
    return datetime.fromtimestamp(value, UTC) if value is not None else None


# SQLite keeps a flag as 0 or 1 and a time as seconds since the epoch; every other field
# converts as job_fields.DECODE and ENCODE say.
_DECODE: Final = {
    **job_fields.DECODE,
    Stored.FLAG: "bool({v})",
    Stored.TIME: "_fromtimestamp({v}, _UTC)",
}
_ENCODE: Final = {
    **job_fields.ENCODE,
    Stored.TIME: "{v}.timestamp()",  # sqlite3 stores a bool as 0 or 1 itself
}
_NAMESPACE: Final = {"_fromtimestamp": datetime.fromtimestamp, "_UTC": UTC}
_PAYLOAD, _RESULT = job_fields.POSITION["payload"], job_fields.POSITION["result"]
# A row of _COLUMNS (or _SUMMARY_COLUMNS) as a Job, by position.
_job: Final = job_fields.row_decoder(_DECODE, _NAMESPACE, by_name=False, name="_job")
# The parameters of _GUARDED_WRITE: the decision's fields, then the guard's.
_write_params: Final = job_fields.written_encoder(
    _ENCODE,
    _NAMESPACE,
    then=("before.id", "before.lease_token", "before.status"),
    name="_write_params",
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


class _Tally:
    """Totals (forever) and per-second rollups (for windowed figures) of one transaction's
    events, written together at its end."""

    def __init__(self, now: float) -> None:
        self.second = int(now)
        self.totals: Counter[tuple[str, str]] = Counter()
        self.sums: dict[tuple[str, str], float] = {}

    def add(self, name: str, kind: str, value: float = 0.0) -> None:
        self.totals[name, kind] += 1
        self.sums[name, kind] = self.sums.get((name, kind), 0.0) + value

    def write(self, conn: sqlite3.Connection) -> None:
        if not self.totals:
            return
        conn.executemany(
            "INSERT INTO counters (name, kind, value) VALUES (?, ?, ?)"
            " ON CONFLICT (name, kind) DO UPDATE SET value = value + excluded.value",
            [(name, kind, n) for (name, kind), n in self.totals.items()],
        )
        conn.executemany(
            "INSERT INTO rollups (second, name, kind, count, total) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (second, name, kind) DO UPDATE"
            " SET count = count + excluded.count, total = total + excluded.total",
            [
                (self.second, name, kind, n, self.sums[name, kind])
                for (name, kind), n in self.totals.items()
            ],
        )


class _TokenCounter:
    """Hands out lease tokens, one per row, to the SQL function ``next_lease_token()``
    within one lease statement; loaded from and saved to ``lease_tokens`` around it."""

    def __init__(self) -> None:
        self.last = 0

    def next(self) -> int:
        self.last += 1
        return self.last


class SqliteStore:
    """A Store on one SQLite file in WAL mode (see the module docstring)."""

    def __init__(self, path: str, *, clock: Clock | None = None, synchronous: str = "FULL") -> None:
        if synchronous.upper() not in SYNCHRONOUS_MODES:
            raise ValueError(f"synchronous must be one of {SYNCHRONOUS_MODES}")
        self._path = path
        self._clock = clock or SystemClock()
        self._synchronous = synchronous.upper()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._conn: sqlite3.Connection | None = None
        # Held while a transaction runs, by the writer thread or the event loop.
        self._busy = threading.Lock()
        self._inline: list[tuple[Op, asyncio.Future[Any]]] | None = None  # for this turn
        self._tokens = _TokenCounter()
        self._readers: Readers | None = None

    # -- the writer thread ------------------------------------------------------------

    async def open(self) -> None:
        self._loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = self._loop.create_future()
        self._thread = threading.Thread(
            target=self._run, args=(ready,), name="leasehold-sqlite", daemon=True
        )
        self._thread.start()
        await ready
        if self._path not in ("", ":memory:") and not self._path.startswith("file:"):
            self._readers = Readers(self._path)  # after the writer has migrated the file

    async def close(self) -> None:
        if self._readers is not None:
            await asyncio.to_thread(self._readers.close)
            self._readers = None
        if self._thread is None:
            return
        self._queue.put(_STOP)
        await asyncio.to_thread(self._thread.join)
        self._thread = None

    def subscribe(self, on_available: Callable[[], None]) -> None:
        """Nothing to do: this process is the only one writing to the file."""

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        conn.execute("PRAGMA busy_timeout = 10000")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.create_function("next_lease_token", 0, self._tokens.next)
        self._migrate(conn)
        return conn

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")  # one migrator at a time, even across processes
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations"
                " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
            )
            done = {v for (v,) in conn.execute("SELECT version FROM schema_migrations")}
            for migration in migrations("sqlite"):
                if migration.version in done:
                    continue
                for statement in _statements(migration.sql):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, strftime('%s', 'now'))",
                    (migration.version, migration.name),
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _run(self, ready: asyncio.Future[None]) -> None:
        loop = self._loop
        assert loop is not None
        try:
            conn = self._connect()
        except Exception as exc:
            loop.call_soon_threadsafe(ready.set_exception, exc)
            return
        self._conn = conn
        loop.call_soon_threadsafe(ready.set_result, None)
        stopping = False
        while not stopping:
            first = self._queue.get()
            if first is _STOP:
                break
            batch = list(first)  # a queue item is a group of operations, committed together
            while len(batch) < _BATCH_LIMIT:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    stopping = True
                    break
                batch.extend(item)
            with self._busy:
                answers = self._execute(conn, batch)
            loop.call_soon_threadsafe(_deliver, answers)
        with self._busy:  # not while the event loop runs a transaction on it
            self._conn = None
            conn.close()

    @staticmethod
    def _execute(
        conn: sqlite3.Connection, batch: list[tuple[Op, asyncio.Future[Any]]]
    ) -> list[tuple[asyncio.Future[Any], Any, BaseException | None]]:
        answers: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = []
        # A lone operation needs no savepoint: its failure rolls back the whole
        # transaction, which holds nothing else (two statements fewer per lone request).
        alone = len(batch) == 1
        try:
            conn.execute("BEGIN IMMEDIATE")
            for op, future in batch:
                if not alone:
                    conn.execute("SAVEPOINT op")
                try:
                    answers.append((future, op(conn), None))
                    if not alone:
                        conn.execute("RELEASE op")
                except Exception as exc:
                    conn.execute("ROLLBACK" if alone else "ROLLBACK TO op")
                    if not alone:
                        conn.execute("RELEASE op")
                    answers.append((future, None, exc))
            if conn.in_transaction:
                conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            failure = Unavailable(f"database error: {exc}")
            return [(future, None, failure) for _, future in batch]
        return answers

    async def _read(self, op: Callable[[sqlite3.Connection], T], *, point: bool = False) -> T:
        """A read: on a reader connection, off the writer thread (an in-memory database
        has no other connection to read it from). A ``point`` read (one row by its key)
        while the writer is idle runs on the event loop instead, as a small write does: the
        hop to a reader thread and back cost more than such a read (DESIGN.md §11)."""
        if self._readers is None:
            return await self._call(op)
        if point and self._inline_open():
            return await self._call(op, small=True)
        return await self._readers.read(op)

    def _inline_open(self) -> bool:
        """Whether a small operation submitted now would run on the event loop (see
        ``_submit``): a commit there is due this turn with room, or the writer is idle."""
        if self._inline is not None:
            return len(self._inline) < _BATCH_LIMIT
        return self._queue.empty() and not self._busy.locked()

    async def _call(self, op: Callable[[sqlite3.Connection], T], *, small: bool = False) -> T:
        (future,) = self._submit([op], small=small)
        result: T = await future
        return result

    def _submit(self, ops: Sequence[Op], *, small: bool = False) -> list[asyncio.Future[Any]]:
        """Queue operations that will share one transaction (each in its own savepoint)."""
        if self._thread is None or self._loop is None:
            raise Unavailable("the store is not open")
        futures = [self._loop.create_future() for _ in ops]
        items = list(zip(ops, futures, strict=True))
        if not small or not self._inline_open():
            self._queue.put(items)
        elif self._inline is not None:
            self._inline.extend(items)  # a commit on the loop is due this turn: join it
        else:
            # The writer is idle: commit on the loop once this turn's callbacks (other
            # requests' operations among them) have run.
            self._inline = items
            self._loop.call_soon(self._commit_inline)
        return futures

    def _commit_inline(self) -> None:
        batch, self._inline = self._inline or [], None
        conn = self._conn
        if conn is None:
            _deliver([(future, None, Unavailable("the store is closed")) for _, future in batch])
            return
        if not self._busy.acquire(blocking=False):
            self._queue.put(batch)  # the writer took a transaction meanwhile
            return
        try:
            answers = self._execute(conn, batch)
        finally:
            self._busy.release()
        _deliver(answers)

    # -- the Store protocol -------------------------------------------------------------

    async def now(self) -> datetime:
        return self._clock.now()

    async def job_insert_many(self, jobs: Sequence[NewJob]) -> list[Inserted]:
        return await self._call(lambda conn: self._insert(conn, jobs), small=len(jobs) == 1)

    def _insert(
        self, conn: sqlite3.Connection, jobs: Sequence[NewJob], *, compare: bool = True
    ) -> list[Inserted]:
        """``compare=False``: a used key is taken as this job, whatever its request.

        Statements per batch, not per job: the used keys are read in one query and the new
        jobs written by multi-row INSERTs (SQLite numbers the rows in VALUES order).
        """
        now = self._clock.now().timestamp()
        keys = [j.idempotency_key for j in jobs if j.idempotency_key is not None]
        known = self._read_keys(conn, keys) if keys else {}
        answers: list[Job | int] = []  # a job already stored, or an index into ``fresh``
        fresh: list[NewJob] = []
        pending: dict[str, int] = {}  # key -> index in ``fresh``: a key used twice in the batch
        for new in jobs:
            key = new.idempotency_key
            if key is None or (key not in known and key not in pending):
                if key is not None:
                    pending[key] = len(fresh)
                answers.append(len(fresh))
                fresh.append(new)
                continue
            seen = known[key] if key in known else fresh[pending[key]]
            if compare:
                new.check_reuse(
                    seen.request_hash, f"job {seen.id}" if isinstance(seen, Job) else "another job"
                )
            answers.append(seen if isinstance(seen, Job) else pending[key])
        created = self._insert_rows(conn, fresh, now)
        tally = _Tally(now)
        for new in fresh:
            tally.add("enqueued", new.kind)
        tally.write(conn)
        first_use: set[int] = set()
        inserted: list[Inserted] = []
        for answer in answers:
            if isinstance(answer, Job):
                inserted.append(Inserted(answer, created=False))
            else:  # the first item with a key creates the job; a repeat in the batch does not
                inserted.append(Inserted(created[answer], created=answer not in first_use))
                first_use.add(answer)
        return inserted

    @staticmethod
    def _read_keys(conn: sqlite3.Connection, keys: list[str]) -> dict[str, Job]:
        found: dict[str, Job] = {}
        for start in range(0, len(keys), _READ_CHUNK):
            chunk = keys[start : start + _READ_CHUNK]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT {_COLUMNS} FROM jobs WHERE idempotency_key IN ({marks})"
            for job in map(_job, conn.execute(sql, chunk)):
                assert job.idempotency_key is not None  # the query asked for it
                found[job.idempotency_key] = job
        return found

    @staticmethod
    def _insert_rows(conn: sqlite3.Connection, fresh: list[NewJob], now: float) -> list[Job]:
        created: list[Job] = []
        created_at = datetime.fromtimestamp(now, UTC)
        for start in range(0, len(fresh), _INSERT_CHUNK):
            chunk = fresh[start : start + _INSERT_CHUNK]
            values = ",".join(["(?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(chunk))
            rows: list[tuple[NewJob, str, float]] = []
            params: list[Any] = []
            for new in chunk:
                payload, run_after = orjson.dumps(new.payload).decode(), _ts(new.run_after) or now
                rows.append((new, payload, run_after))
                params += (
                    new.kind,
                    payload,
                    new.max_attempts,
                    run_after,
                    now,
                    new.idempotency_key,
                    new.request_hash,
                    new.priority,
                    new.queue,
                    orjson.dumps(new.headers).decode() if new.headers is not None else None,
                    new.timeout_seconds,
                )
            ids = conn.execute(
                "INSERT INTO jobs (kind, payload, status, max_attempts, run_after, created_at,"
                " idempotency_key, request_hash, priority, queue, headers, timeout_seconds)"
                f" VALUES {values} RETURNING id",
                params,
            ).fetchall()
            # The jobs as a read would return them, built from what was written.
            for (job_id,), (new, payload, run_after) in zip(sorted(ids), rows, strict=True):
                created.append(
                    Job(
                        id=job_id,
                        kind=new.kind,
                        payload=orjson.loads(payload),
                        status=JobStatus.QUEUED,
                        attempts=0,
                        max_attempts=new.max_attempts,
                        run_after=datetime.fromtimestamp(run_after, UTC),
                        created_at=created_at,
                        idempotency_key=new.idempotency_key,
                        request_hash=new.request_hash,
                        priority=new.priority,
                        queue=new.queue,
                        headers=new.headers,
                        timeout_seconds=new.timeout_seconds,
                    )
                )
        return created

    async def job_insert_and_lease(
        self, jobs: Sequence[NewJob], leases: Sequence[LeaseRequest]
    ) -> InsertedAndLeased:
        ops: list[Op] = [lambda conn: self._insert(conn, jobs)]
        ops += [functools.partial(self._lease, request=r) for r in leases]
        answers = await asyncio.gather(
            *self._submit(ops, small=len(jobs) == 1), return_exceptions=True
        )
        inserted, leased = answers[0], answers[1:]
        if isinstance(inserted, BaseException):
            error = inserted if isinstance(inserted, LeaseholdError) else Unavailable(str(inserted))
            inserted = []
        else:
            error = None
        return InsertedAndLeased(
            inserted, error, [None if isinstance(a, BaseException) else a for a in leased]
        )

    async def job_lease(self, request: LeaseRequest) -> list[Job]:
        return await self._call(
            lambda conn: self._lease(conn, request), small=request.max_jobs == 1
        )

    def _lease(self, conn: sqlite3.Connection, request: LeaseRequest) -> list[Job]:
        now = self._clock.now().timestamp()
        if request.request_id is not None:
            replayed = lease_ids.replay(conn, request, now, _COLUMNS, _job)
            if replayed is not None:
                held = sorted(replayed, key=lease_order)
                if request.seal is not None:
                    request.seal(held)
                return held
        ids = pick(conn, request, now)
        if not ids:
            return []
        # The ids as one parameter, so the statement text never changes: SQLite then
        # reuses its compiled form (compiling it anew costs more than running it).
        # Tokens are coordinator-wide: every lease's is above every token issued before.
        (self._tokens.last,) = conn.execute("SELECT last FROM lease_tokens").fetchone()
        rows = conn.execute(
            "UPDATE jobs SET status = 'running', lease_token = next_lease_token(),"
            " attempts = attempts + 1, lease_owner = :owner, lease_expires_at = :expires,"
            " lease_seconds = :seconds, leased_at = :now, report = NULL"
            " WHERE id IN (SELECT value FROM json_each(:ids)) AND status = 'queued'"
            f" RETURNING {_COLUMNS}",
            {
                "ids": orjson.dumps(ids).decode(),
                "now": now,
                "owner": request.worker_id,
                "expires": now + request.lease_seconds,
                "seconds": request.lease_seconds,
            },
        ).fetchall()
        if rows:
            conn.execute("UPDATE lease_tokens SET last = ?", (self._tokens.last,))
        jobs = sorted((_job(r) for r in rows), key=lease_order)
        conn.executemany(
            "INSERT INTO attempts (job_id, token, worker_id, leased_at, outcome)"
            " VALUES (?, ?, ?, ?, 'running')",
            [(j.id, j.lease_token, request.worker_id, now) for j in jobs],
        )
        tally = _Tally(now)
        for job in jobs:
            # Wait: from when the job became available to now.
            tally.add("leased", job.kind, max(0.0, now - job.run_after.timestamp()))
        tally.write(conn)
        if request.request_id is not None:
            lease_ids.remember(conn, request, jobs, now)
        if request.seal is not None:
            request.seal(jobs)  # raising rolls this lease back (its savepoint)
        return jobs

    async def job_get(self, job_id: int) -> Job | None:
        def op(conn: sqlite3.Connection) -> Job | None:
            row = conn.execute(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
            return _job(row) if row is not None else None

        return await self._read(op, point=True)

    async def jobs_decide(self, items: Sequence[tuple[int, Decide]]) -> list[Outcome | None]:
        return await self._call(lambda conn: self._decide(conn, items), small=len(items) == 1)

    def _decide(
        self, conn: sqlite3.Connection, items: Sequence[tuple[int, Decide]]
    ) -> list[Outcome | None]:
        # One read for the whole batch and one executemany per table: per job, only the
        # rule runs in Python. The transaction's "now" is the same for every item.
        now = self._clock.now()
        stamp = now.timestamp()
        current = self._read_many(conn, {job_id for job_id, _ in items})
        outcomes: list[Outcome | None] = []
        writes: list[tuple[Any, ...]] = []
        closed: list[tuple[Any, ...]] = []
        tally = _Tally(stamp)
        for job_id, decide in items:
            before = current.get(job_id)
            if before is None:
                outcomes.append(None)
                continue
            outcome = decide(before, now)
            after = outcome.job
            if outcome.changed:
                writes.append(_write_params(before, after))
                current[job_id] = after  # a second item for the same job sees this one
            if outcome.attempt is not None:
                error = None if outcome.attempt is AttemptOutcome.COMPLETED else after.last_error
                closed.append((outcome.attempt, stamp, error, job_id, before.lease_token))
            for name, value in outcome.counted():
                tally.add(name, before.kind, value)
            outcomes.append(outcome)
        written = conn.executemany(_GUARDED_WRITE, writes).rowcount if writes else 0
        if written != len(writes):  # impossible with one writer; refuse rather than half-apply
            raise Unavailable("a job changed under a guarded write")
        if closed:
            conn.executemany(
                "UPDATE attempts SET outcome = ?, finished_at = ?, error = ?"
                " WHERE job_id = ? AND token = ?",
                closed,
            )
        tally.write(conn)
        return outcomes

    @staticmethod
    def _read_many(conn: sqlite3.Connection, ids: set[int]) -> dict[int, Job]:
        found: dict[int, Job] = {}
        pending = sorted(ids)
        for start in range(0, len(pending), _READ_CHUNK):
            chunk = pending[start : start + _READ_CHUNK]
            marks = ",".join("?" * len(chunk))
            for row in conn.execute(f"SELECT {_COLUMNS} FROM jobs WHERE id IN ({marks})", chunk):
                found[row[0]] = _job(row)
        return found

    async def jobs_expired(self, limit: int) -> list[Expired]:
        def op(conn: sqlite3.Connection) -> list[Expired]:
            rows = conn.execute(
                "SELECT id, lease_token FROM jobs INDEXED BY jobs_running_expiry"
                " WHERE status = 'running'"
                " AND lease_expires_at <= ? ORDER BY lease_expires_at LIMIT ?",
                (self._clock.now().timestamp(), limit),
            ).fetchall()
            return [Expired(job_id, token) for job_id, token in rows]

        return await self._call(op)

    async def names_known(self) -> tuple[set[str], set[str]]:
        def op(conn: sqlite3.Connection) -> tuple[set[str], set[str]]:
            kinds = {k for (k,) in conn.execute("SELECT DISTINCT kind FROM job_counts")}
            queues = {q for (q,) in conn.execute("SELECT DISTINCT queue FROM job_counts")}
            return kinds, queues

        return await self._read(op)

    async def job_next_run_after(self, after: datetime) -> datetime | None:
        return await self._read(lambda conn: _dt(next_run_after(conn, after.timestamp())))

    async def job_list(self, query: JobFilter) -> JobList:
        where, params = ops.list_where(query)
        order = "DESC" if query.descending else ""
        # Named, because without ANALYZE statistics SQLite may walk the primary key in id
        # order and filter every row; each filter has an index ending in id.
        index = _LIST_INDEXES[query.status is not None, query.kind is not None]
        columns = _SUMMARY_COLUMNS if query.summary else _COLUMNS
        sql = f"SELECT {columns} FROM jobs {index} WHERE {where} ORDER BY id {order} LIMIT ?"

        def op(conn: sqlite3.Connection) -> JobList:
            page = JobList()
            spent = 0
            # Row by row, so a page over its budget is never read whole into memory.
            for row in conn.execute(sql, [*params, query.limit]):
                spent += len(row[_PAYLOAD]) + len(row[_RESULT] or "")
                if query.max_bytes is not None and spent > query.max_bytes and page:
                    page.cut = True
                    break
                page.append(_job(row))
            return page

        return await self._read(op)

    async def jobs_dead(self, query: DeadFilter) -> list[int]:
        where: list[str] = ["status = 'dead'"]
        params: list[object] = []
        if query.kind is not None:
            where.append("kind = ?")
            params.append(query.kind)
        if query.error_contains is not None:
            where.append("instr(last_error, ?) > 0")
            params.append(query.error_contains)
        sql = f"SELECT id FROM jobs WHERE {' AND '.join(where)} ORDER BY id LIMIT ?"
        return await self._read(
            lambda conn: [i for (i,) in conn.execute(sql, [*params, query.limit])]
        )

    async def attempts_list(self, job_id: int, page: AttemptPage | None = None) -> list[Attempt]:
        page = page or AttemptPage(limit=-1)  # SQLite: a negative LIMIT is no limit

        def op(conn: sqlite3.Connection) -> list[Attempt]:
            rows = conn.execute(
                "SELECT job_id, token, worker_id, leased_at, finished_at, outcome, error"
                " FROM attempts WHERE job_id = ? AND token > ? ORDER BY token LIMIT ?",
                (job_id, page.after_token or 0, page.limit),
            )
            return [
                Attempt(
                    job_id=r[0],
                    token=r[1],
                    worker_id=r[2],
                    leased_at=datetime.fromtimestamp(r[3], UTC),
                    finished_at=_dt(r[4]),
                    outcome=AttemptOutcome(r[5]),
                    error=r[6],
                )
                for r in rows
            ]

        return await self._read(op)

    async def ping(self) -> None:
        def op(conn: sqlite3.Connection) -> None:
            # On the writer thread, inside its write transaction: it answers only when a
            # write could be made (the database not locked by another process, the disk
            # answering).
            conn.execute("SELECT 1 FROM schema_migrations LIMIT 1").fetchall()

        await self._call(op)

    async def counts_by_status(self) -> dict[JobStatus, int]:
        def op(conn: sqlite3.Connection) -> dict[JobStatus, int]:
            counts = dict.fromkeys(JobStatus, 0)
            for status, n in conn.execute("SELECT status, count(*) FROM jobs GROUP BY status"):
                counts[JobStatus(status)] = n
            return counts

        return await self._read(op)

    async def stats(self, windows: Sequence[int]) -> StatsSnapshot:
        def op(conn: sqlite3.Connection) -> StatsSnapshot:
            now = self._clock.now()
            second = int(now.timestamp())
            counts: Counter[tuple[str, JobStatus]] = Counter()
            queue_counts: Counter[tuple[str, JobStatus]] = Counter()
            queued_pairs: dict[tuple[str, str], int] = {}
            for queue_name, kind, status, n in conn.execute(
                "SELECT queue, kind, status, n FROM job_counts WHERE n <> 0"
            ):
                counts[kind, JobStatus(status)] += n
                queue_counts[queue_name, JobStatus(status)] += n
                if status == JobStatus.QUEUED:
                    queued_pairs[queue_name, kind] = n
            totals = {
                (name, kind): n
                for name, kind, n in conn.execute("SELECT name, kind, value FROM counters")
            }
            window_sums = {}
            for window in windows:
                rows = conn.execute(
                    "SELECT name, kind, sum(count), sum(total) FROM rollups"
                    " WHERE second > ? GROUP BY name, kind",
                    (second - window,),
                )
                window_sums[window] = {(name, kind): (n, total) for name, kind, n, total in rows}
            oldest = oldest_available(conn, now.timestamp())
            return StatsSnapshot(
                now,
                dict(counts),
                totals,
                window_sums,
                _dt(oldest),
                dict(queue_counts),
                queued_pairs,
            )

        return await self._read(op)

    async def prune(self, keep_seconds: int) -> None:
        def op(conn: sqlite3.Connection) -> None:
            horizon = int(self._clock.now().timestamp()) - keep_seconds
            conn.execute("DELETE FROM rollups WHERE second < ?", (horizon,))

        await self._call(op)

    async def counter_totals(self) -> dict[tuple[str, str], int]:
        def op(conn: sqlite3.Connection) -> dict[tuple[str, str], int]:
            rows = conn.execute("SELECT name, kind, value FROM counters")
            return {(name, kind): value for name, kind, value in rows}

        return await self._read(op)

    # -- schedules and limits -----------------------------------------------------------

    async def schedule_put(self, spec: ScheduleSpec, first: FirstFire) -> tuple[Schedule, bool]:
        return await self._call(
            lambda conn: sched.schedule_put(conn, spec, first, self._clock.now())
        )

    async def schedule_get(self, name: str) -> Schedule | None:
        return await self._read(lambda conn: sched.schedule_get(conn, name))

    async def schedule_list(self) -> list[Schedule]:
        return await self._read(sched.schedule_list)

    async def schedule_delete(self, name: str) -> bool:
        return await self._call(lambda conn: sched.schedule_delete(conn, name))

    async def schedules_fire(self, plan: PlanFires, limit: int) -> list[Fired]:
        def op(conn: sqlite3.Connection) -> list[Fired]:
            now = self._clock.now()
            fired = []
            for schedule in sched.schedules_due(conn, now, limit):
                firing = plan(schedule, now)
                jobs = [scheduled_job(schedule, t) for t in firing.fire_times]
                inserted = self._insert(conn, jobs, compare=False)
                sched.schedule_advance(conn, schedule, firing)
                fired.append(Fired(schedule.spec.name, firing, inserted))
            return fired

        return await self._call(op)

    async def limit_put(self, kind: str, max_running: int) -> KindLimit:
        return await self._call(lambda conn: sched.limit_put(conn, kind, max_running))

    async def limit_delete(self, kind: str) -> bool:
        return await self._call(lambda conn: sched.limit_delete(conn, kind))

    async def limit_list(self) -> list[KindLimit]:
        return await self._read(sched.limit_list)

    # -- operations: deleting, paused queues, workers (sqlite_ops.py) -------------------

    async def jobs_delete(self, query: DeleteFilter) -> int:
        return await self._call(lambda conn: ops.jobs_delete(conn, query, self._stamp()))

    async def queue_pause(self, queue: str) -> bool:
        return await self._call(lambda conn: ops.queue_pause(conn, queue, self._stamp()))

    async def queue_resume(self, queue: str) -> bool:
        return await self._call(lambda conn: ops.queue_resume(conn, queue))

    async def queues_snapshot(self, window_seconds: int) -> QueuesSnapshot:
        return await self._call(
            lambda conn: ops.queues_snapshot(conn, self._stamp(), window_seconds)
        )

    async def worker_beat(self, beat: WorkerBeat) -> WorkerSeen:
        return await self._call(lambda conn: ops.worker_beat(conn, beat, self._stamp()))

    async def workers_list(self, seen_within_seconds: float) -> list[WorkerSeen]:
        since = self._stamp() - seen_within_seconds
        return await self._call(lambda conn: ops.workers_list(conn, since))

    async def workers_forget(self, unseen_for_seconds: float) -> int:
        before = self._stamp() - unseen_for_seconds
        return await self._call(lambda conn: ops.workers_forget(conn, before))

    def _stamp(self) -> float:
        return self._clock.now().timestamp()


def _deliver(answers: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
    for future, result, error in answers:
        if future.cancelled():
            continue  # the caller went away; its change, if any, is committed regardless
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
