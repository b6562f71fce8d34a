"""Which handler runs which kind of job."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, Protocol, TypeAlias, TypeVar

from leasehold.client import NewJob
from leasehold.model import DEFAULT_TIMEZONE, JSON, CatchUp, ScheduleSpec
from leasehold.worker.context import Hook
from leasehold.worker.job import LeasedJob
from leasehold.worker.retries import DEFAULT_RULES, Backoff, ExceptionTypes, RetryRules
from leasehold.worker.schedules import declare

# A handler is `async def handler(job)` or a plain `def handler(job)` (run on a thread);
# what it returns (JSON) is the job's result.
Handler: TypeAlias = Callable[[LeasedJob], Awaitable[Any]] | Callable[[LeasedJob], Any]
H = TypeVar("H", bound=Handler)


class TaskLike(Protocol):
    """What ``Registry.register`` takes: a typed task (``leasehold.tasks.Task``)."""

    @property
    def kind(self) -> str: ...

    @property
    def retry(self) -> RetryRules: ...

    async def handle(self, job: LeasedJob) -> Any: ...


T = TypeVar("T", bound=TaskLike)
K = TypeVar("K", bound=Hook)


class Registry(Mapping[str, Handler]):
    """Handlers by job kind::

        registry = Registry()

        @registry.handler("send-email")
        async def send_email(job: LeasedJob) -> dict[str, str]:
            ...

    Typed tasks are registered with ``registry.register(send_email)`` (or as a decorator
    above ``@task``). Start-up and shutdown hooks (``on_startup``, ``on_shutdown``) run
    once per worker (see ``leasehold.worker.context``). Periodic jobs are declared with
    ``registry.schedule(...)`` and synced to the coordinator when a worker starts (see
    ``leasehold.worker.schedules``; with ``prune_schedules``, the registry owns every
    schedule of its kinds and the undeclared ones are deleted). A plain dict
    ``{kind: handler}`` works wherever a Registry does (``Registry.of``).
    """

    def __init__(
        self, handlers: Mapping[str, Handler] | None = None, *, prune_schedules: bool = False
    ) -> None:
        self.schedules: dict[str, ScheduleSpec] = {}
        self.prune_schedules = prune_schedules
        self._handlers: dict[str, Handler] = {}
        self._timeouts: dict[str, float] = {}
        self._retries: dict[str, RetryRules] = {}
        self.startup: list[Hook] = []
        self.shutdown: list[Hook] = []
        for kind, handler in (handlers or {}).items():
            self.add(kind, handler)

    def register(self, task: T) -> T:
        """Register a typed task under its kind, with its retry policy; answers it, so it
        stacks as a decorator."""
        self.add(task.kind, task.handle)
        self._retries[task.kind] = task.retry
        return task

    def on_startup(self, hook: K) -> K:
        """A decorator: run ``hook(ctx)`` once when the worker starts, before it leases."""
        self.startup.append(hook)
        return hook

    def on_shutdown(self, hook: K) -> K:
        """A decorator: run ``hook(ctx)`` once when the worker stops, after its last job."""
        self.shutdown.append(hook)
        return hook

    def schedule(
        self,
        name: str,
        job: str | NewJob,
        *,
        cron: str,
        timezone: str = DEFAULT_TIMEZONE,
        payload: JSON = None,
        catch_up: CatchUp | str = CatchUp.SKIP,
        enabled: bool = True,
    ) -> ScheduleSpec:
        """Declare the periodic job ``name``: at each fire time of ``cron`` (read in the
        IANA ``timezone``) the coordinator enqueues ``job``, a kind (with ``payload``) or a
        ``NewJob`` such as ``task.new_job(...)``. ``catch_up="once"`` runs the latest fire
        time missed while no coordinator ran. Synced when a worker starts."""
        if name in self.schedules:
            raise ValueError(f"schedule {name!r} is declared already")
        spec = declare(
            name,
            job,
            cron=cron,
            timezone=timezone,
            payload=payload,
            catch_up=catch_up,
            enabled=enabled,
        )
        self.schedules[name] = spec
        return spec

    @classmethod
    def of(cls, handlers: Registry | Mapping[str, Handler]) -> Registry:
        return handlers if isinstance(handlers, Registry) else cls(handlers)

    def add(
        self,
        kind: str,
        handler: Handler,
        *,
        timeout_seconds: float | None = None,
        retry_on: ExceptionTypes | None = None,
        fail_on: ExceptionTypes | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        """Register ``handler`` for ``kind``; ``timeout_seconds`` is the time limit of its
        jobs that carry none of their own. ``retry_on``, ``fail_on`` and ``backoff`` are
        its retry policy (``leasehold.worker.retries``): by default every exception is
        retried after the coordinator's backoff."""
        rules = RetryRules.of(retry_on, fail_on, backoff)
        if not isinstance(kind, str) or not kind.strip():
            raise ValueError(f"a job kind is a non-empty string, not {kind!r}")
        if not callable(handler):
            raise TypeError(f"the handler for {kind!r} is not callable: {handler!r}")
        if kind in self._handlers:
            raise ValueError(f"kind {kind!r} already has a handler: {self._handlers[kind]!r}")
        if timeout_seconds is not None:
            if not timeout_seconds > 0:
                raise ValueError(f"a time limit is over 0 seconds, not {timeout_seconds!r}")
            self._timeouts[kind] = timeout_seconds
        if rules != DEFAULT_RULES:
            self._retries[kind] = rules
        self._handlers[kind] = handler

    def handler(
        self,
        kind: str,
        *,
        timeout_seconds: float | None = None,
        retry_on: ExceptionTypes | None = None,
        fail_on: ExceptionTypes | None = None,
        backoff: Backoff | None = None,
    ) -> Callable[[H], H]:
        """A decorator that registers the function as the handler of ``kind`` (the
        keywords are ``add``'s)."""
        RetryRules.of(retry_on, fail_on, backoff)  # a mistake fails here, at the decorator

        def register(handler: H) -> H:
            self.add(
                kind,
                handler,
                timeout_seconds=timeout_seconds,
                retry_on=retry_on,
                fail_on=fail_on,
                backoff=backoff,
            )
            return handler

        return register

    def timeout_of(self, kind: str) -> float | None:
        """The time limit the kind's handler declared, if any."""
        return self._timeouts.get(kind)

    def retry_of(self, kind: str) -> RetryRules:
        """The kind's retry policy (the default retries everything)."""
        return self._retries.get(kind, DEFAULT_RULES)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self._handlers)

    def __getitem__(self, kind: str) -> Handler:
        return self._handlers[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(self._handlers)

    def __len__(self) -> int:
        return len(self._handlers)
