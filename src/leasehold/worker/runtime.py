"""The worker: N loops that lease jobs and run them, and the way it stops.

Stopping: the first SIGINT / SIGTERM (``Worker.stop``) sets an Event. The loops stop
leasing, let their running handlers finish and report them, and the worker exits 0. If
handlers are still running ``grace_seconds`` later, or at a second signal
(``Worker.force``), they are cancelled and their jobs released, and the exit status is
128 + the signal's number.

Lease polls in flight are never cut short, not even by a forced stop: the coordinator does
not notice that a client has gone, so a poll we abandoned could still be answered with a
job nobody would run until its lease ran out. Polls are read to the end instead (at most
``wait_seconds``), what they bring back is released unstarted, and releases wait for the
worker's polls to end, so that a released job cannot go straight back to one of them.
"""

from __future__ import annotations

import asyncio
import random
import signal

import structlog

from leasehold.client import NO_RETRY, Client, Lease, RetryPolicy
from leasehold.errors import LeaseholdError, Unavailable
from leasehold.worker.jobrun import JobRunner, Leased
from leasehold.worker.registry import Registry
from leasehold.worker.settings import WorkerSettings
from leasehold.worker.waiting import wait_event

log = structlog.get_logger("leasehold.worker")

# Renewals and reports are tried again until answered; their lease's expiry bounds them.
UNTIL_DEADLINE = RetryPolicy(attempts=None, base_seconds=0.05, max_seconds=1.0)
# Waits between lease requests while the coordinator cannot be reached.
UNREACHABLE_BACKOFF = RetryPolicy(attempts=None, base_seconds=0.25, max_seconds=10.0)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Worker:
    def __init__(
        self,
        registry: Registry,
        settings: WorkerSettings,
        *,
        client: Client | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.registry = registry
        self.settings = settings
        self.kinds = settings.kinds or registry.kinds
        # Per loop: one poll and one renewal or report in flight, at most.
        self.client = client or Client(
            settings.url,
            token=settings.token,
            retry=UNTIL_DEADLINE,
            max_connections=2 * settings.concurrency + 2,
        )
        # Leasing is not retried by the client: the loop backs off itself, so that a stop
        # can interrupt the wait.
        self._poller = self.client.with_retry(NO_RETRY)
        self._rng = rng or random.Random()
        self._stopping = asyncio.Event()
        self._forced = asyncio.Event()
        self._polls = 0  # lease requests in flight
        self._polls_changed = asyncio.Condition()
        self._runner = JobRunner(self.client, registry, self._forced, self._polls_ended)
        self._signals: list[int] = []
        self._fatal: LeaseholdError | None = None
        self._grace: asyncio.TimerHandle | None = None

    # -- stopping -----------------------------------------------------------------------

    def on_signal(self, signum: int) -> None:
        """First signal: stop gracefully. Any later one: force."""
        self._signals.append(signum)
        if len(self._signals) == 1:
            log.info("worker.stopping", signal=signal.Signals(signum).name)
            self.stop()
        else:
            log.warning("worker.forced", signal=signal.Signals(signum).name)
            self.force()

    def stop(self) -> None:
        """Stop leasing; let running handlers finish (within ``grace_seconds``)."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        loop = asyncio.get_running_loop()
        self._grace = loop.call_later(self.settings.grace_seconds, self._grace_over)

    def force(self) -> None:
        """Cancel running handlers and release their jobs, then stop."""
        self._stopping.set()
        self._forced.set()

    def _grace_over(self) -> None:
        log.warning("worker.grace_expired", grace_seconds=self.settings.grace_seconds)
        self.force()

    def exit_code(self) -> int:
        if self._fatal is not None:
            return 1
        if self._forced.is_set():
            return 128 + (self._signals[0] if self._signals else signal.SIGTERM)
        return 0

    # -- running ------------------------------------------------------------------------

    async def run(self) -> int:
        """Run until stopped; the process exit status."""
        structlog.contextvars.bind_contextvars(worker_id=self.settings.worker_id)
        missing = sorted(set(self.kinds) - set(self.registry.kinds))
        log.info(
            "worker.started",
            url=self.client.url,
            kinds=list(self.kinds),
            queues=list(self.settings.queues) if self.settings.queues else None,
            concurrency=self.settings.concurrency,
        )
        if missing:
            log.warning("worker.kinds_without_handler", kinds=missing)
        try:
            async with asyncio.TaskGroup() as group:
                for n in range(self.settings.concurrency):
                    group.create_task(self._loop(), name=f"leasehold-loop-{n}")
        finally:
            if self._grace is not None:
                self._grace.cancel()
            await self.client.close()
        code = self.exit_code()
        log.info("worker.stopped", exit_code=code)
        return code

    async def _loop(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            try:
                lease = await self._poll()
            except Unavailable as exc:
                failures += 1
                delay = UNREACHABLE_BACKOFF.delay(failures, self._rng)
                log.warning("coordinator.unreachable", error=exc.message, retry_in=round(delay, 2))
                await wait_event(self._stopping, delay)
                continue
            except LeaseholdError as exc:  # 401, 403, 422: asking again will not help
                log.error("worker.fatal", error=exc.message, code=exc.code)
                self._fatal = exc
                self.stop()
                return
            failures = 0
            if lease is None:
                continue
            leased = Leased.of(lease, self.settings.worker_id, asyncio.get_running_loop().time())
            if self._stopping.is_set():
                await self._runner.release(leased.job)  # leased as we stopped: hand it back
            else:
                await self._runner.run(leased)

    async def _poll(self) -> Lease | None:
        """One long poll; None when it brought no job."""
        self._polls += 1
        try:
            return await self._poller.lease(
                self.settings.worker_id,
                lease_seconds=self.settings.lease_seconds,
                kinds=self.kinds,
                queues=self.settings.queues,
                wait_seconds=self.settings.wait_seconds,
            )
        finally:
            self._polls -= 1
            async with self._polls_changed:
                self._polls_changed.notify_all()

    async def _polls_ended(self) -> None:
        """Once stopping, until no lease request of this worker is in flight."""
        async with self._polls_changed:
            await self._polls_changed.wait_for(lambda: self._polls == 0)


async def run_worker(registry: Registry, settings: WorkerSettings) -> int:
    """Run a worker in this process until SIGINT / SIGTERM; the exit status."""
    worker = Worker(registry, settings)
    # Signal callbacks run in this context: give their log lines the worker's id too.
    structlog.contextvars.bind_contextvars(worker_id=settings.worker_id)
    loop = asyncio.get_running_loop()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, worker.on_signal, signum)
    try:
        return await worker.run()
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)
