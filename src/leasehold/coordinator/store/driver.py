"""The driver contract: what a database driver gives the algorithms every backend shares.

A driver holds its SQL, its row mapping and what only its engine can do (SQLite's writer
thread and group commit, PostgreSQL's pool, arrays, ``SKIP LOCKED`` and notifications).
Everything with a loop or a decision is written once, above the drivers, as ``async``
functions of a ``Tx`` (``leasing``, ``jobs``, ``figures``, ``scheduling``, ``migrate``),
and run by ``Driver.write`` or ``Driver.read`` as one transaction.

A ``Tx`` is one transaction on one connection. Its methods are its statements, named
noun_verb, and each is one statement or a few that only that engine needs. PostgreSQL's
await the server; SQLite's run at once on the writer thread (or a reader), where the
driver steps the shared coroutine to its end without an event loop: a SQLite ``Tx``
never suspends (``sqlite.driver.step``).

"Now" comes from the driver: the coordinator's clock on SQLite (the only writer), the
database's on PostgreSQL, so that coordinators with skewed clocks agree on expiry.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Coroutine, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, Protocol, TypeVar

from leasehold.coordinator.store.contract import (
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
from leasehold.coordinator.store.migrations import Migration
from leasehold.coordinator.store.schema import Floor, SchemaRecord
from leasehold.coordinator.store.tally import Tally
from leasehold.model import Attempt, Firing, Job, JobStatus, Outcome, Schedule, ScheduleSpec

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Narrow:
    """The capped form of a lease grant: only ``kinds``, each at most its ``caps`` entry
    (how many more of it may run), from ``queues`` (None: any queue not paused)."""

    kinds: tuple[str, ...]
    caps: tuple[int, ...]
    queues: tuple[str, ...] | None


class Tx(Protocol):
    """One transaction's statements (see the module docstring)."""

    tally: Tally
    """What this transaction counts; the driver writes it before the commit."""
    concurrent: bool
    """Whether another transaction may lease at the same time (several coordinators): then
    a lease of a limited kind locks the kind's limit first."""

    def wake(self) -> None:
        """Work may have become available: tell the other coordinators' long polls at
        commit (a driver alone on its database does nothing)."""

    def finished(self, job_ids: Sequence[int]) -> None:
        """These jobs ended (completed, dead, cancelled): tell the other coordinators'
        result waits at commit (a driver alone on its database does nothing)."""

    async def now(self) -> datetime: ...

    # -- jobs ---------------------------------------------------------------------------

    async def jobs_insert(self, jobs: Sequence[NewJob]) -> list[Job | None]:
        """Insert the jobs; for each, the job made, or None where its idempotency key was
        taken (by a job stored before, or by an earlier item of ``jobs``). Each job made is
        counted (``Tally.made``) and announced (``wake``) with it."""
        ...

    async def jobs_by_key(self, keys: Sequence[str]) -> dict[str, Job]:
        """The jobs stored under these idempotency keys."""
        ...

    async def jobs_read(self, ids: Sequence[int]) -> dict[int, Job]: ...

    async def jobs_lock(self, ids: Sequence[int]) -> tuple[datetime | None, dict[int, Job]]:
        """The jobs, locked for this transaction in id order (so that two batches never
        deadlock), and the transaction's now (None if no job was found)."""
        ...

    async def jobs_write(self, writes: Sequence[tuple[Job, Outcome]], now: datetime) -> int:
        """Write decisions on distinct jobs, each guarded by the token and status it was
        decided on (``before``), and close the attempts they end; how many guarded writes
        went through."""
        ...

    async def jobs_expired(self, limit: int) -> list[Expired]: ...

    def jobs_page(self, query: JobFilter) -> AsyncGenerator[tuple[int, Job], None]:
        """The jobs of a list in its order, each with the bytes of its stored payload and
        result, read a few at a time (a page over its budget is never read whole)."""
        ...

    async def jobs_dead(self, query: DeadFilter) -> list[int]: ...

    async def jobs_delete(self, query: DeleteFilter) -> list[tuple[str, str, JobStatus]]:
        """Delete one batch with its attempt records; the (queue, kind, status) of each job
        deleted. On a shared database, rows another transaction holds are skipped."""
        ...

    async def job_next_run_after(self, after: datetime) -> datetime | None: ...

    async def attempts_list(self, job_id: int, page: AttemptPage | None) -> list[Attempt]: ...

    # -- leasing ------------------------------------------------------------------------

    async def lease_grant(self, request: LeaseRequest, narrow: Narrow | None) -> list[Job] | None:
        """Lease the first due jobs the request may take, in lease order: new tokens, one
        more attempt, running under the lease, an attempt record each, counted. Without
        ``narrow`` (the plain form) it declines, with None, when a limit or a paused queue
        could apply to the jobs it might take; with it, it takes only what ``narrow``
        allows. The token and attempt rules are the grant's own (DESIGN.md, "Storage")."""
        ...

    async def lease_replay(self, request: LeaseRequest) -> list[tuple[int, int]] | None:
        """The (job id, token) pairs an earlier request with this worker and request id was
        granted, or None for a request id not seen within the window; forgets ids past it."""
        ...

    async def lease_record(self, request: LeaseRequest, jobs: Sequence[Job]) -> None: ...

    async def paused_queues(self) -> set[str]: ...

    async def queued_queues(self) -> list[str]:
        """The queues that hold queued jobs."""
        ...

    async def queued_kinds(self, limit: int) -> list[str]:
        """The kinds that hold queued jobs, at most ``limit``."""
        ...

    async def head_kinds(self, n: int, queues: Sequence[str] | None) -> dict[str, int]:
        """The kinds of the first ``n`` due jobs a lease could take (from ``queues``), with
        how many of each, read without locks."""
        ...

    async def kind_limits(self, kinds: Sequence[str], *, lock: bool = False) -> dict[str, int]:
        """The concurrency limits set on any of ``kinds``; ``lock``: lock their rows, in
        kind order, until the transaction ends."""
        ...

    async def running(self, kinds: Sequence[str]) -> dict[str, int]:
        """Running jobs of each kind, from the kept counts."""
        ...

    # -- counts and figures ---------------------------------------------------------------

    async def job_counts(self) -> list[tuple[str, str, JobStatus, int]]:
        """The kept counts: (queue, kind, status, jobs), the zeros left out."""
        ...

    async def status_counts(self) -> list[tuple[JobStatus, int]]:
        """Jobs by status, counted from the jobs themselves."""
        ...

    async def names_known(self) -> tuple[set[str], set[str]]: ...

    async def counter_totals(self) -> dict[tuple[str, str], int]: ...

    async def window_sums(self, seconds: int) -> dict[tuple[str, str], tuple[int, float]]:
        """Events over the last ``seconds``: (name, kind) -> (count, sum of values)."""
        ...

    async def rollups_prune(self, keep_seconds: int) -> None: ...

    async def oldest_queued(self, queue: str | None) -> datetime | None:
        """run_after of the oldest queued job (of ``queue``), due or not."""
        ...

    async def completed_by_queue(self, seconds: float) -> dict[str, int]:
        """Jobs completed in the last ``seconds``, by queue."""
        ...

    # -- schedules and limits -------------------------------------------------------------

    async def schedule_upsert(
        self, spec: ScheduleSpec, next_fire_at: datetime, now: datetime
    ) -> tuple[Schedule, bool]:
        """Create or replace; True if created."""
        ...

    async def schedule_get(self, name: str) -> Schedule | None: ...

    async def schedule_list(self) -> list[Schedule]: ...

    async def schedule_delete(self, name: str) -> bool: ...

    async def schedules_due(self, limit: int) -> tuple[datetime | None, list[Schedule]]:
        """Now (None may stand for it when none is due), and the enabled schedules due by
        now, locked (those another transaction holds are skipped: another coordinator is
        firing them)."""
        ...

    async def schedule_advance(self, schedule: Schedule, firing: Firing) -> bool:
        """Move ``next_fire_at`` on, only from the value read; False if it had moved."""
        ...

    async def limit_upsert(self, kind: str, max_running: int) -> None: ...

    async def limit_delete(self, kind: str) -> bool: ...

    async def limits_all(self) -> list[tuple[str, int]]:
        """Every (kind, max_running), by kind."""
        ...

    # -- queues and workers -------------------------------------------------------------

    async def queue_pause(self, queue: str) -> bool: ...

    async def queue_resume(self, queue: str) -> bool: ...

    async def queue_pauses(self) -> dict[str, datetime]: ...

    async def worker_beat(self, beat: WorkerBeat) -> WorkerSeen: ...

    async def workers_list(
        self, seen_within_seconds: float, limit: int | None, offset: int
    ) -> list[WorkerSeen]: ...

    async def workers_forget(self, unseen_for_seconds: float, keep: int | None) -> int: ...

    # -- schema ---------------------------------------------------------------------------

    async def schema_read(self) -> SchemaRecord:
        """The migrations applied and the floor, as recorded; nothing (and no table made)
        for a new database."""
        ...

    async def schema_prepare(self) -> None:
        """Make the tables that record the schema (migrations applied, the floor)."""
        ...

    async def migration_apply(self, migration: Migration) -> None: ...

    async def schema_floor_set(self, floor: Floor) -> None: ...

    async def tokens_raise(self, first: int) -> None:
        """Make the next lease token at least ``first`` (a sequence above it stays)."""
        ...

    async def coordinators_below(self, version: int) -> int:
        """How many database sessions coordinators that know less than ``version`` hold
        (0 where one coordinator is the database's only user)."""
        ...


Op = Callable[[Tx], Coroutine[Any, Any, T]]


class Write(NamedTuple):
    """One of the writes ``Driver.write_each`` runs; ``single`` as for ``Driver.write``."""

    op: Op[Any]
    single: bool = False


class Driver(Protocol):
    """A database's connections and transactions (see the module docstring)."""

    dialect: str
    """The migrations' folder: ``sqlite`` or ``postgres``."""

    async def open(self, migrate: Op[T]) -> T:
        """Connect, and run ``migrate`` in a transaction that holds the database's
        migration lock (one migrator at a time, even across processes); its answer."""
        ...

    async def inspect(self, op: Op[T]) -> T:
        """Run a read on a connection of its own, without opening the store: nothing is
        locked, made or changed (``leasehold migrate status`` on a database in use)."""
        ...

    async def close(self) -> None: ...

    def subscribe(
        self,
        on_available: Callable[[], None],
        on_finished: Callable[[Sequence[int] | None], None] | None,
    ) -> None:
        """Call ``on_available`` (on the event loop) when another coordinator on the same
        database may have made work available (``Tx.wake``), and ``on_finished`` with the
        jobs it finished (``Tx.finished``; None: any may have, after a lost connection)."""
        ...

    async def now(self) -> datetime: ...

    async def ping(self) -> None:
        """One cheap statement along the path writes take."""
        ...

    async def write(self, op: Op[T], *, small: bool = False, single: bool = False) -> T:
        """Run ``op`` as one transaction and commit. ``small``: one job's worth (SQLite
        may commit it on the event loop); ``single``: its statements need no transaction
        around them (PostgreSQL then sends no BEGIN and COMMIT)."""
        ...

    async def write_each(self, writes: Sequence[Write], *, small: bool = False) -> list[Any]:
        """Each write on its own (one failing undoes none of the others), committed
        together where the engine can (SQLite: one commit); each one's answer, or the
        exception it raised."""
        ...

    async def read(self, op: Op[T], *, point: bool = False) -> T:
        """Run ``op`` as one read transaction; ``point``: it reads one row by its key."""
        ...
