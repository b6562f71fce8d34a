"""The worker: one loop that leases jobs in batches and runs them, and the way it stops.

Leasing: one request at a time asks for as many jobs as there are free handler slots
(``concurrency`` in all), waits for them with a long poll, and starts every job it brings
at once: no job sits leased in a buffer while its lease runs. Each slot is free again as
soon as its handler ends. Renewals (``renewal.Renewer``) and reports (``report.Reporter``)
of all running jobs go in batches too, each item fenced by its own token and answered on
its own.

Stopping: the first SIGINT / SIGTERM / SIGHUP (``Worker.stop``) sets an Event. SIGHUP drains
as SIGTERM does: a worker has nothing to reload, and the hangup of the terminal it was
started from should not kill its handlers mid-job (the default action, exit 129). The loops stop
leasing, let their running handlers finish and report them, and the worker exits 0. If
handlers are still running ``grace_seconds`` later, or at a second signal
(``Worker.force``), they are cancelled and their jobs released, and the exit status is
128 + the signal's number.

A lease poll in flight is never cut short, not even by a forced stop: the coordinator does
not notice that a client has gone, so a poll we abandoned could still be answered with jobs
nobody would run until their lease ran out. The poll is read to the end instead (at most
``wait_seconds``), what it brings back is released unstarted, and releases wait for the
poll to end, so that a released job cannot go straight back to it.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import uuid
from collections.abc import Iterable

import structlog

from leasehold._version import __version__
from leasehold.client import NO_RETRY, Client, Lease, RetryPolicy
from leasehold.client._exchange import MAX_READ_BYTES
from leasehold.errors import (
    Forbidden,
    InvalidRequest,
    LeaseholdError,
    MisdirectedRequest,
    PayloadTooLarge,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
)
from leasehold.worker.capacity import Capacity
from leasehold.worker.context import Hook, WorkerContext, enter_worker, run_hook
from leasehold.worker.handler_outcome import describe
from leasehold.worker.heartbeat import beat_body, beat_forever
from leasehold.worker.heartbeat import now as heartbeat_now
from leasehold.worker.job import LeasedJob
from leasehold.worker.job_runner import JobRunner, Leased
from leasehold.worker.registry import Registry
from leasehold.worker.schedules import sync_schedules
from leasehold.worker.settings import WorkerSettings
from leasehold.worker.waiting import Flag, cancel_and_wait, wait_event

log = structlog.get_logger("leasehold.worker")

# Renewals and reports are tried again until answered; their lease's expiry bounds them.
UNTIL_DEADLINE = RetryPolicy(attempts=None, base_seconds=0.05, max_seconds=1.0)
# Waits between lease requests while the coordinator cannot be reached.
UNREACHABLE_BACKOFF = RetryPolicy(attempts=None, base_seconds=0.25, max_seconds=10.0)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# How often a supervised worker checks that its supervisor is still there.
PARENT_CHECK_SECONDS = 1.0
# A job's JSON at the largest the coordinator's default caps allow: a 256 KiB payload and
# result, and an error of 64 Ki characters, each up to 6 bytes as JSON escapes it.
JOB_ANSWER_BYTES = 1024 * 1024


def max_read_bytes(concurrency: int) -> int:
    """What the worker's client reads of one answer: the client's default, or room for a
    batch renewal answering every slot's job at its largest, if that is more."""
    return max(MAX_READ_BYTES, concurrency * JOB_ANSWER_BYTES)


# The refusals of a lease that say the worker itself is wrong (its token, its request, its
# address): it stops (PROTOCOL.md §10.7). Any other error is waited out with backoff.
FATAL = (
    Unauthorized,
    Forbidden,
    InvalidRequest,
    PayloadTooLarge,
    UnsupportedMediaType,
    MisdirectedRequest,
)


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
        # The poll, a renewal, two batches of each report kind, and singles when a
        # batch is refused as a whole (one per job at most).
        self.client = client or Client(
            settings.url,
            token=settings.token,
            retry=UNTIL_DEADLINE,
            max_connections=settings.concurrency + 8,
            max_read_bytes=max_read_bytes(settings.concurrency),
        )
        # Leasing is not retried by the client: the loop backs off itself, so that a stop
        # can interrupt the wait.
        self._poller = self.client.with_retry(NO_RETRY)
        self._rng = rng or random.Random()
        self._stopping = asyncio.Event()
        self._forced = Flag()
        self._capacity = Capacity(settings.concurrency)
        self._polls = 0  # lease requests in flight
        self._polls_changed = asyncio.Condition()
        self._runner = JobRunner(self.client, registry, self._forced, self._polls_ended)
        self._signals: list[int] = []
        self._fatal: LeaseholdError | None = None
        self._grace: asyncio.TimerHandle | None = None
        self.context = WorkerContext(settings.worker_id, ",".join(self.client.urls))
        self._started_at = heartbeat_now()

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
            version=__version__,
            urls=list(self.client.urls),
            kinds=list(self.kinds),
            queues=list(self.settings.queues) if self.settings.queues else None,
            concurrency=self.settings.concurrency,
        )
        if missing:
            log.warning("worker.kinds_without_handler", kinds=missing)
        enter_worker(self.context)  # the job tasks below start in copies of this context
        if not await self._run_hooks("startup", self.registry.startup):
            await self.client.close()
            log.info("worker.stopped", exit_code=1)
            return 1
        runner = self._runner
        renewing = asyncio.create_task(runner.renewer.run(), name="leasehold-renewer")
        reporting = asyncio.create_task(runner.reporter.run(), name="leasehold-reporter")
        body = beat_body(
            self.settings.worker_id,
            tuple(self.kinds),
            self.settings.queues,
            self.settings.concurrency,
            self._started_at,
        )
        beating = asyncio.create_task(
            beat_forever(self._poller, body, self.settings.beat_seconds), name="leasehold-beat"
        )
        syncing = asyncio.create_task(self._sync_schedules(), name="leasehold-schedules")
        watching = asyncio.create_task(self._watch_parent(), name="leasehold-parent")
        try:
            async with asyncio.TaskGroup() as jobs:
                await self._lease_loop(jobs)
        finally:
            # Every job has had its report answered (or given up on it) by now.
            await cancel_and_wait(renewing)
            await cancel_and_wait(reporting)
            await cancel_and_wait(beating)
            await cancel_and_wait(syncing)
            await cancel_and_wait(watching)
            if self._grace is not None:
                self._grace.cancel()
            await self.client.close()
            await self._run_hooks("shutdown", reversed(self.registry.shutdown))
        code = self.exit_code()
        log.info("worker.stopped", exit_code=code)
        return code

    async def _run_hooks(self, stage: str, hooks: Iterable[Hook]) -> bool:
        """Run start-up or shutdown hooks in turn; False (logged) at the first that fails.
        A failed start-up stops the worker before it leases anything (exit status 1)."""
        for hook in hooks:
            name = getattr(hook, "__qualname__", repr(hook))
            try:
                await run_hook(hook, self.context)
            except Exception as exc:
                log.error(f"worker.{stage}_failed", hook=name, error=describe(exc))
                if stage == "startup":
                    self._fatal = LeaseholdError(f"start-up hook {name} failed: {exc!r}")
                return False
        return True

    async def _watch_parent(self) -> None:
        """A supervised worker stops when its supervisor is gone (it would otherwise run
        on, unseen by whoever stopped the supervisor)."""
        parent = self.settings.parent_pid
        if parent is None:
            return
        while os.getppid() == parent:
            if await wait_event(self._stopping, PARENT_CHECK_SECONDS):
                return
        log.warning("worker.supervisor_gone", supervisor_pid=parent)
        self.stop()

    async def _sync_schedules(self) -> None:
        """Bring the coordinator's schedules in line with the registry's (beside leasing:
        jobs need not wait for it). Tried again while the coordinator cannot be reached;
        a refusal (a token whose role may not change schedules, say) is logged once."""
        registry = self.registry
        if not registry.schedules and not registry.prune_schedules:
            return
        failures = 0
        while not self._stopping.is_set():
            try:
                report = await sync_schedules(
                    self._poller,
                    registry.schedules.values(),
                    registry.kinds,
                    prune=registry.prune_schedules,
                )
            except Unavailable as exc:
                failures += 1
                delay = UNREACHABLE_BACKOFF.delay(failures, self._rng)
                log.warning("schedules.not_synced", error=exc.message, retry_in=round(delay, 2))
                await wait_event(self._stopping, delay)
                continue
            except LeaseholdError as exc:
                log.error(
                    "schedules.not_synced",
                    error=exc.message,
                    code=exc.code,
                    hint="an admin token may change schedules; or run `leasehold schedules"
                    " sync APP` with one when deploying",
                )
                return
            log.info("schedules.synced", **report.fields())
            return

    async def _lease_loop(self, jobs: asyncio.TaskGroup) -> None:
        request_id = await self._lease_until_stopped(jobs)
        if request_id is not None and self._fatal is None:
            await self._hand_back_unanswered(jobs, request_id)

    async def _lease_until_stopped(self, jobs: asyncio.TaskGroup) -> str | None:
        """Lease and start jobs until stopping; the request id of the last poll if it got
        no answer."""
        failures = 0
        # A poll that got no answer is asked again under the same request id, so that the
        # leases a lost answer carried come back instead of waiting out their expiry.
        request_id: str | None = None
        while not self._stopping.is_set():
            free = await self._capacity.take_all(self._stopping)
            if not free:
                break  # stopping
            request_id = request_id or f"{self.settings.worker_id}-{uuid.uuid4()}"
            sent = asyncio.get_running_loop().time()
            try:
                leases = await self._poll(free, request_id)
            except FATAL as exc:  # 401, 403, 422: asking again will not help
                self._capacity.give(free)
                log.error("worker.fatal", error=exc.message, code=exc.code)
                self._fatal = exc
                self.stop()
                return None
            except LeaseholdError as exc:
                # Unreachable, or an answer the client refused (not JSON, too large, more
                # leases than asked for): none of its jobs was started. Asked again later,
                # under the same request id, so that a lost answer's leases come back.
                self._capacity.give(free)
                failures += 1
                delay = UNREACHABLE_BACKOFF.delay(failures, self._rng)
                event = (
                    "coordinator.unreachable" if isinstance(exc, Unavailable) else "lease.refused"
                )
                log.warning(event, error=exc.message, retry_in=round(delay, 2))
                await wait_event(self._stopping, delay)
                continue
            failures = 0
            request_id = None
            self._capacity.give(free - len(leases))
            self._start(jobs, leases, sent)
        return request_id

    async def _hand_back_unanswered(self, jobs: asyncio.TaskGroup, request_id: str) -> None:
        """Stopping after a poll that got no answer, which may have leased jobs: asked once
        more under its request id, whatever it brings back is released (PROTOCOL.md §10,
        item 6), rather than left leased until the leases run out."""
        try:
            leases = await self._poll(self.settings.concurrency, request_id)
        except LeaseholdError as exc:
            log.warning("worker.unanswered_at_stop", error=exc.message)
            return
        for lease in leases:
            jobs.create_task(self._runner.release(LeasedJob.of(lease, self.settings.worker_id)))

    def _start(self, jobs: asyncio.TaskGroup, leases: list[Lease], sent: float) -> None:
        received = asyncio.get_running_loop().time()
        for lease in leases:
            leased = Leased.of(lease, self.settings.worker_id, sent, received)
            if self._stopping.is_set():  # leased as we stopped: hand it back unstarted
                self._capacity.give()
                jobs.create_task(self._runner.release(leased.job))
            else:
                jobs.create_task(self._runner.run(leased, self._capacity.give))

    async def _poll(self, max_jobs: int, request_id: str) -> list[Lease]:
        """One long poll for up to ``max_jobs`` jobs."""
        self._polls += 1
        try:
            return await self._poller.lease(
                self.settings.worker_id,
                lease_seconds=self.settings.lease_seconds,
                kinds=self.kinds,
                queues=self.settings.queues,
                wait_seconds=self.settings.wait_seconds,
                max_jobs=max_jobs,
                request_id=request_id,
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
    """Run a worker in this process until SIGINT / SIGTERM / SIGHUP; the exit status."""
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
