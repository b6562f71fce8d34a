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
    Flow,
    JobFilter,
    LeaseRequest,
    NewJob,
    WorkerBeat,
    WorkerSeen,
)
from leasehold.coordinator.store.migrations import Migration
from leasehold.coordinator.store.schema import Floor, SchemaRecord
from leasehold.coordinator.store.tally import Tally
from leasehold.model import (
    Attempt,
    Firing,
    Job,
    JobStatus,
    OnFailure,
    Outcome,
    Parent,
    Schedule,
    ScheduleSpec,
)

T = TypeVar("T")


class Head(NamedTuple):
    """A due job as a planned lease sees it before taking it (``store/flow.py``)."""

    priority: int
    run_after: Any  # as the engine keeps it (ordered like the time)
    id: int
    kind: str
    group_key: str | None
    weight: int


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

    async def clock(self) -> datetime:
        """The time now, later than ``now`` where the transaction waited (for a lock):
        what a rate limit's window is measured to."""
        ...

    # -- jobs ---------------------------------------------------------------------------

    async def jobs_insert(self, jobs: Sequence[NewJob]) -> list[Job | None]:
        """Insert the jobs; for each, the job made, or None where its idempotency key was
        taken (by a job stored before, or by an earlier item of ``jobs``). Each job made is
        counted (``Tally.made``) and announced (``wake``) with it."""
        ...

    async def jobs_by_key(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Job]:
        """The jobs stored under these (kind, idempotency key) pairs."""
        ...

    async def job_insert(self, job: Job) -> Job | None:
        """Insert one job as ``job`` has it (its id aside: the stored job has its own),
        counted and announced; None where its idempotency key was taken meanwhile."""
        ...

    async def job_spawned(self, parent_id: int, key: str) -> Job | None:
        """The child this parent spawned under this key, if any."""
        ...

    async def job_duplicate(
        self, unique_key: str, statuses: Sequence[JobStatus], since: datetime | None
    ) -> Job | None:
        """The newest job with this unique fingerprint in one of ``statuses`` (created
        after ``since``), with the fingerprint held until the transaction ends where
        others insert at once (so two duplicates never both go in)."""
        ...

    async def job_replace(self, before: Job, after: Job) -> bool:
        """Write ``after``'s payload and run_after, guarded by ``before``'s status."""
        ...

    async def job_states(self, ids: Sequence[int], *, lock: bool) -> dict[int, tuple[Parent, int]]:
        """These jobs as parents, with their depth; ``lock``: against a concurrent change
        (in id order), until the transaction ends."""
        ...

    async def deps_insert(self, edges: Sequence[tuple[int, int, OnFailure]]) -> None:
        """Store (job, parent, on_failure) edges."""
        ...

    async def dependents_of(self, parent_ids: Sequence[int]) -> list[tuple[int, int, OnFailure]]:
        """The (job, parent, on_failure) edges from these parents to waiting jobs."""
        ...

    async def jobs_blocked_by(self, parent_ids: Sequence[int]) -> list[int]:
        """The cancelled jobs whose cancellation these parents' ends caused."""
        ...

    async def edges_list(
        self, job_id: int, *, parents: bool, after_id: int, limit: int
    ) -> list[Parent]:
        """A page of a job's parents or dependents (as ``Store.edges_list``)."""
        ...

    async def parents_of(
        self, job_ids: Sequence[int], *, results: int | None = None
    ) -> dict[int, list[Parent]]:
        """Each job's parents by id; with ``results``, their results within that budget."""
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

    async def jobs_past_deadline(self, limit: int) -> list[int]: ...

    def jobs_page(self, query: JobFilter) -> AsyncGenerator[tuple[int, Job], None]:
        """The jobs of a list in its order, each with the bytes of its stored payload and
        result, read a few at a time (a page over its budget is never read whole)."""
        ...

    async def jobs_dead(self, query: DeadFilter) -> list[int]: ...

    async def jobs_delete(self, query: DeleteFilter) -> list[tuple[int, str, str, JobStatus, int]]:
        """Delete one batch with its attempt records and the edges to its parents; the
        (id, queue, kind, status, dependents) of each job deleted. On a shared database,
        rows another transaction holds are skipped."""
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

    async def kind_flows(self, kinds: Sequence[str], *, lock: bool = False) -> dict[str, Flow]:
        """The limits set on any of ``kinds``; ``lock``: lock their rows, in kind order,
        until the transaction ends."""
        ...

    async def lease_heads(
        self, kinds: Sequence[str], caps: Sequence[int], queues: Sequence[str] | None, n: int
    ) -> list[Head]:
        """The first ``n`` due jobs of these kinds (each at most its cap) from ``queues``
        (None: any), in lease order, locked where others lease at once (those another
        transaction holds are skipped)."""
        ...

    async def group_heads(
        self, kind: str, group_key: str | None, queues: Sequence[str] | None, n: int
    ) -> list[Head]:
        """The first ``n`` due jobs of one group of a kind (None: the jobs without a
        group), in lease order, locked as ``lease_heads``'."""
        ...

    async def group_next_due(self, kind: str, group_key: str | None) -> datetime | None:
        """The earliest run_after among the group's queued jobs (None: it has none)."""
        ...

    async def lease_take(self, request: LeaseRequest, ids: Sequence[int]) -> list[Job]:
        """Lease exactly these jobs (those still queued) as ``lease_grant`` would."""
        ...

    async def groups_next(self, kind: str, now: datetime, limit: int) -> list[tuple[str, int]]:
        """The kind's groups whose turn is oldest, awake by ``now``: (group key, turn),
        each locked where others lease at once (those held by another are skipped)."""
        ...

    async def groups_ahead(self, kind: str, group_key: str, now: datetime) -> int:
        """Groups of the kind awake by ``now`` whose turn comes before this group's."""
        ...

    async def jobs_ahead(self, job: Job, limit: int) -> int:
        """Due jobs of the job's kind and queue before it in lease order (at most
        ``limit``)."""
        ...

    async def groups_running(self, kind: str, groups: Sequence[str]) -> dict[str, int]:
        """Running jobs of each group of the kind, from the kept counts."""
        ...

    async def groups_turned(self, kind: str, rows: Sequence[tuple[str, int, bool, float]]) -> None:
        """Write groups' places: (group key, turn, active, asleep until as seconds since
        the epoch)."""
        ...

    async def rate_started(
        self, kind: str, groups: Sequence[str], since_slot: int
    ) -> dict[str, list[tuple[int, int]]]:
        """Units started under the kind's rate limit, by group: (slot, units) from
        ``since_slot`` on."""
        ...

    async def rate_start(self, rows: Sequence[tuple[str, str, int, int, float]]) -> None:
        """Count units started: (kind, group, slot, units, when the slot stops counting)."""
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

    async def limit_upsert(self, kind: str, flow: Flow) -> None:
        """Set the kind's limits; a rate limit's period changed starts its count afresh,
        and the kind's groups are all looked at again."""
        ...

    async def limit_delete(self, kind: str) -> bool: ...

    async def limits_all(self) -> list[tuple[str, Flow]]:
        """Every kind's limits, by kind."""
        ...

    async def groups_count(self) -> int: ...

    async def groups_known(self, groups: Sequence[tuple[str, str]]) -> set[tuple[str, str]]: ...

    async def flow_prune(self, now: datetime) -> int:
        """Forget units no longer counted, and groups idle with nothing queued; how many
        rows went."""
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
