"""The store's contract: what the coordinator needs from a database, and nothing more.

``Store`` is what the service calls, one transaction per method, named noun_verb, taking and
answering the plain data below. Every backend is the same ``store.DriverStore`` on its own
driver (DESIGN.md §11). The rules are not here: the store is handed a ``Decide`` function
(``coordinator/service/decisions.py``) and applies it to the job it reads, inside its
transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from leasehold.coordinator.store.schema import SchemaReport, SchemaState
from leasehold.errors import IdempotencyConflict, LeaseholdError

if TYPE_CHECKING:
    from leasehold.coordinator.store.explain import Facts
from leasehold.model import (
    DEFAULT_PRIORITY,
    DEFAULT_QUEUE,
    JSON,
    MAX_ANSWER_BYTES,
    Attempt,
    Dependency,
    Firing,
    Job,
    JobStatus,
    OnFailure,
    Outcome,
    Parent,
    Schedule,
    ScheduleSpec,
    Unique,
    schedule_idempotency_key,
)


@dataclass(frozen=True, slots=True)
class DeleteFilter:
    """Which jobs a delete takes. Every given field must match; ``statuses`` never holds
    running (the rule is ``rules.transitions.DELETABLE``)."""

    statuses: tuple[JobStatus, ...]
    ids: tuple[int, ...] | None = None
    kind: str | None = None
    queue: str | None = None
    finished_before: datetime | None = None
    # Finished longer ago than this, by the store's clock (retention: the database's clock
    # decides on PostgreSQL, as it does for expiry).
    finished_age_seconds: float | None = None
    limit: int = 1000
    # Leave out a job that a dependent not yet finished still needs (its result goes to the
    # dependent's lease): retention's deletes (DESIGN.md §22).
    keep_needed: bool = False


@dataclass(frozen=True, slots=True)
class QueuesSnapshot:
    now: datetime
    paused: dict[str, datetime]  # queue -> paused since
    oldest_available: dict[str, datetime]  # queue -> run_after of its longest-waiting job
    completed_recent: dict[str, int]  # queue -> jobs completed in the window


@dataclass(frozen=True, slots=True)
class WorkerBeat:
    """What a worker says about itself in each heartbeat."""

    worker_id: str
    host: str
    pid: int
    version: str
    kinds: tuple[str, ...] | None  # None: any kind
    queues: tuple[str, ...] | None  # None: any queue
    concurrency: int
    started_at: datetime


@dataclass(frozen=True, slots=True)
class WorkerSeen:
    beat: WorkerBeat
    last_seen: datetime


Decide = Callable[[Job, datetime], Outcome]
"""A rule bound to its request: takes the stored job and now, returns the outcome."""


@dataclass(frozen=True, slots=True)
class StoreRules:
    """The rules a store applies of its own accord, inside the transaction of a change:
    what a new job's parents make of it, and what a job's end or revival does to the jobs
    that depend on it (DESIGN.md §22). ``coordinator/rules/graph.py`` gives them; a store
    imports no rule, so it is handed these (``store/open.py``)."""

    # The new job as its parents (``job.parents``) make it: waiting, queued or cancelled.
    admit: Callable[[Job, datetime], Job]
    # A parent (id, status: None when deleted) ended: what that does to one dependent.
    parent_ended: Callable[[Job, int, JobStatus | None, OnFailure, datetime], Outcome]
    # A parent that had cancelled this job was requeued (``job.parents`` filled).
    revive: Callable[[Job, datetime], Outcome]
    # A unique job's duplicate takes a newer enqueue's payload and run_after (debounce).
    replace: Callable[[Job, NewJob, datetime], Outcome]


@dataclass(frozen=True, slots=True)
class NewJob:
    kind: str
    payload: JSON
    max_attempts: int
    run_after: datetime | None  # None: available at once
    idempotency_key: str | None
    request_hash: str
    priority: int = DEFAULT_PRIORITY
    queue: str = DEFAULT_QUEUE
    headers: dict[str, str] | None = None  # not part of request_hash (DESIGN.md §21)
    timeout_seconds: float | None = None
    # Fingerprints an earlier release computed for this same request (as given, before
    # defaults were filled in): a key stored then still matches its retry now.
    also_matches: tuple[str, ...] = ()
    # Workflows (DESIGN.md §22): parents by id, and parents among the jobs inserted
    # before it in the same call, by their place there.
    depends_on: tuple[Dependency, ...] = ()
    after: tuple[tuple[int, OnFailure], ...] = ()
    spawned_by: int | None = None  # the running job that spawns it, under ``spawn_key``
    spawn_key: str | None = None
    # Flow control (DESIGN.md §19, §23).
    group_key: str | None = None
    weight: int = 1
    start_by: datetime | None = None
    unique: Unique | None = None
    unique_key: str | None = None  # the fingerprint duplicates are found by
    # Where the request gave it, for errors that name it (("jobs", 3) in a batch).
    loc: tuple[str | int, ...] = ()

    @property
    def plain(self) -> bool:
        """Inserted as it is, queued, with nothing to look up first (no parents, no
        uniqueness, no spawn key): the fast path of a batch."""
        return not (self.depends_on or self.after or self.unique_key or self.spawn_key)

    def matches(self, stored_hash: str | None) -> bool:
        """Whether a job stored under this request's key was enqueued by the same request."""
        return stored_hash == self.request_hash or stored_hash in self.also_matches

    def check_reuse(self, stored_hash: str | None, used_by: str) -> None:
        """The idempotency verdict, for every backend: a key found used (by ``used_by``, as
        "job 7") answers with that job if the request is the same, and is refused if not."""
        if not self.matches(stored_hash):
            # The key itself is not quoted: it is client input (DESIGN.md §10).
            raise IdempotencyConflict(
                f"the idempotency key was used for {used_by} with a different request"
            )


@dataclass(frozen=True, slots=True)
class Inserted:
    job: Job
    created: bool  # False: the idempotency key was used before, ``job`` is that job
    duplicate: bool = False  # ``job`` was there already and this enqueue is its duplicate
    replaced: bool = False  # ... and took this enqueue's payload and run_after


@dataclass(frozen=True, slots=True)
class InsertedAndLeased:
    """What ``job_insert_and_lease`` did: each part succeeded or failed on its own."""

    inserted: list[Inserted]  # empty when ``error`` is set
    error: LeaseholdError | None  # the insert's, as ``job_insert_many`` would raise it
    leased: list[list[Job] | None]  # per lease request; None: that lease failed


@dataclass(frozen=True, slots=True)
class LeaseRequest:
    worker_id: str
    lease_seconds: float
    kinds: tuple[str, ...] | None  # None: any kind
    max_jobs: int = 1
    queues: tuple[str, ...] | None = None  # None: any queue
    # Called with the leased jobs before the lease commits; if it raises, the lease is
    # rolled back and the error raised: no job is leased that its answer cannot carry.
    seal: Callable[[Sequence[Job]], None] | None = field(default=None, compare=False)
    # The worker's id for this request: a retry with the same (worker_id, request_id)
    # within LEASE_REQUEST_WINDOW_SECONDS gets the leases the first one made, not new ones.
    request_id: str | None = None
    # Bytes of parents' results a dependent's lease may carry (DESIGN.md §22).
    parents_budget: int = MAX_ANSWER_BYTES // 2


# How long a lease request id is remembered (PROTOCOL.md, "Lease idempotency").
LEASE_REQUEST_WINDOW_SECONDS = 300.0


def lease_order(job: Job) -> tuple[int, datetime, int]:
    """The order jobs are leased in: highest priority, then oldest run_after, then id."""
    return (-job.priority, job.run_after, job.id)


@dataclass(frozen=True, slots=True)
class JobFilter:
    status: JobStatus | None = None
    kind: str | None = None
    after_id: int | None = None  # cursor: jobs after this id in the list's order
    limit: int = 100
    queue: str | None = None
    error_contains: str | None = None  # a substring of last_error
    idempotency_key: str | None = None
    descending: bool = False  # newest first
    # Stop the page before the jobs' payloads and results (as stored JSON) pass this many
    # bytes; the first job is always included. None: no budget.
    max_bytes: int | None = None
    summary: bool = False  # leave payload and result out (not even read): None in the jobs


class Decided(list[Outcome | None]):
    """What ``jobs_decide`` did: an outcome per item (None for an unknown id); ``carried``:
    what that did, in the same transaction, to the jobs that depend on them (§22)."""

    carried: list[Outcome]

    def __init__(self, items: Sequence[Outcome | None] = ()) -> None:
        super().__init__(items)
        self.carried = []


class Deleted(int):
    """How many jobs ``jobs_delete`` deleted; ``carried``: what that did, in the same
    transaction, to the jobs that depended on them (DESIGN.md §22)."""

    carried: list[Outcome]

    def __new__(cls, n: int = 0, carried: Sequence[Outcome] = ()) -> Deleted:
        deleted = super().__new__(cls, n)
        deleted.carried = list(carried)
        return deleted


class Leased(list[Job]):
    """The jobs a lease took; ``retry_at``: when a rate limit that held jobs back lets
    some go (a waiting lessee looks again then), or None."""

    retry_at: datetime | None = None


class JobList(list[Job]):
    """A page of jobs; ``cut``: it stopped at its byte budget and more jobs follow."""

    cut: bool = False


@dataclass(frozen=True, slots=True)
class AttemptPage:
    after_token: int | None = None  # cursor: attempts with a larger token
    limit: int = 100


@dataclass(frozen=True, slots=True)
class DeadFilter:
    kind: str | None = None
    error_contains: str | None = None
    limit: int = 1000


@dataclass(frozen=True, slots=True)
class Expired:
    job_id: int
    token: int


@dataclass(frozen=True, slots=True)
class StatsSnapshot:
    """What /stats and /metrics are computed from, read in one transaction."""

    now: datetime
    counts: dict[tuple[str, JobStatus], int]  # (kind, status) -> jobs; zeros may be absent
    totals: dict[tuple[str, str], int]  # (event, kind) -> count since the database began
    # window seconds -> (event, kind) -> (count, sum of its values) over that window
    windows: dict[int, dict[tuple[str, str], tuple[int, float]]]
    oldest_available_at: datetime | None  # run_after of the longest-waiting available job
    queue_counts: dict[tuple[str, JobStatus], int] = field(default_factory=dict)  # by queue
    # (queue, kind) -> queued jobs: what a worker would have to serve to take them
    queued_pairs: dict[tuple[str, str], int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most ``limit`` units started in any ``period_seconds`` (a job takes its weight),
    for the whole kind or, ``per_group``, for each group key apart (DESIGN.md §19)."""

    limit: int
    period_seconds: float
    per_group: bool = False


@dataclass(frozen=True, slots=True)
class Flow:
    """A kind's limits (DESIGN.md §19); any of them may be set. ``fair``: its group keys
    take turns at its leases, which they also do with a limit per group."""

    max_running: int | None = None
    max_running_per_group: int | None = None
    rate: RateLimit | None = None
    fair: bool = False

    @property
    def turns(self) -> bool:
        """The kind's groups take turns (round robin) at its leases."""
        return (
            self.fair
            or self.max_running_per_group is not None
            or (self.rate is not None and self.rate.per_group)
        )

    @property
    def planned(self) -> bool:
        """A lease of the kind chooses its jobs one by one (turns, weights), rather than
        taking the first due ones up to the kind's room."""
        return self.turns or self.rate is not None


@dataclass(frozen=True, slots=True)
class KindLimit:
    kind: str
    max_running: int | None
    running: int  # jobs of the kind running now, counted when read
    flow: Flow = field(default_factory=Flow)  # every limit of the kind


PlanFires = Callable[[Schedule, datetime], Firing]
"""The scheduler's rule bound to its settings: takes a due schedule and now."""
FirstFire = Callable[[ScheduleSpec, datetime], datetime]
"""Where a new or replaced schedule starts, given now."""


@dataclass(frozen=True, slots=True)
class Fired:
    """What firing one due schedule did."""

    name: str
    firing: Firing
    jobs: list[Inserted]  # one per fire time; created False: another coordinator got there


def scheduled_job(schedule: Schedule, fire_time: datetime) -> NewJob:
    """The job a schedule enqueues for one fire time, keyed so it exists at most once."""
    spec = schedule.spec
    key = schedule_idempotency_key(spec.name, fire_time)
    return NewJob(
        kind=spec.kind,
        payload=spec.payload,
        max_attempts=spec.max_attempts,
        run_after=None,
        idempotency_key=key,
        request_hash=key,  # never compared: a used key means "already fired"
        priority=spec.priority,
        queue=spec.queue,
    )


class Store(Protocol):
    """A job database. Every method is one transaction."""

    async def open(self) -> SchemaReport:
        """Connect, refuse a schema newer than this release (``SchemaTooNew``), run pending
        migrations and raise the lease tokens to their floor (DESIGN.md §24, §4)."""
        ...

    async def schema_inspect(self) -> SchemaState:
        """The schema against this release's migrations, read on a connection of its own:
        the store need not be open, and nothing is locked or changed."""
        ...

    async def schema_state(self) -> SchemaState:
        """The same, read by an open store (the coordinator's schema watch)."""
        ...

    async def coordinators_below(self, version: int) -> int:
        """Database sessions of coordinators that know less than ``version`` (those that
        must stop before a coordinator that raised the floor to it serves)."""
        ...

    async def close(self) -> None: ...

    def subscribe(
        self,
        on_available: Callable[[], None],
        on_finished: Callable[[Sequence[int] | None], None] | None = None,
    ) -> None:
        """Call ``on_available`` (on the event loop) whenever another store on the same
        database may have made work available, so that long polls wake across coordinators,
        and ``on_finished`` with the ids of jobs it finished (None: any may have), so that
        result waits do (this store's own changes may be reported too). Called before
        ``open``; a store that no other process writes to never calls them."""
        ...

    async def now(self) -> datetime:
        """The store's notion of the current time (see the module docstring)."""
        ...

    async def job_insert_many(self, jobs: Sequence[NewJob]) -> list[Inserted]:
        """Insert jobs in one transaction; a used idempotency key yields the existing job.

        A key used before with a different ``request_hash`` raises IdempotencyConflict and
        inserts none of the jobs.
        """
        ...

    async def job_insert_and_lease(
        self, jobs: Sequence[NewJob], leases: Sequence[LeaseRequest]
    ) -> InsertedAndLeased:
        """``job_insert_many``, then each ``job_lease`` in turn, committed together where
        the backend can (SQLite: one commit for all), so that a job enqueued for a waiting
        lessee is handed over with one commit instead of two. Every part is answered on
        its own: a refused insert fails no lease, a failed lease no other."""
        ...

    async def job_lease(self, request: LeaseRequest) -> Leased:
        """Lease up to ``max_jobs`` available jobs: highest priority first, then oldest
        run_after, then lowest id; never more running jobs of a kind than its limit.

        Each leased job gets a new lease token from the coordinator-wide sequence (above
        every token issued before: DESIGN.md §4), attempts + 1, status running, the lease's
        owner and expiry, and a new attempt record; all in one statement per job set.
        ``request.seal`` is called with the jobs before the commit.

        With a ``request_id`` seen from the same worker within the window, nothing new is
        leased: the answer is the jobs that request got that are still running under the
        tokens it got (possibly none; ``seal`` is called on them too). Otherwise the jobs
        leased are recorded under the id, in the same transaction.
        """
        ...

    async def job_get(self, job_id: int) -> Job | None: ...

    async def jobs_decide(self, items: Sequence[tuple[int, Decide]]) -> Decided:
        """For each (id, decide): read the job, decide, and write the outcome if it changed,
        guarded by the token and status that were read. One transaction for all; None for
        an unknown id. The changes are carried to the jobs that depend on them."""
        ...

    async def jobs_expired(self, limit: int) -> list[Expired]:
        """Running jobs whose lease has run out, oldest expiry first."""
        ...

    async def job_explain(self, job_id: int) -> Facts | None:
        """What a lease of the job's kind would meet now (None: no such job)."""
        ...

    async def jobs_past_deadline(self, limit: int) -> list[int]:
        """Waiting and queued jobs whose start deadline has passed, earliest first."""
        ...

    async def names_known(self) -> tuple[set[str], set[str]]:
        """The distinct kinds and queues of the jobs in this database now, for the caps on
        distinct names (a name no job has any more is not among them)."""
        ...

    async def job_next_run_after(self, after: datetime) -> datetime | None:
        """The earliest run_after later than ``after`` among queued jobs: when the next job
        becomes due as time passes (None: none will). Found without stepping over jobs."""
        ...

    async def job_list(self, query: JobFilter) -> JobList:
        """Jobs ordered by id, after the cursor, filtered, within the byte budget."""
        ...

    async def jobs_dead(self, query: DeadFilter) -> list[int]:
        """Ids of dead jobs matching the filter, ordered by id."""
        ...

    async def attempts_list(self, job_id: int, page: AttemptPage | None = None) -> list[Attempt]:
        """The job's lease history, oldest first (tokens increase); one page of it, after
        the page's cursor, when ``page`` is given."""
        ...

    async def edges_list(
        self, job_id: int, *, parents: bool, after_id: int, limit: int
    ) -> list[Parent]:
        """One page of a job's parents (``parents``) or dependents, by id after
        ``after_id``, each as it stands now (no results)."""
        ...

    async def ping(self) -> None:
        """One cheap statement along the path writes take (the readiness check); raises
        Unavailable when the database cannot answer."""
        ...

    async def counts_by_status(self) -> dict[JobStatus, int]:
        """Jobs by status counted from the jobs themselves: the ground truth that the
        counts kept for ``stats`` must agree with (slow on big tables; tests and checks)."""
        ...

    async def stats(self, windows: Sequence[int]) -> StatsSnapshot:
        """Counts by kind and status, event totals, and per-window event sums (events
        "leased" carry wait seconds, "completed" run seconds), in one read."""
        ...

    async def prune(self, keep_seconds: int) -> None:
        """Drop windowed figures older than ``keep_seconds``."""
        ...

    async def counter_totals(self) -> dict[tuple[str, str], int]:
        """Totals by (event name, kind) counted since the database was created."""
        ...

    # -- schedules --------------------------------------------------------------------

    async def schedule_put(self, spec: ScheduleSpec, first: FirstFire) -> tuple[Schedule, bool]:
        """Create or replace a schedule, starting at ``first(spec, now)``; True if created."""
        ...

    async def schedule_get(self, name: str) -> Schedule | None: ...

    async def schedule_list(self) -> list[Schedule]:
        """Every schedule, by name."""
        ...

    async def schedule_delete(self, name: str) -> bool:
        """False if there was no such schedule."""
        ...

    async def schedules_fire(self, plan: PlanFires, limit: int) -> list[Fired]:
        """For up to ``limit`` enabled schedules that are due: plan, enqueue one job per
        planned fire time (``scheduled_job``; a used key is a run enqueued before) and move
        ``next_fire_at`` with a compare-and-set on the value read, all in one transaction.
        Schedules that another coordinator is firing right now are left to it."""
        ...

    # -- concurrency limits -------------------------------------------------------------

    async def limit_put(self, kind: str, flow: Flow) -> KindLimit:
        """Set every limit of the kind (those not given are lifted)."""
        ...

    async def limit_delete(self, kind: str) -> bool:
        """False if no limit was set for the kind."""
        ...

    async def limit_list(self) -> list[KindLimit]:
        """Every limit, by kind, with the kind's running jobs counted now."""
        ...

    # -- operations: deleting, paused queues, workers (store/contract.py) ----------------------

    async def jobs_delete(self, query: DeleteFilter) -> Deleted:
        """Delete up to ``query.limit`` jobs matching the filter, with their attempt records
        and edges, in one short transaction; how many went. Running jobs are never deleted.
        On a shared database, rows another transaction holds are skipped (left to it or the
        next batch). A job deleted unfinished ends its waiting dependents (§22)."""
        ...

    async def job_spawn(
        self, parent_id: int, check: Decide, jobs: Sequence[NewJob]
    ) -> list[Inserted]:
        """Insert the children of a running job, keyed by (parent, spawn key): a key the
        parent used before yields the child made then. ``check`` (the fencing rule) runs on
        the parent, locked, first; its error is raised and nothing is inserted."""
        ...

    async def queue_pause(self, queue: str) -> bool:
        """Pause a queue; False if it was paused already."""
        ...

    async def queue_resume(self, queue: str) -> bool:
        """Resume a queue; False if it was not paused."""
        ...

    async def queues_snapshot(self, window_seconds: int) -> QueuesSnapshot:
        """Paused queues, each queue's oldest available job and its completions in the last
        ``window_seconds``, in one read."""
        ...

    async def worker_beat(self, beat: WorkerBeat) -> WorkerSeen:
        """Record a worker's heartbeat, last seen now."""
        ...

    async def workers_list(
        self, seen_within_seconds: float, limit: int | None = None, offset: int = 0
    ) -> list[WorkerSeen]:
        """Workers seen within the last ``seen_within_seconds``, most recently seen first;
        ``limit`` of them (None: all) after the first ``offset``."""
        ...

    async def groups_count(self) -> int:
        """How many group keys the database knows (the cap on distinct ones)."""
        ...

    async def groups_known(self, groups: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        """Those of these (kind, group key) pairs the database knows."""
        ...

    async def flow_prune(self) -> int:
        """Forget rate-limit units that no longer count and groups idle with nothing
        queued; how many rows went."""
        ...

    async def workers_forget(self, unseen_for_seconds: float, keep: int | None = None) -> int:
        """Drop workers not seen for ``unseen_for_seconds``, and, with ``keep``, all but the
        ``keep`` most recently seen; how many."""
        ...
