"""Enqueue inside your own database transaction, on the PostgreSQL your coordinators share.

::

    async with conn.transaction():                      # asyncpg
        await conn.execute("INSERT INTO accounts (email) VALUES ($1)", email)
        job = await enqueue(conn, "send-welcome", {"to": email})

    with psycopg.connect(url) as conn:                 # psycopg 3: commits when the block ends
        conn.execute("INSERT INTO accounts (email) VALUES (%s)", (email,))
        job = enqueue(conn, "send-welcome", {"to": email})

    await send_welcome.enqueue(conn, to=email)          # a typed task (leasehold.tasks)

The job exists if and only if the transaction commits: a rollback leaves no job, no count
changed, nothing for a worker to see. A coordinator leases it as soon as the commit's
notification reaches it. Until then no coordinator sees it, and ``job`` is the row as
this transaction holds it.

The checks are the HTTP enqueue's (422 there is ``InvalidRequest`` here, or one of its
subclasses), and so are idempotency keys and unique jobs: the same key with the same
request gives back the job already stored, however it was enqueued. The database checks
the job again in ``leasehold_enqueue`` (its schema and the role an application needs:
DESIGN.md §26), which inserts it, counts it and wakes the coordinators as their own
enqueue does.

With an asyncpg connection or a psycopg ``AsyncConnection``, ``enqueue`` returns a
coroutine; with a psycopg ``Connection``, the job itself. Outside a transaction the job
commits alone (asyncpg, or psycopg in autocommit mode).
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict, Unpack, overload

from leasehold import tracing
from leasehold.client import NewJob
from leasehold.model import JSON, Dependency, Job, Unique
from leasehold.transactional import _connections
from leasehold.transactional._prepare import prepared

if TYPE_CHECKING:
    import psycopg

__all__ = ["Options", "enqueue", "enqueue_many", "enqueue_one"]


class Options(TypedDict, total=False):
    """An enqueue's options, as ``Client.enqueue`` and the HTTP enqueue name them; what is
    left out gets the coordinator's default."""

    max_attempts: int | None
    run_after: datetime | None
    idempotency_key: str | None
    priority: int | None
    queue: str | None
    headers: dict[str, str] | None
    timeout_seconds: float | None
    depends_on: Sequence[int | Dependency] | None
    group_key: str | None
    weight: int | None
    start_by: datetime | None
    unique: Unique | None


@overload
def enqueue(
    conn: psycopg.Connection[Any], kind: str, payload: JSON = None, **options: Unpack[Options]
) -> Job: ...


@overload
def enqueue(
    conn: psycopg.AsyncConnection[Any], kind: str, payload: JSON = None, **options: Unpack[Options]
) -> Coroutine[Any, Any, Job]: ...


@overload
def enqueue(
    conn: Any, kind: str, payload: JSON = None, **options: Unpack[Options]
) -> Job | Coroutine[Any, Any, Job]: ...


def enqueue(
    conn: Any, kind: str, payload: JSON = None, **options: Unpack[Options]
) -> Job | Coroutine[Any, Any, Job]:
    """Add a job in ``conn``'s transaction (see the module's docstring)."""
    given: dict[str, Any] = dict(options)
    depends_on = given.pop("depends_on", None)
    if depends_on is not None:
        given["depends_on"] = tuple(
            d if isinstance(d, Dependency) else Dependency(d) for d in depends_on
        )
    new = NewJob(kind, payload, **given)
    return enqueue_one(conn, new)


def enqueue_one(conn: Any, job: NewJob) -> Job | Coroutine[Any, Any, Job]:
    """Add one ``NewJob`` in ``conn``'s transaction: the job, or (on an async connection) a
    coroutine answering it. Typed tasks enqueue through this."""
    if _connections.kind_of(conn) == "psycopg":
        return _sync(conn, job)
    return _first(enqueue_many(conn, [job]))


async def _first(jobs: Coroutine[Any, Any, list[Job]]) -> Job:
    return (await jobs)[0]


@overload
def enqueue_many(conn: psycopg.Connection[Any], jobs: Sequence[NewJob]) -> list[Job]: ...


@overload
def enqueue_many(
    conn: psycopg.AsyncConnection[Any], jobs: Sequence[NewJob]
) -> Coroutine[Any, Any, list[Job]]: ...


@overload
def enqueue_many(
    conn: Any, jobs: Sequence[NewJob]
) -> list[Job] | Coroutine[Any, Any, list[Job]]: ...


def enqueue_many(conn: Any, jobs: Sequence[NewJob]) -> list[Job] | Coroutine[Any, Any, list[Job]]:
    """Add these jobs in ``conn``'s transaction, in order, each checked as the HTTP enqueue
    checks it; the first refused raises, and the caller's rollback undoes the others. A job
    may depend on one added before it in the same transaction, by its id."""
    driver = _connections.kind_of(conn)
    if driver == "psycopg":
        return [_sync(conn, job) for job in jobs]
    insert = (
        _connections.insert_asyncpg if driver == "asyncpg" else _connections.insert_psycopg_async
    )

    async def each() -> list[Job]:
        made = []
        for job in jobs:
            with tracing.producing(job.kind) as span:
                made.append(await insert(conn, prepared(job)))
                tracing.sent(span, [made[-1].id])
        return made

    return each()


def _sync(conn: Any, job: NewJob) -> Job:
    with tracing.producing(job.kind) as span:
        made = _connections.insert_psycopg(conn, prepared(job))
        tracing.sent(span, [made.id])
    return made
