"""``AsyncTestCoordinator``: a coordinator in the test's own event loop, on a fake clock.

It is ``create_app`` (the coordinator ``leasehold serve`` runs) on the SQLite store, in
memory by default, with a ``FakeClock``: the same routes, service, rules and store, so a
test that passes here passes against a served coordinator. Its clients hand each request
to the app in process (``_transport.py``): no port, no server. Time moves only when the
test says (``advance``); the reaper, the scheduler and retention, which a served
coordinator runs on timers, run one pass each time it does. Jobs run when the test says
(``drain``, ``run_due``), through the registry's handlers and the worker's own parts
(``_runner.py``), or at once after each enqueue (``inline=True``).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, ParamSpec, TypeVar, overload

from fastapi import FastAPI

from leasehold.client import MAX_BATCH, Client
from leasehold.coordinator.app import create_app
from leasehold.coordinator.clock import FakeClock
from leasehold.coordinator.maintenance.retention import prune_finished
from leasehold.coordinator.maintenance.scheduler import FIRE_BATCH
from leasehold.coordinator.settings import CoordinatorSettings
from leasehold.coordinator.store.open import open_store
from leasehold.model import JSON, Job, JobStatus
from leasehold.tasks import Task
from leasehold.testing._matching import ANY, found, matching, not_found, wanted
from leasehold.testing._runner import WORKER_ID, Drained, TestWorker
from leasehold.testing._transport import URL, InProcessTransport
from leasehold.worker.context import WorkerContext
from leasehold.worker.registry import Handler, Registry
from leasehold.worker.schedules import sync_schedules

P = ParamSpec("P")
R = TypeVar("R")

# The background loops sleep this long between passes here: the test runs their passes.
_NEVER = 10.0**9
MAX_RUNS = 10_000
"""Runs one drain makes at most: past it, handlers that enqueue forever are an error."""


class AsyncTestCoordinator:
    """A coordinator for tests (see the module docstring)::

        async with AsyncTestCoordinator(registry) as tc:
            handle = await send_welcome.enqueue(tc.client, "ada@example.com", name="Ada")
            await tc.assert_enqueued(send_welcome, "ada@example.com", name="Ada")
            await tc.drain()
            assert await handle.result() == "welcomed Ada <ada@example.com>"

    ``registry`` is what ``drain`` runs by default (each call may name another); its
    schedules are synced at start, as a worker does. ``start`` is where the fake clock
    starts (default: now). ``database_url`` is ``sqlite:///:memory:`` or an SQLite file.
    ``settings`` are the coordinator's (``--retry-base-seconds`` and the rest); its
    background loops' intervals are ignored, since ``advance`` runs their passes.
    """

    __test__ = False  # not a test class, whatever pytest makes of the name

    def __init__(
        self,
        registry: Registry | Mapping[str, Handler] | None = None,
        *,
        inline: bool = False,
        start: datetime | None = None,
        database_url: str = "sqlite:///:memory:",
        settings: CoordinatorSettings | None = None,
        seed: int = 0,
    ) -> None:
        if not database_url.startswith("sqlite:"):
            raise ValueError("the test coordinator runs on SQLite: its clock is the test's")
        self.registry = Registry.of(registry) if registry is not None else None
        self.inline = inline
        self.clock = FakeClock(start or datetime.now(UTC))
        self.settings = replace(
            settings or CoordinatorSettings(),
            database_url=database_url,
            reap_interval_seconds=_NEVER,
            schedule_interval_seconds=_NEVER,
            prune_interval_seconds=_NEVER,
        )
        self._seed = seed
        self._workers: dict[int, TestWorker] = {}
        self._draining = False
        self._started = False
        self.app: FastAPI
        self.client: Client

    # -- lifetime -----------------------------------------------------------------------

    async def start(self) -> AsyncTestCoordinator:
        """Open the store and start the coordinator (``async with`` does this)."""
        store = open_store(self.settings.database_url, clock=self.clock, synchronous="OFF")
        self.app = create_app(
            self.settings, store=store, clock=self.clock, rng=random.Random(self._seed)
        )
        self._lifespan = self.app.router.lifespan_context(self.app)
        await self._lifespan.__aenter__()
        self._started = True
        loop = asyncio.get_running_loop()
        transport = InProcessTransport(self.app, loop, self._after_enqueue)
        self.client = Client._over(transport, URL, timeout_seconds=60.0)
        await self._beat()
        if self.registry is not None:
            await self._worker(self.registry)
        return self

    async def close(self) -> None:
        """Run the registries' shutdown hooks and stop the coordinator."""
        if not self._started:
            return
        self._started = False
        try:
            for worker in self._workers.values():
                await worker.close()
        finally:
            await self._lifespan.__aexit__(None, None, None)

    async def __aenter__(self) -> AsyncTestCoordinator:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def context(self) -> WorkerContext:
        """The worker context the default registry's hooks and jobs see
        (``current_context()``): a test may put in its ``state`` what a start-up hook
        would, such as ``tc.client`` for handlers that enqueue."""
        if self.registry is None or id(self.registry) not in self._workers:
            raise RuntimeError("no registry was given to the test coordinator")
        return self._workers[id(self.registry)].worker_context

    # -- time ---------------------------------------------------------------------------

    def now(self) -> datetime:
        """The coordinator's now: the fake clock's."""
        return self.clock.now()

    async def advance(self, seconds: float | timedelta) -> None:
        """Let time pass for the coordinator (see ``advance_to``)."""
        delta = seconds if isinstance(seconds, timedelta) else timedelta(seconds=seconds)
        await self.advance_to(self.now() + delta)

    async def advance_to(self, when: datetime) -> None:
        """Move the clock to ``when``, as a running coordinator would live through it:
        every schedule fires at each of its fire times on the way (the clock stops at
        each), then leases that ran out are taken back, finished jobs past their retention
        are deleted, and (``inline``) the jobs now due run."""
        if when < self.now():
            raise ValueError(f"time only moves forward: {when} is before {self.now()}")
        grace = timedelta(seconds=self.settings.schedule_grace_seconds)
        while (fire := await self._next_fire()) is not None and fire <= when:
            # The fire times within the grace of the first are on time in one pass.
            self.clock.set(min(when, fire + grace))
            await self._fire()
            if await self._next_fire() == fire:
                break  # nothing moved it (disabled meanwhile): do not spin
        self.clock.set(when)
        await self._fire()
        service = self.app.state.service
        await service.sweep()  # the reaper's pass: expired leases, passed start deadlines
        await prune_finished(service.store, self.app.state.pruner.retention)
        await self._beat()
        if self.inline and not self._draining:
            await self.drain()

    async def _next_fire(self) -> datetime | None:
        schedules = await self.app.state.service.store.schedule_list()
        return min((s.next_fire_at for s in schedules if s.spec.enabled), default=None)

    async def _fire(self) -> None:
        while await self.app.state.scheduler.fire() >= FIRE_BATCH:
            pass

    async def _beat(self) -> None:
        """Say that a worker serves the registry's kinds (any kind without a registry),
        as a running worker does, so enqueues are not warned about as unserved."""
        kinds = list(self.registry.kinds) if self.registry is not None else None
        beat = {
            "worker_id": WORKER_ID,
            "host": "leasehold-testing",
            "pid": 1,
            "version": "testing",
            "kinds": kinds,
            "queues": None,
            "concurrency": 1,
            "started_at": self.now().isoformat(),
        }
        await self.client.heartbeat(beat)

    # -- running jobs -------------------------------------------------------------------

    async def run_due(
        self,
        registry: Registry | Mapping[str, Handler] | None = None,
        *,
        kinds: list[str] | None = None,
        queues: list[str] | None = None,
    ) -> Drained:
        """Run the jobs due now, once each (up to 1,000): not those they enqueue, nor
        their retries. Each goes through the registry's handler and is reported."""
        worker = await self._worker(registry)
        return Drained(tuple(await self._round(worker, kinds, queues)))

    async def drain(
        self,
        registry: Registry | Mapping[str, Handler] | None = None,
        *,
        kinds: list[str] | None = None,
        queues: list[str] | None = None,
        advance: bool = False,
        check: bool = False,
    ) -> Drained:
        """Run due jobs until none is due: those the runs enqueue and retries due at once
        too. With ``advance``, the clock then jumps to the next job that will be due, and
        on, until no job of these kinds waits (retries after their backoff, jobs enqueued
        for later). With ``check``, an AssertionError names every run that failed."""
        worker = await self._worker(registry)
        runs: list[Job] = []
        self._draining = True
        try:
            while len(runs) <= MAX_RUNS:
                ran = await self._round(worker, kinds, queues)
                runs += ran
                if ran:
                    continue
                later = await self.app.state.service.store.job_next_run_after(self.now())
                if not advance or later is None:
                    break
                await self.advance_to(later)
            else:
                raise RuntimeError(f"drain ran {MAX_RUNS} jobs and more were due: a loop?")
        finally:
            self._draining = False
        drained = Drained(tuple(runs))
        return drained.check() if check else drained

    async def _round(
        self, worker: TestWorker, kinds: list[str] | None, queues: list[str] | None
    ) -> list[Job]:
        wanted = kinds or list(worker.registry.kinds)
        if not wanted:
            return []  # a registry without handlers runs nothing
        leases = await self.client.lease(
            WORKER_ID,
            kinds=wanted,
            queues=queues,
            max_jobs=MAX_BATCH,
        )
        return [await worker.run(lease) for lease in leases]

    async def _worker(self, registry: Registry | Mapping[str, Handler] | None) -> TestWorker:
        """The started worker for ``registry`` (the default one if None)."""
        chosen = Registry.of(registry) if registry is not None else self.registry
        if chosen is None:
            raise ValueError("no registry: give one here or to the test coordinator")
        worker = self._workers.get(id(chosen))
        if worker is None:
            worker = TestWorker(self.client, chosen)
            self._workers[id(chosen)] = worker
            if chosen.schedules or chosen.prune_schedules:
                await sync_schedules(
                    self.client,
                    chosen.schedules.values(),
                    chosen.kinds,
                    prune=chosen.prune_schedules,
                )
            await worker.start()
        return worker

    async def _after_enqueue(self) -> None:
        if self.inline and not self._draining:
            await self.drain()

    # -- what was enqueued --------------------------------------------------------------

    async def jobs(
        self, kind: str | Task[Any, Any] | None = None, *, status: JobStatus | str | None = None
    ) -> list[Job]:
        """Every job (of ``kind``, a task's or a name; in ``status``), oldest first."""
        name = kind.kind if isinstance(kind, Task) else kind
        found_jobs: list[Job] = []
        cursor: str | None = None
        while True:
            page = await self.client.list(status=status, kind=name, cursor=cursor, limit=1000)
            found_jobs += page.jobs
            if not page.next_cursor:
                return found_jobs
            cursor = page.next_cursor

    @overload
    async def enqueued(
        self, task: Task[P, R], /, *args: P.args, **kwargs: P.kwargs
    ) -> list[Job]: ...

    @overload
    async def enqueued(self, kind: str, payload: JSON = ANY, /) -> list[Job]: ...

    async def enqueued(self, what: Any, /, *args: Any, **kwargs: Any) -> list[Job]:
        """The jobs enqueued (in any status since) by ``task.enqueue(client, *args,
        **kwargs)``, or of ``kind`` with ``payload`` (any payload if none is given)."""
        kind, payload = wanted(what, args, kwargs)
        return matching(await self.jobs(kind), payload)

    @overload
    async def assert_enqueued(
        self, task: Task[P, R], /, *args: P.args, **kwargs: P.kwargs
    ) -> Job: ...

    @overload
    async def assert_enqueued(self, kind: str, payload: JSON = ANY, /) -> Job: ...

    async def assert_enqueued(self, what: Any, /, *args: Any, **kwargs: Any) -> Job:
        """The latest such job (see ``enqueued``); AssertionError, listing the jobs of that
        kind, if there is none."""
        kind, payload = wanted(what, args, kwargs)
        of_kind = await self.jobs(kind)
        if hits := matching(of_kind, payload):
            return hits[-1]
        raise AssertionError(not_found(kind, payload, of_kind))

    @overload
    async def assert_not_enqueued(
        self, task: Task[P, R], /, *args: P.args, **kwargs: P.kwargs
    ) -> None: ...

    @overload
    async def assert_not_enqueued(self, kind: str, payload: JSON = ANY, /) -> None: ...

    async def assert_not_enqueued(self, what: Any, /, *args: Any, **kwargs: Any) -> None:
        """AssertionError, listing them, if any such job was enqueued."""
        kind, payload = wanted(what, args, kwargs)
        if hits := matching(await self.jobs(kind), payload):
            raise AssertionError(found(kind, payload, hits))
