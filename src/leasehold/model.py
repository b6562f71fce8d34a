"""The job and its states, a rule's outcome, schedules: plain data shared by the rules,
the stores and the API.

This module imports nothing else from leasehold at run time, so every layer can depend on
it (the stores import only this, ``job_fields``, ``errors`` and ``clock``:
scripts/check_imports.py). How each field of the job is stored and sent is in
``job_fields``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from leasehold.errors import LeaseholdError

JSON = Any
"""Any value that survives a JSON round trip (dict, list, str, int, float, bool, None)."""


class JobStatus(StrEnum):
    WAITING = "waiting"  # waits for the jobs it depends on to complete; not leasable yet
    QUEUED = "queued"  # waiting for a lease; leasable once run_after has passed
    RUNNING = "running"  # leased to one worker under lease_token until lease_expires_at
    COMPLETED = "completed"  # a worker reported success; final, never changes again
    DEAD = "dead"  # failed for good (attempts used up or not retryable); requeue revives it
    CANCELLED = "cancelled"  # an operator cancelled it; never leased again unless requeued


FINISHED: frozenset[JobStatus] = frozenset(
    {JobStatus.COMPLETED, JobStatus.DEAD, JobStatus.CANCELLED}
)
"""The statuses a job ends in (it may still be requeued, which starts it again)."""

UNFINISHED: frozenset[JobStatus] = frozenset(
    {JobStatus.WAITING, JobStatus.QUEUED, JobStatus.RUNNING}
)
"""The statuses of a job that may still run: a parent's result is kept for them (§22)."""


class OnFailure(StrEnum):
    """What a dependent does when a parent it depends on ends without completing (dead,
    cancelled, or deleted): the edge's choice (DESIGN.md §22)."""

    CANCEL = "cancel"  # the dependent is cancelled too, naming the parent (the default)
    RUN = "run"  # the dependent runs anyway once the parent has ended (a cleanup step)


@dataclass(frozen=True, slots=True)
class Dependency:
    """One parent a job waits for: the parent's id, and what its failure does."""

    id: int
    on_failure: OnFailure = OnFailure.CANCEL


@dataclass(frozen=True, slots=True)
class Parent:
    """A parent as a dependent's lease shows it: its id, kind, status and result (None
    when ``result_omitted``: the parents' results passed the answer's share for them, and
    ``GET /jobs/{id}`` has it), and the key it was spawned under, if any."""

    id: int
    kind: str | None  # None (with the status): the parent was deleted
    status: JobStatus | None = None
    result: JSON = None
    result_omitted: bool = False
    spawn_key: str | None = None
    on_failure: OnFailure = OnFailure.CANCEL  # the edge's choice


@dataclass(frozen=True, slots=True)
class Unique:
    """When an enqueue is a duplicate of a job already there (DESIGN.md §23).

    The job's kind always counts; ``queue``, the whole ``payload``, some top-level
    payload ``fields`` and a ``key`` count when given. A job with the same of these is a
    duplicate while it is in one of ``states``, and, with ``period_seconds``, only if it
    was created within that many seconds. ``replace``: a duplicate still waiting or queued
    takes the newer enqueue's payload and run_after instead (a debounce)."""

    key: str | None = None
    fields: tuple[str, ...] | None = None
    payload: bool = False
    queue: bool = False
    period_seconds: float | None = None
    states: tuple[JobStatus, ...] | None = None  # None: the default of DESIGN.md §23
    replace: bool = False


class Report(StrEnum):
    """What has been said under the job's current lease_token.

    The fencing rules look at it to tell an idempotent repeat from a conflicting report.
    """

    COMPLETED = "completed"  # the holder reported success
    FAILED = "failed"  # the holder reported failure
    RELEASED = "released"  # the holder handed the job back unfinished
    REVOKED = "revoked"  # an operator requeued the job: the token may no longer report


class AttemptOutcome(StrEnum):
    RUNNING = "running"  # the lease is still held (or expired but not yet reaped)
    COMPLETED = "completed"
    FAILED = "failed"
    EXPIRED = "expired"  # the reaper found the lease run out
    RELEASED = "released"
    CANCELLED = "cancelled"  # ended by a cancellation (reported by the holder, or reaped)


# The defaults of a job, each in one place: an enqueue, a schedule, the client and the
# command line that leave one out get these.
DEFAULT_QUEUE = "default"
DEFAULT_PRIORITY = 0  # higher is leased first
DEFAULT_MAX_ATTEMPTS = 5
# The bounds the protocol puts on them (422 beyond); the command line checks them too.
MIN_PRIORITY, MAX_PRIORITY = -1000, 1000
MAX_ATTEMPTS_LIMIT = 1000

# The protocol's bounds on one request, which both sides know (GET /protocol states them).
MAX_LEASE_SECONDS = 86_400.0  # a lease's length, and an attempt's time limit
MAX_WAIT_SECONDS = 30.0  # one long poll; a longer wait is a few polls in a row
# A long poll waits at most this share of the lease it grants (protocol 1.2), so that a
# worker that got no answer can ask again under the same request id, and get the leases
# the lost answer carried, while they still run (PROTOCOL.md §5).
LEASE_WAIT_SHARE = 0.25
MAX_PAGE_LIMIT = 1000  # jobs, or attempts, in one page (GET /jobs, GET /jobs/{id}/attempts)
MAX_REQUEUE_LIMIT = 10_000  # dead jobs one POST /jobs/requeue moves
# How often the Python worker sends its heartbeat; the coordinator's presence rules count a
# worker live for three of them (coordinator/rules/presence.py).
BEAT_SECONDS = 5.0

# Caps of the coordinator that its settings and its service both default to: a service is
# also made without settings (in tests), and neither of the two imports the other.
MAX_ANSWER_BYTES = 8 * 1024 * 1024  # jobs' JSON in one answer (a page, a batch lease)
MAX_KINDS = 1000  # distinct kinds accepted (DESIGN.md §10)
MAX_QUEUES = 100  # distinct queues accepted
MAX_WAITING_POLLS = 4096  # long polls waiting at once (DESIGN.md §9)
MAX_WAITING_RESULTS = 4096  # result waits (GET /jobs/{id}?wait_seconds) at once (§9)
MAX_WORKERS = 1000  # workers kept and listed: the most recently seen (DESIGN.md §16)
MAX_GROUPS = 100_000  # distinct group keys with jobs (DESIGN.md §19)
# Workflows (DESIGN.md §22): parents one job may wait for, and the longest chain of them.
MAX_PARENTS = 10_000
MAX_DEPTH = 1000


@dataclass(frozen=True, slots=True)
class Job:
    """One unit of work and its lease. Times are aware UTC datetimes."""

    id: int
    kind: str
    payload: JSON
    status: JobStatus
    attempts: int
    max_attempts: int
    run_after: datetime
    created_at: datetime
    lease_token: int = 0
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    lease_seconds: float | None = None  # the length the current lease was granted for
    leased_at: datetime | None = None
    finished_at: datetime | None = None
    idempotency_key: str | None = None
    request_hash: str | None = None  # fingerprint of the enqueue request, for idempotency
    result: JSON = None
    last_error: str | None = None
    report: Report | None = None
    priority: int = DEFAULT_PRIORITY  # higher is leased first
    queue: str = DEFAULT_QUEUE
    # Set by a cancel of a running job: its holder is told at its next renew, and its next
    # report (or the reaper) ends it as cancelled. Stays set on the cancelled job.
    cancel_requested: bool = False
    releases: int = 0  # times the job was released; the first few give the attempt back
    # Set by the producer, handed to every lessee: trace context (traceparent, ...).
    headers: dict[str, str] | None = None
    # Seconds the worker lets one attempt run before it cancels it (None: no limit).
    timeout_seconds: float | None = None
    # Workflows (DESIGN.md §22): parents not yet done with (while waiting), the longest
    # chain of parents above it, the jobs that depend on it, the parent whose end
    # cancelled it, the running job that spawned it and the key it spawned it under.
    waiting_for: int = 0
    depth: int = 0
    dependents: int = 0
    blocked_by: int | None = None
    spawned_by: int | None = None
    spawn_key: str | None = None
    # Flow control (DESIGN.md §19): the tenant or account its kind's limits count it
    # under, its cost under a rate limit, the time by which it must start, and the
    # fingerprint duplicates are found by.
    group_key: str | None = None
    weight: int = 1
    start_by: datetime | None = None
    unique_key: str | None = None
    # Not stored: the parents a dependent's lease hands over with it (filled by a lease).
    parents: tuple[Parent, ...] | None = None

    def replace(self, **changes: Any) -> Job:
        """A copy with some fields changed (jobs are immutable values)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, slots=True)
class Attempt:
    """The record one lease leaves in the job's history."""

    job_id: int
    token: int
    worker_id: str
    leased_at: datetime
    finished_at: datetime | None
    outcome: AttemptOutcome
    error: str | None = None


@dataclass(frozen=True, slots=True)
class EnqueueSpec:
    """One job to enqueue, as a producer gives it: None leaves a field to the coordinator's
    default. The one list of an enqueue's fields: the client sends it (``client.NewJob``),
    the wire's enqueue request has the same fields in the same order (``EnqueueRequest``,
    which refuses to drift) and becomes the service's ``Enqueue``, which is it too."""

    kind: str
    payload: JSON = None
    max_attempts: int | None = None
    run_after: datetime | None = None
    idempotency_key: str | None = None
    priority: int | None = None
    queue: str | None = None
    headers: dict[str, str] | None = None  # handed to the workers; not in the fingerprint
    timeout_seconds: float | None = None
    depends_on: tuple[Dependency, ...] | None = None  # parents by id (DESIGN.md §22)
    group_key: str | None = None
    weight: int | None = None
    start_by: datetime | None = None
    unique: Unique | None = None


class Event(StrEnum):
    """What the coordinator counts, per kind: a rule's outcome names the events it makes
    (``Outcome.events``) and the store keeps their totals and per-second rollups. The
    values are stored in the database and are the keys of /stats' ``totals``: never change
    one. Their order is the order /stats lists them in."""

    ENQUEUED = "enqueued"
    LEASED = "leased"
    RENEWED = "renewed"
    COMPLETED = "completed"
    FAILED = "failed"  # a failure report accepted (the job retried, or dead: also DEAD)
    DEAD = "dead"
    LEASE_EXPIRED = "lease_expired"  # the reaper found the lease run out
    STALE_TOKEN = "stale_token"  # a report or renewal refused for an older token
    RELEASED = "released"
    REQUEUED = "requeued"
    CANCEL_REQUESTED = "cancel_requested"  # a running job marked for cancelling
    CANCELLED = "cancelled"
    DEADLINE_MISSED = "deadline_missed"  # not started by its start_by: ended cancelled
    DUPLICATE = "duplicate"  # an enqueue answered with a job already there (unique)


# /stats and /metrics name this many kinds (and queues), the largest by job count; the rest
# are added up apart (/stats `folded`), so that thousands of names cannot make them huge.
TOP_NAMES = 50
# The label /metrics counts the rest under: empty, which no kind or queue can be (they are
# 1-200 characters, not blank), and which PromQL reads as the label missing.
OTHER = ""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a rule (coordinator/rules/transitions.py) decided about one job; the store applies it."""

    job: Job
    changed: bool = False
    error: LeaseholdError | None = None
    # Closes the history record of lease ``job.lease_token`` with this outcome.
    attempt: AttemptOutcome | None = None
    # The totals to count (per kind).
    events: tuple[Event, ...] = dataclasses.field(default=())
    # For a completion: how long the attempt ran, from its lease to the report. The
    # COMPLETED rollup sums it (/stats' run times); the rule measures it, not the store.
    ran_seconds: float = 0.0

    def counted(self) -> list[tuple[Event, float]]:
        """Each event to count, with the value its rollup sums (run time, or 0)."""
        return [
            (event, self.ran_seconds if event == Event.COMPLETED else 0.0) for event in self.events
        ]


# -- schedules (the rules that fire them are in coordinator/rules/fire_times.py) ------------------------


class CatchUp(StrEnum):
    SKIP = "skip"  # missed fire times get no job
    ONCE = "once"  # the latest missed fire time gets one job


# The defaults of a schedule besides its jobs' (above): PUT /schedules and the command line
# that leave one out get these.
DEFAULT_TIMEZONE = "UTC"
DEFAULT_CATCH_UP = CatchUp.SKIP


UNSERVED_HEADER = "Leasehold-Unserved"
"""On an enqueue's answer: the due jobs' (queue, kind) pairs no live worker serves, as a
JSON array of ``{"queue", "kind"}`` objects (ASCII: other characters escaped)."""

SCHEDULE_NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"
"""A schedule's name: checked by the coordinator, and where code declares one."""


@dataclass(frozen=True, slots=True)
class ScheduleSpec:
    """A schedule as an operator sets it (PUT /schedules/{name})."""

    name: str
    cron: str
    kind: str
    timezone: str = DEFAULT_TIMEZONE
    payload: JSON = None
    queue: str = DEFAULT_QUEUE
    priority: int = DEFAULT_PRIORITY
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    catch_up: CatchUp = DEFAULT_CATCH_UP
    enabled: bool = True


@dataclass(frozen=True, slots=True)
class Schedule:
    """A stored schedule: its spec and where it stands."""

    spec: ScheduleSpec
    next_fire_at: datetime  # the earliest fire time that has not been handled yet
    created_at: datetime
    updated_at: datetime
    last_fire_at: datetime | None = None  # the latest fire time that got a job


@dataclass(frozen=True, slots=True)
class Firing:
    """What the scheduler does with one due schedule."""

    fire_times: tuple[datetime, ...]  # each gets one job, oldest first
    next_fire_at: datetime
    missed: bool = False  # some fire times passed while no scheduler ran


RESERVED_KEY_PREFIX = "schedule:"
"""Idempotency keys the scheduler uses; producers may not (they could claim a run first)."""


def schedule_idempotency_key(name: str, fire_time: datetime) -> str:
    """One job per schedule and fire time, however many coordinators try."""
    return f"{RESERVED_KEY_PREFIX}{name}:{fire_time.astimezone(UTC).isoformat()}"
