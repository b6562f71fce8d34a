"""The statements both engines run as written, each once: a driver's ``Tx`` inherits them
and writes only the statements its engine needs otherwise (its clock, its locks, its
indexes, its counter tables).

Parameters are ``?`` here and in ``sql``'s filters; a driver's ``_all``, ``_one`` and
``_changed`` run a statement on its connection (PostgreSQL numbering the marks). Rows are
read by position; a driver converts its stored times (``_time``) and jobs (``_job``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Final

import orjson

from leasehold import job_fields
from leasehold.coordinator.store import sql
from leasehold.coordinator.store.contract import (
    AttemptPage,
    DeadFilter,
    Expired,
    NewJob,
    WorkerBeat,
    WorkerSeen,
)
from leasehold.coordinator.store.flow_sql import FlowStatements
from leasehold.coordinator.store.tally import Tally
from leasehold.model import (
    Attempt,
    AttemptOutcome,
    CatchUp,
    Firing,
    Job,
    JobStatus,
    OnFailure,
    Parent,
    Schedule,
    ScheduleSpec,
)

COLUMNS: Final = job_fields.columns()
INSERT_COLUMNS: Final = (
    "kind, payload, max_attempts, run_after, idempotency_key, request_hash, priority, queue,"
    " headers, timeout_seconds, group_key, weight, start_by, status, created_at"
)
# A job inserted on its own, as its parents, spawn and uniqueness made it (store/jobs.py).
FULL_INSERT_COLUMNS: Final = (
    f"{INSERT_COLUMNS}, waiting_for, depth, blocked_by, spawned_by, spawn_key, unique_key,"
    " last_error, finished_at"
)
# Groups a job was queued in: looked at again by the next lease (store/flow.py).
GROUPS_WOKEN: Final = (
    "INSERT INTO flow_groups (kind, group_key) VALUES (?, ?) ON CONFLICT (kind, group_key)"
    " DO UPDATE SET active = excluded.active, blocked_until = excluded.blocked_until"
)
# The conflict an idempotency key meets: a key is unique per kind (DESIGN.md §21).
KEY_CONFLICT: Final = "ON CONFLICT (kind, idempotency_key) WHERE idempotency_key IS NOT NULL"
SCHEDULE_COLUMNS: Final = (
    "name, cron, timezone, kind, payload, queue, priority, max_attempts, catch_up, enabled,"
    " next_fire_at, last_fire_at, created_at, updated_at"
)
WORKER_COLUMNS: Final = (
    "worker_id, host, pid, version, kinds, queues, concurrency, started_at, last_seen"
)
WORKER_UPSERT: Final = (
    " ON CONFLICT (worker_id) DO UPDATE SET host = excluded.host, pid = excluded.pid,"
    " version = excluded.version, kinds = excluded.kinds, queues = excluded.queues,"
    " concurrency = excluded.concurrency, started_at = excluded.started_at,"
    f" last_seen = excluded.last_seen RETURNING {WORKER_COLUMNS}"
)
SCHEDULE_UPSERT: Final = (
    " ON CONFLICT (name) DO UPDATE SET cron = excluded.cron, timezone = excluded.timezone,"
    " kind = excluded.kind, payload = excluded.payload, queue = excluded.queue,"
    " priority = excluded.priority, max_attempts = excluded.max_attempts,"
    " catch_up = excluded.catch_up, enabled = excluded.enabled,"
    " next_fire_at = excluded.next_fire_at, updated_at = excluded.updated_at"
)
_NO_LIMIT: Final = 2**62


def json_text(value: Any) -> str:
    return orjson.dumps(value).decode()


def names_json(value: tuple[str, ...] | None) -> str | None:
    """A worker's kinds or queues as stored: a JSON list, or NULL for any."""
    return json_text(list(value)) if value is not None else None


def insert_params(
    new: NewJob, payload: str, run_after: Any, start_by: Any = None
) -> tuple[Any, ...]:
    """A new job's columns, from ``kind`` to ``start_by`` in the order of
    ``INSERT_COLUMNS``, with its payload as JSON text and its times as stored."""
    return (
        new.kind,
        payload,
        new.max_attempts,
        run_after,
        new.idempotency_key,
        new.request_hash,
        new.priority,
        new.queue,
        json_text(new.headers) if new.headers is not None else None,
        new.timeout_seconds,
        new.group_key,
        new.weight,
        start_by,
    )


def schedule_params(spec: ScheduleSpec) -> tuple[Any, ...]:
    """A schedule's columns from ``name`` to ``enabled``, as an upsert gives them."""
    return (
        spec.name,
        spec.cron,
        spec.timezone,
        spec.kind,
        json_text(spec.payload),
        spec.queue,
        spec.priority,
        spec.max_attempts,
        spec.catch_up,
        spec.enabled,
    )


class PortableTx(FlowStatements):
    """The statements common to every engine (see the module docstring)."""

    dialect: sql.Dialect

    async def _all(self, statement: str, *params: Any) -> list[Any]:
        raise NotImplementedError

    async def _one(self, statement: str, *params: Any) -> Any:
        raise NotImplementedError

    async def _changed(self, statement: str, *params: Any) -> int:
        """Run a statement; how many rows it changed."""
        raise NotImplementedError

    def _job(self, row: Any) -> Job:
        raise NotImplementedError

    def _time(self, value: Any) -> datetime:
        """A stored time as an aware datetime."""
        raise NotImplementedError

    def _stored(self, value: datetime) -> Any:
        """A datetime as the engine stores it."""
        return self.dialect.as_time(value)

    async def now(self) -> datetime:
        raise NotImplementedError

    async def _ago(self, seconds: float) -> Any:
        """The stored time ``seconds`` before the transaction's now."""
        return self._stored(await self.now() - timedelta(seconds=seconds))

    # Locks a read takes on an engine where others write at once ("" where one writer is
    # alone): rows changed next, or rows whose change must wait for this transaction.
    _row_lock: str = ""

    async def _lock_key(self, key: str) -> None:
        """Hold ``key`` until the transaction ends, against another transaction holding it
        (nothing to do where one writer is alone)."""

    async def _many(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run a statement once per row of parameters."""
        raise NotImplementedError

    def _json_text(self, column: str) -> str:
        """A JSON column read as its text."""
        return column

    def wake(self) -> None:
        raise NotImplementedError

    tally: Tally

    def _index(self, name: str) -> str:
        return self.dialect.indexed_by.format(index=name) if self.dialect.indexed_by else ""

    # -- jobs -------------------------------------------------------------------------------

    async def jobs_read(self, ids: Sequence[int]) -> dict[int, Job]:
        if len(ids) == 1:  # a point read: one row by its key, the plan a primary-key probe
            row = await self._one(f"SELECT {COLUMNS} FROM jobs WHERE id = ?", ids[0])
            return {ids[0]: self._job(row)} if row is not None else {}
        return {job.id: job for job in await self._jobs_where("id", ids)}

    async def jobs_by_key(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Job]:
        wanted = set(keys)
        jobs = await self._jobs_where("idempotency_key", [key for _, key in wanted])
        found = {(job.kind, job.idempotency_key or ""): job for job in jobs}
        return {key: job for key, job in found.items() if key in wanted}

    async def job_insert(self, job: Job) -> Job | None:
        """Insert one job as ``job`` has it (its id aside), counted and announced; None
        when its idempotency key was taken meanwhile."""
        stored = self._stored
        row = await self._one(
            f"INSERT INTO jobs ({FULL_INSERT_COLUMNS})"
            f" VALUES ({', '.join(['?'] * 23)}) {KEY_CONFLICT} DO NOTHING RETURNING {COLUMNS}",
            job.kind,
            json_text(job.payload),
            job.max_attempts,
            stored(job.run_after),
            job.idempotency_key,
            job.request_hash,
            job.priority,
            job.queue,
            json_text(job.headers) if job.headers is not None else None,
            job.timeout_seconds,
            job.group_key,
            job.weight,
            stored(job.start_by) if job.start_by is not None else None,
            str(job.status),
            stored(job.created_at),
            job.waiting_for,
            job.depth,
            job.blocked_by,
            job.spawned_by,
            job.spawn_key,
            job.unique_key,
            job.last_error,
            stored(job.finished_at) if job.finished_at is not None else None,
        )
        if row is None:
            return None
        made = self._job(row)
        self.tally.made(made.queue, made.kind, made.status, made.group_key)
        if made.status is JobStatus.QUEUED:
            self.wake()
        return made

    async def job_spawned(self, parent_id: int, key: str) -> Job | None:
        row = await self._one(
            f"SELECT {COLUMNS} FROM jobs WHERE spawned_by = ? AND spawn_key = ?", parent_id, key
        )
        return self._job(row) if row is not None else None

    async def job_duplicate(
        self, unique_key: str, statuses: Sequence[JobStatus], since: datetime | None
    ) -> Job | None:
        """The newest job with this fingerprint in one of ``statuses`` (created after
        ``since``), locked against a concurrent change where others write too."""
        await self._lock_key(unique_key)
        where = sql.Where(self.dialect)
        where.equal("unique_key", unique_key)
        where.add(self.dialect.any_of, self.dialect.as_list([str(s) for s in statuses]), "status")
        if since is not None:
            where.add("{col} > {p}", self._stored(since), "created_at")
        row = await self._one(
            f"SELECT {COLUMNS} FROM jobs {self._index('jobs_unique')} WHERE {where.sql()}"
            f" ORDER BY id DESC LIMIT 1{self._row_lock}",
            *where.params,
        )
        return self._job(row) if row is not None else None

    async def job_replace(self, before: Job, after: Job) -> bool:
        """A duplicate's new payload and run_after, guarded by the status it was read in."""
        changed = await self._changed(
            "UPDATE jobs SET payload = ?, run_after = ? WHERE id = ? AND status = ?",
            json_text(after.payload),
            self._stored(after.run_after),
            before.id,
            str(before.status),
        )
        return changed == 1

    async def job_states(self, ids: Sequence[int], *, lock: bool) -> dict[int, tuple[Parent, int]]:
        """The jobs as parents (id, kind, status, spawn key) with their depth; ``lock``:
        held against a concurrent change until the transaction ends (in id order): a
        parent's end then waits for the new dependent and its edge to commit."""
        where = sql.Where(self.dialect)
        where.add(self.dialect.any_of, self.dialect.as_list(list(ids)), "id")
        rows = await self._all(
            f"SELECT id, kind, status, spawn_key, depth FROM jobs WHERE {where.sql()}"
            f" ORDER BY id{self._row_lock if lock else ''}",
            *where.params,
        )
        return {
            i: (Parent(i, kind, JobStatus(status), spawn_key=key), depth)
            for i, kind, status, key, depth in rows
        }

    async def deps_insert(self, edges: Sequence[tuple[int, int, OnFailure]]) -> None:
        """Store the edges, and count each on its parent (whose end then looks for its
        dependents: a job without any never does)."""
        await self._many(
            "INSERT INTO job_deps (job_id, parent_id, on_failure) VALUES (?, ?, ?)",
            [(job_id, parent_id, str(mode)) for job_id, parent_id, mode in edges],
        )
        await self._many(
            "UPDATE jobs SET dependents = dependents + 1 WHERE id = ?",
            [(parent_id,) for _, parent_id, _ in edges],
        )

    async def dependents_of(self, parent_ids: Sequence[int]) -> list[tuple[int, int, OnFailure]]:
        """The edges from these parents to dependents still waiting, by dependent."""
        where = sql.Where(self.dialect)
        where.add(self.dialect.any_of, self.dialect.as_list(list(parent_ids)), "job_deps.parent_id")
        rows = await self._all(
            # CROSS JOIN: SQLite keeps the tables in this order, so it starts from the
            # parents' edges (job_deps_parent), never from every waiting job (jobs_status).
            "SELECT job_deps.job_id, job_deps.parent_id, job_deps.on_failure FROM job_deps"
            " CROSS JOIN jobs"
            f" WHERE {where.sql()} AND jobs.id = job_deps.job_id AND jobs.status = 'waiting'"
            " ORDER BY job_deps.job_id, job_deps.parent_id",
            *where.params,
        )
        return [(job_id, parent_id, OnFailure(mode)) for job_id, parent_id, mode in rows]

    async def jobs_blocked_by(self, parent_ids: Sequence[int]) -> list[int]:
        """The jobs these parents' ends cancelled (still cancelled)."""
        where = sql.Where(self.dialect)
        where.add(self.dialect.any_of, self.dialect.as_list(list(parent_ids)), "blocked_by")
        rows = await self._all(
            f"SELECT id FROM jobs {self._index('jobs_blocked_by')}"
            f" WHERE {where.sql()} AND status = 'cancelled' ORDER BY id",
            *where.params,
        )
        return [row[0] for row in rows]

    async def edges_list(
        self, job_id: int, *, parents: bool, after_id: int, limit: int
    ) -> list[Parent]:
        mine, other = ("job_id", "parent_id") if parents else ("parent_id", "job_id")
        rows = await self._all(
            f"SELECT job_deps.{other}, job_deps.on_failure, other.kind, other.status,"
            " other.spawn_key FROM job_deps"
            f" LEFT JOIN jobs AS other ON other.id = job_deps.{other}"
            f" WHERE job_deps.{mine} = ? AND job_deps.{other} > ?"
            f" ORDER BY job_deps.{other} LIMIT ?",
            job_id,
            after_id,
            limit,
        )
        return [
            Parent(
                i,
                kind,
                JobStatus(status) if status is not None else None,
                spawn_key=key,
                on_failure=OnFailure(mode),
            )
            for i, mode, kind, status, key in rows
        ]

    async def parents_of(
        self, job_ids: Sequence[int], *, results: int | None = None
    ) -> dict[int, list[Parent]]:
        """Each job's parents as they stand (a deleted one with no kind nor status), by
        id. With ``results``, their results too while all of them together stay within
        that many bytes; each past it says its result was left out."""
        where = sql.Where(self.dialect)
        where.add(self.dialect.any_of, self.dialect.as_list(list(job_ids)), "job_deps.job_id")
        result = self._json_text("parent.result") if results is not None else "NULL"
        rows = await self._all(
            "SELECT job_deps.job_id, job_deps.parent_id, job_deps.on_failure, parent.kind,"
            f" parent.status, parent.spawn_key, {result} FROM job_deps"
            " LEFT JOIN jobs AS parent ON parent.id = job_deps.parent_id"
            f" WHERE {where.sql()} ORDER BY job_deps.job_id, job_deps.parent_id",
            *where.params,
        )
        found: dict[int, list[Parent]] = {}
        spent = 0
        for job_id, parent_id, mode, kind, status, key, text in rows:
            omitted = False
            value: Any = None
            if text is not None:
                spent += len(text)
                omitted = results is not None and spent > results
                value = None if omitted else orjson.Fragment(text)
            parent = Parent(
                parent_id,
                kind,
                JobStatus(status) if status is not None else None,
                value,
                omitted,
                key,
                OnFailure(mode),
            )
            found.setdefault(job_id, []).append(parent)
        return found

    async def _jobs_where(self, column: str, values: Sequence[Any]) -> list[Job]:
        where = sql.Where(self.dialect)
        where.add(self.dialect.any_of, self.dialect.as_list(list(values)), column)
        rows = await self._all(f"SELECT {COLUMNS} FROM jobs WHERE {where.sql()}", *where.params)
        return [self._job(row) for row in rows]

    async def jobs_dead(self, query: DeadFilter) -> list[int]:
        where = sql.dead(query, self.dialect)
        statement = f"SELECT id FROM jobs WHERE {where.sql()} ORDER BY id LIMIT ?"
        return [row[0] for row in await self._all(statement, *where.params, query.limit)]

    async def attempts_list(self, job_id: int, page: AttemptPage | None) -> list[Attempt]:
        page = page or AttemptPage(limit=_NO_LIMIT)
        rows = await self._all(
            "SELECT job_id, token, worker_id, leased_at, finished_at, outcome, error"
            " FROM attempts WHERE job_id = ? AND token > ? ORDER BY token LIMIT ?",
            job_id,
            page.after_token or 0,
            page.limit,
        )
        return [
            Attempt(j, t, w, self._time(leased), self._maybe_time(ended), AttemptOutcome(o), e)
            for j, t, w, leased, ended, o, e in rows
        ]

    async def jobs_expired(self, limit: int) -> list[Expired]:
        rows = await self._all(
            f"SELECT id, lease_token FROM jobs {self._index('jobs_running_expiry')}"
            " WHERE status = 'running' AND lease_expires_at <= ?"
            " ORDER BY lease_expires_at LIMIT ?",
            await self._ago(0),
            limit,
        )
        return [Expired(job_id, token) for job_id, token in rows]

    async def jobs_ahead(self, job: Job, limit: int) -> int:
        """Counted from the (queue, kind) range of the lease index, up to ``limit``."""
        stored = self._stored
        rows = await self._all(
            f"SELECT count(*) FROM (SELECT 1 FROM jobs {self._index('jobs_pick_queue_kind')}"
            " WHERE status = 'queued' AND queue = ? AND kind = ? AND run_after <= ?"
            " AND (priority > ? OR (priority = ? AND (run_after < ?"
            " OR (run_after = ? AND id < ?)))) LIMIT ?) AS ahead",
            job.queue,
            job.kind,
            await self._ago(0),
            job.priority,
            job.priority,
            stored(job.run_after),
            stored(job.run_after),
            job.id,
            limit,
        )
        return int(rows[0][0])

    async def jobs_past_deadline(self, limit: int) -> list[int]:
        rows = await self._all(
            f"SELECT id FROM jobs {self._index('jobs_start_by')}"
            " WHERE start_by IS NOT NULL AND status IN ('waiting', 'queued') AND start_by <= ?"
            " ORDER BY start_by LIMIT ?",
            await self._ago(0),
            limit,
        )
        return [row[0] for row in rows]

    async def status_counts(self) -> list[tuple[JobStatus, int]]:
        rows = await self._all("SELECT status, count(*) FROM jobs GROUP BY status")
        return [(JobStatus(status), n) for status, n in rows]

    # -- the kept counts (store/tally.py) -----------------------------------------------------

    async def job_counts(self) -> list[tuple[str, str, JobStatus, int]]:
        rows = await self._all(
            "SELECT queue, kind, name, CAST(sum(value) AS BIGINT) FROM counters"
            " WHERE name LIKE 'jobs:%' GROUP BY name, kind, queue"
        )
        return [(q, k, JobStatus(name.removeprefix("jobs:")), n) for q, k, name, n in rows if n]

    async def names_known(self) -> tuple[set[str], set[str]]:
        """The kinds and queues some job has now (a name whose jobs are all gone, deleted
        or pruned, frees its place under the caps)."""
        kinds = await self._all(
            "SELECT kind FROM counters WHERE name LIKE 'jobs:%'"
            " GROUP BY kind HAVING sum(value) <> 0"
        )
        queues = await self._all(
            "SELECT queue FROM counters WHERE name LIKE 'jobs:%' AND queue <> ''"
            " GROUP BY queue HAVING sum(value) <> 0"
        )
        return {row[0] for row in kinds}, {row[0] for row in queues}

    async def counter_totals(self) -> dict[tuple[str, str], int]:
        rows = await self._all(
            "SELECT name, kind, CAST(sum(value) AS BIGINT) FROM counters"
            " WHERE name NOT LIKE 'jobs:%' GROUP BY name, kind"
        )
        return {(name, kind): n for name, kind, n in rows if n}

    async def running(self, kinds: Sequence[str]) -> dict[str, int]:
        """Running jobs of each kind, from the kept counts: exact for what has committed
        (they commit with the changes they count), and no index on running jobs to keep."""
        if not kinds:
            return {}
        where = sql.Where(self.dialect)
        where.equal("name", "jobs:running")
        where.add(self.dialect.any_of, self.dialect.as_list(list(kinds)), "kind")
        statement = f"SELECT kind, CAST(sum(value) AS BIGINT) FROM counters WHERE {where.sql()} GROUP BY kind"
        return {kind: int(n) for kind, n in await self._all(statement, *where.params)}

    async def window_sums(self, seconds: int) -> dict[tuple[str, str], tuple[int, float]]:
        rows = await self._all(
            "SELECT name, kind, CAST(sum(count) AS BIGINT), sum(total) FROM rollups"
            " WHERE second > ? GROUP BY name, kind",
            int((await self.now()).timestamp()) - seconds,
        )
        return {(name, kind): (n, total) for name, kind, n, total in rows}

    async def rollups_prune(self, keep_seconds: int) -> None:
        horizon = int((await self.now()).timestamp()) - keep_seconds
        await self._changed("DELETE FROM rollups WHERE second < ?", horizon)

    async def completed_by_queue(self, seconds: float) -> dict[str, int]:
        rows = await self._all(
            f"SELECT queue, count(*) FROM jobs {self._index('jobs_finished')}"
            " WHERE status = 'completed' AND finished_at IS NOT NULL AND finished_at > ?"
            " GROUP BY queue",
            await self._ago(seconds),
        )
        return {queue: n for queue, n in rows}

    # -- schedules and limits ---------------------------------------------------------------

    async def schedule_get(self, name: str) -> Schedule | None:
        row = await self._one(f"SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE name = ?", name)
        return self._schedule(row) if row is not None else None

    async def schedule_list(self) -> list[Schedule]:
        rows = await self._all(f"SELECT {SCHEDULE_COLUMNS} FROM schedules ORDER BY name")
        return [self._schedule(row) for row in rows]

    async def schedule_delete(self, name: str) -> bool:
        return await self._changed("DELETE FROM schedules WHERE name = ?", name) == 1

    async def schedule_advance(self, schedule: Schedule, firing: Firing) -> bool:
        """The compare-and-set that moves a schedule on: only from the fire time read."""
        last = self._stored(max(firing.fire_times)) if firing.fire_times else None
        moved = await self._changed(
            "UPDATE schedules SET next_fire_at = ?, last_fire_at = coalesce(?, last_fire_at)"
            " WHERE name = ? AND next_fire_at = ?",
            self._stored(firing.next_fire_at),
            last,
            schedule.spec.name,
            self._stored(schedule.next_fire_at),
        )
        return moved == 1

    async def limit_delete(self, kind: str) -> bool:
        return await self._changed("DELETE FROM kind_limits WHERE kind = ?", kind) == 1

    # -- queues and workers -----------------------------------------------------------------

    async def queue_resume(self, queue: str) -> bool:
        return await self._changed("DELETE FROM queue_pauses WHERE queue = ?", queue) == 1

    async def queue_pauses(self) -> dict[str, datetime]:
        rows = await self._all("SELECT queue, paused_at FROM queue_pauses")
        return {queue: self._time(since) for queue, since in rows}

    async def paused_queues(self) -> set[str]:
        return {row[0] for row in await self._all("SELECT queue FROM queue_pauses")}

    async def queue_pause(self, queue: str) -> bool:
        added = await self._changed(
            "INSERT INTO queue_pauses (queue, paused_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
            queue,
            await self._ago(0),
        )
        return added == 1

    async def worker_beat(self, beat: WorkerBeat) -> WorkerSeen:
        row = await self._one(
            f"INSERT INTO workers ({WORKER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            + WORKER_UPSERT,
            beat.worker_id,
            beat.host,
            beat.pid,
            beat.version,
            names_json(beat.kinds),
            names_json(beat.queues),
            beat.concurrency,
            self._stored(beat.started_at),
            await self._ago(0),
        )
        return self._worker(row)

    async def workers_list(
        self, seen_within_seconds: float, limit: int | None, offset: int
    ) -> list[WorkerSeen]:
        rows = await self._all(
            f"SELECT {WORKER_COLUMNS} FROM workers WHERE last_seen >= ?"
            " ORDER BY last_seen DESC, worker_id LIMIT ? OFFSET ?",
            await self._ago(seen_within_seconds),
            _NO_LIMIT if limit is None else limit,
            offset,
        )
        return [self._worker(row) for row in rows]

    async def workers_forget(self, unseen_for_seconds: float, keep: int | None) -> int:
        before = await self._ago(unseen_for_seconds)
        gone = await self._changed("DELETE FROM workers WHERE last_seen < ?", before)
        if keep is not None:  # the most recently seen are kept: a flood of ids ages out
            gone += await self._changed(
                "DELETE FROM workers WHERE worker_id NOT IN (SELECT worker_id FROM workers"
                " ORDER BY last_seen DESC, worker_id LIMIT ?)",
                keep,
            )
        return gone

    # -- rows -------------------------------------------------------------------------------

    def _maybe_time(self, value: Any) -> datetime | None:
        return self._time(value) if value is not None else None

    def _schedule(self, row: Sequence[Any]) -> Schedule:
        row = tuple(row)
        name, cron, zone, kind, payload, queue, priority, attempts, catch_up, enabled = row[:10]
        spec = ScheduleSpec(
            name=name,
            cron=cron,
            timezone=zone,
            kind=kind,
            payload=orjson.loads(payload),
            queue=queue,
            priority=priority,
            max_attempts=attempts,
            catch_up=CatchUp(catch_up),
            enabled=bool(enabled),
        )
        next_fire, last_fire, created, updated = row[10:14]
        return Schedule(
            spec,
            self._time(next_fire),
            self._time(created),
            self._time(updated),
            self._maybe_time(last_fire),
        )

    def _worker(self, row: Sequence[Any]) -> WorkerSeen:
        worker_id, host, pid, version, kinds, queues, concurrency, started, seen = tuple(row)
        beat = WorkerBeat(
            worker_id=worker_id,
            host=host,
            pid=pid,
            version=version,
            kinds=tuple(orjson.loads(kinds)) if kinds is not None else None,
            queues=tuple(orjson.loads(queues)) if queues is not None else None,
            concurrency=concurrency,
            started_at=self._time(started),
        )
        return WorkerSeen(beat, self._time(seen))
