"""Typed tasks: declare a job kind once, as a function with typed parameters.

::

    @task(kind="send-email", queue="mail", max_attempts=3)
    async def send_email(to: str, subject: str, retries: int = 0) -> str:
        ...

    handle = send_email.enqueue(sync_client, to="ada@example.com", subject="hi")
    handle = await send_email.enqueue(async_client, to="ada@example.com", subject="hi")
    message_id = handle.result(timeout=10)          # (await ... with an async client)
    send_email.options(queue="urgent", priority=10).enqueue(sync_client, ...)

A retry policy goes with the declaration: ``@task(retry_on=(TimeoutError,),
fail_on=(CardDeclined,), backoff=exponential(base=2, max=600))`` retries timeouts only,
fails a declined card for good at once, and asks for its own delays (see
``leasehold.worker.retries``).

``enqueue`` takes the function's own parameters (``ParamSpec``), so a type checker refuses
a wrong argument at the call site; at run time Pydantic checks them against the signature
before anything is sent. The worker (``registry.register(send_email)``) validates the
payload into the same types before the function runs; a payload that does not fit fails
the job for good (``PermanentFailure``), since running it again cannot fix it. The job is
an ordinary job of that kind: other languages enqueue it with the same JSON payload, the
parameters by name (or, for a function of one Pydantic model, that model's JSON).

Workflows (``leasehold.tasks.workflows``): ``task.step(...)`` is a job not enqueued yet, with
its arguments checked the same way; ``a.then(b)`` chains steps, ``group(steps)`` runs them
side by side and ``group(steps).then(c)`` fans them in; ``.enqueue(client)`` sends the whole
graph in one request and answers a handle on its last step. A step's handler reads its
parents' results with ``a.results()`` / ``a.result()``, typed by ``a``'s return type.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar, overload

from leasehold.client import Client, NewJob, SyncClient
from leasehold.model import JSON, Job, JobStatus
from leasehold.tasks.handles import AsyncHandle, Handle
from leasehold.tasks.payload import PayloadError, PayloadSchema, result_adapter
from leasehold.tasks.workflows import Group, Workflow, group
from leasehold.worker.context import current_job
from leasehold.worker.errors import PermanentFailure
from leasehold.worker.job import LeasedJob
from leasehold.worker.retries import (
    DEFAULT_RULES,
    Backoff,
    ExceptionTypes,
    RetryRules,
    exponential,
    fixed,
)
from leasehold.worker.threads import in_daemon_thread

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "Group",
    "Task",
    "TaskOptions",
    "TaskTimeout",
    "Workflow",
    "exponential",
    "fixed",
    "group",
    "task",
]

# The drivers whose connections a task enqueues through in their transaction.
_DATABASE_DRIVERS = frozenset({"asyncpg", "psycopg"})

P = ParamSpec("P")
R = TypeVar("R")


class TaskTimeout(TimeoutError):
    """The task's function ran longer than its ``timeout``; the job is retried."""


@dataclass(frozen=True, slots=True)
class TaskOptions:
    """How a task's jobs are enqueued and run; None leaves it to the coordinator's default.

    ``timeout`` bounds one run of the function in the worker (seconds): past it, the run
    fails (retried while attempts remain). ``idempotency_key`` is a literal key for one
    call (``task.options(idempotency_key=...)``); the task's key function, if any, makes
    one from the arguments otherwise.
    """

    queue: str | None = None
    priority: int | None = None
    max_attempts: int | None = None
    timeout: float | None = None
    run_after: datetime | None = None
    idempotency_key: str | None = None


class Task(Generic[P, R]):
    """A job kind bound to a typed function; made by ``@task(...)``."""

    def __init__(
        self,
        fn: Callable[P, Any],
        kind: str,
        options: TaskOptions,
        key: Callable[..., str] | None = None,
        retry: RetryRules = DEFAULT_RULES,
    ) -> None:
        if not kind or not kind.strip():
            raise ValueError(f"a job kind is a non-empty string, not {kind!r}")
        self.fn = fn
        self.kind = kind
        self.defaults = options
        self.key = key
        self.retry = retry  # applied by the worker that runs its jobs (registry.register)
        self.schema = PayloadSchema(fn)
        self._result = result_adapter(fn)
        self.__doc__ = fn.__doc__
        self.__name__ = getattr(fn, "__name__", kind)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Any:
        """Call the function itself, here and now (in tests, say)."""
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Task {self.kind!r} {self.schema.describe()}>"

    def options(
        self,
        *,
        queue: str | None = None,
        priority: int | None = None,
        max_attempts: int | None = None,
        timeout: float | None = None,
        run_after: datetime | None = None,
        idempotency_key: str | None = None,
    ) -> Task[P, R]:
        """The same task with some options changed, for one call or a few."""
        given: dict[str, Any] = {
            "queue": queue,
            "priority": priority,
            "max_attempts": max_attempts,
            "timeout": timeout,
            "run_after": run_after,
            "idempotency_key": idempotency_key,
        }
        changed = {name: value for name, value in given.items() if value is not None}
        view: Task[P, R] = Task.__new__(Task)
        view.__dict__.update(self.__dict__)
        view.defaults = dataclasses.replace(self.defaults, **changed)
        return view

    # -- producing ----------------------------------------------------------------------

    def payload(self, *args: P.args, **kwargs: P.kwargs) -> JSON:
        """The JSON payload a call with these arguments enqueues (``PayloadError`` if they
        do not fit the signature)."""
        return self.schema.dump(self.schema.bind(args, kwargs))

    def new_job(self, *args: P.args, **kwargs: P.kwargs) -> NewJob:
        """The job a call with these arguments enqueues, for ``client.enqueue_many``."""
        return self._new(args, kwargs)

    def step(self, *args: P.args, **kwargs: P.kwargs) -> Workflow[R]:
        """A job of this task with these arguments (checked as ``enqueue`` checks them),
        not enqueued yet: a step of a workflow (``a.then(b)``, ``group(steps)``;
        ``leasehold.tasks.workflows``)."""
        return Workflow(self._new(args, kwargs), self.decode)

    def _new(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> NewJob:
        arguments = self.schema.bind(args, kwargs)
        payload = self.schema.dump(arguments)
        o = self.defaults
        key = o.idempotency_key
        if key is None and self.key is not None:
            key = self.key(**arguments)
        return NewJob(self.kind, payload, o.max_attempts, o.run_after, key, o.priority, o.queue)

    @overload
    def enqueue(self, client: SyncClient, /, *args: P.args, **kwargs: P.kwargs) -> Handle[R]: ...

    @overload
    def enqueue(
        self, client: Client, /, *args: P.args, **kwargs: P.kwargs
    ) -> Coroutine[Any, Any, AsyncHandle[R]]: ...

    @overload
    def enqueue(
        self, client: psycopg.Connection[Any], /, *args: P.args, **kwargs: P.kwargs
    ) -> Job: ...

    @overload
    def enqueue(
        self, client: psycopg.AsyncConnection[Any], /, *args: P.args, **kwargs: P.kwargs
    ) -> Coroutine[Any, Any, Job]: ...

    def enqueue(
        self, client: Any, /, *args: P.args, **kwargs: P.kwargs
    ) -> Handle[R] | Coroutine[Any, Any, AsyncHandle[R]] | Job | Coroutine[Any, Any, Job]:
        """Enqueue a job of this task: with a ``SyncClient``, now, answering a ``Handle``;
        with an async ``Client``, a coroutine answering an ``AsyncHandle``. The arguments
        are checked before anything is sent, in both cases.

        With a database connection instead (asyncpg, or psycopg 3) on the coordinators'
        PostgreSQL, the job is added in that connection's transaction and exists only if
        it commits (``leasehold.transactional``): answered with the ``Job`` as inserted
        (a coroutine answering it, for asyncpg and psycopg's ``AsyncConnection``). Wait for
        its result after the commit, with a client (``task.decode`` types it)."""
        new = self._new(args, kwargs)
        if isinstance(client, SyncClient):
            return Handle(client, client.enqueue_many([new])[0], self.decode)
        if type(client).__module__.partition(".")[0] in _DATABASE_DRIVERS:
            from leasehold import transactional  # the coordinator's checks: on first use

            return transactional.enqueue_one(client, new)
        return self._enqueue(client, new)

    async def _enqueue(self, client: Client, new: NewJob) -> AsyncHandle[R]:
        (job,) = await client.enqueue_many([new])
        return AsyncHandle(client, job, self.decode)

    def decode(self, result: JSON) -> R:
        """A stored result as the function's return type."""
        if self._result is None:
            return result  # type: ignore[no-any-return] # no annotation: R is Any
        value: R = self._result.validate_python(result)
        return value

    # -- consuming ----------------------------------------------------------------------

    def results(self, job: LeasedJob | None = None) -> list[R]:
        """In a handler: the results of the job's parents of this task's kind that
        completed, as the function's return type, in id order (a group's, in the order
        it gave its steps). ``job`` defaults to ``current_job()``. A parent that did not
        complete (on an ``on_failure="run"`` edge) has none and is left out:
        ``job.parents`` has every parent with its status."""
        parents = (job or current_job()).parents
        return [
            self.decode(p.result)
            for p in parents
            if p.kind == self.kind and p.status is JobStatus.COMPLETED
        ]

    def result(self, job: LeasedJob | None = None) -> R:
        """In a handler: the result of the job's one completed parent of this task's kind
        (a chain's previous step), as ``results`` gives it; ``LookupError`` unless there
        is exactly one."""
        found = self.results(job)
        if len(found) != 1:
            job_id = (job or current_job()).id
            raise LookupError(
                f"job {job_id} has {len(found)} completed parents of kind {self.kind!r}, not one"
            )
        return found[0]

    async def handle(self, job: LeasedJob) -> JSON:
        """The worker's handler: the payload validated into the signature's types, then the
        function (on a thread of its own unless it is ``async def``), within ``timeout``."""
        try:
            kwargs = self.schema.load(job.payload)
        except PayloadError as exc:
            raise PermanentFailure(f"{self.kind}: {exc}") from None
        timeout = self.defaults.timeout
        try:
            async with asyncio.timeout(timeout) as limit:
                result = await self._run(kwargs)
        except TimeoutError:
            if limit.expired():
                raise TaskTimeout(f"{self.kind} ran over its timeout of {timeout} s") from None
            raise
        return result if self._result is None else self._result.dump_python(result, mode="json")

    async def _run(self, kwargs: dict[str, Any]) -> Any:
        fn: Callable[..., Any] = self.fn
        if inspect.iscoroutinefunction(fn):
            return await fn(**kwargs)
        result = await in_daemon_thread(lambda kw: fn(**kw), kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result


class _Declare:
    """What ``task(...)`` answers: the decorator, keeping the function's types."""

    def __init__(
        self,
        kind: str | None,
        options: TaskOptions,
        key: Callable[..., str] | None,
        retry: RetryRules,
    ):
        self.kind, self.options, self.key, self.retry = kind, options, key, retry

    @overload
    def __call__(self, fn: Callable[P, Awaitable[R]]) -> Task[P, R]: ...

    @overload
    def __call__(self, fn: Callable[P, R]) -> Task[P, R]: ...

    def __call__(self, fn: Callable[P, Any]) -> Task[P, Any]:
        kind = self.kind or str(getattr(fn, "__name__", ""))
        return Task(fn, kind, self.options, self.key, self.retry)


def task(
    *,
    kind: str | None = None,
    queue: str | None = None,
    priority: int | None = None,
    max_attempts: int | None = None,
    timeout: float | None = None,
    idempotency_key: Callable[..., str] | None = None,
    retry_on: ExceptionTypes | None = None,
    fail_on: ExceptionTypes | None = None,
    backoff: Backoff | None = None,
) -> _Declare:
    """Declare a typed task (see the module's docstring). ``kind`` defaults to the
    function's name; ``idempotency_key`` is called with the enqueue's arguments, all by
    name and defaults included, and answers the job's key (the same arguments, the same
    job).

    The retry policy, applied by the worker: ``retry_on`` (exception types) retries only
    those, anything else fails the job for good; ``fail_on`` fails those for good whatever
    ``retry_on`` says; ``backoff`` is the delay before each retry, a function of the
    failed attempt's number (``exponential(...)``, ``fixed(...)`` or your own). Without
    them every exception is retried after the coordinator's backoff. ``max_attempts``
    still bounds the tries, and ``Retry`` / ``PermanentFailure`` raised by the function
    say it for one failure."""
    options = TaskOptions(
        queue=queue, priority=priority, max_attempts=max_attempts, timeout=timeout
    )
    return _Declare(kind, options, idempotency_key, RetryRules.of(retry_on, fail_on, backoff))
