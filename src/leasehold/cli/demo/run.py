"""``leasehold demo``: a coordinator, workers and jobs, watched on a live progress bar.

Signals are events on the event loop, never exceptions: an exception raised by a signal
handler can land anywhere, even in a weakref callback that swallows it (the demo then ran
on after a Ctrl+C). The first SIGINT / SIGTERM / SIGHUP cancels the run at its next await
and stops the children in order; a second one kills them at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import warnings
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

from rich.console import Console
from rich.live import Live

from leasehold.cli.demo.processes import DemoError, DemoProcesses
from leasehold.cli.demo.progress import ProgressView, print_summary
from leasehold.cli.demo.workload import demo_jobs
from leasehold.client import MAX_BATCH, Client, NewJob, UnservedWarning

POLL_SECONDS = 0.25
# Every job ends within seconds (the slowest sleeps 0.6 s; retries wait 2 s at most), so
# this long without a finished job means something is wrong: give up rather than hang.
STALL_SECONDS = 60.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class DemoSettings:
    jobs: int
    workers: int
    concurrency: int
    port: int
    keep: bool


class StopSignals:
    """The first stop signal sets ``stop``; any later one sets ``hurry``."""

    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.hurry = asyncio.Event()
        self.first: int | None = None

    def _received(self, signum: int) -> None:
        if self.first is None:
            self.first = signum
            self.stop.set()
        else:
            self.hurry.set()

    def __enter__(self) -> StopSignals:
        # Also when SIGINT was ignored at start (a shell's background job): the demo is
        # meant for the foreground, and Ctrl+C is how it ends early.
        loop = asyncio.get_running_loop()
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, self._received, signum)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        loop = asyncio.get_running_loop()
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)


class Stopped(Exception):
    """A stop signal came before the awaited part of the demo finished."""


async def until_stopped(stop: asyncio.Event, awaitable: Awaitable[T]) -> T:
    """``await awaitable``, unless ``stop`` is set first: then cancel it, let it unwind
    (its Live display and client close) and raise ``Stopped``."""
    task = asyncio.ensure_future(awaitable)
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
        if not task.done():
            task.cancel()
            await asyncio.wait({task})
    if task.cancelled():
        raise Stopped
    return task.result()


async def run_demo(settings: DemoSettings, console: Console) -> int:
    """Run the demo; the exit status (0, or 128 + N when signal N stopped it early)."""
    with StopSignals() as signals:
        processes = DemoProcesses(settings.port)
        try:
            await until_stopped(signals.stop, _run(settings, processes, console))
            if settings.keep:  # Ctrl+C is the way out of this part: not an early stop
                with contextlib.suppress(Stopped):
                    await until_stopped(signals.stop, _keep_running(processes, console))
            code = 0
        except Stopped:
            code = 128 + (signals.first or signal.SIGINT)
        finally:
            console.print("Stopping the workers and the coordinator...")
            try:
                await processes.stop(signals.hurry)
            finally:
                processes.clean()
    if code:
        name = signal.Signals(code - 128).name
        console.print(f"Stopped early ({name}); everything the demo started is stopped.")
    return code


async def _run(settings: DemoSettings, processes: DemoProcesses, console: Console) -> None:
    console.print(
        f"Starting a coordinator on {processes.url} (SQLite in {processes.dir})", soft_wrap=True
    )
    await processes.start_coordinator()
    processes.start_workers(settings.workers, settings.concurrency)
    console.print(
        f"Dashboard: [bold]{processes.url}/ui/[/bold]   "
        f"({settings.workers} worker processes, {settings.jobs} jobs)"
    )
    async with Client(processes.url) as client:
        await _run_jobs(settings, processes, client, console)


async def _run_jobs(
    settings: DemoSettings, processes: DemoProcesses, client: Client, console: Console
) -> None:
    jobs, expected = demo_jobs(settings.jobs)
    view = ProgressView(len(jobs))
    try:
        with Live(view.renderable(), console=console, refresh_per_second=8):
            with warnings.catch_warnings():
                # The demo's workers are still starting: their kinds are served soon.
                warnings.simplefilter("ignore", UnservedWarning)
                for batch in _batches(jobs):
                    await client.enqueue_many(batch)
                    view.enqueued(len(batch))
                    processes.check()
            stats = await _wait_finished(processes, client, view)
    finally:
        if not console.is_terminal:
            console.line()  # off a terminal, Live leaves its last line unterminated
    print_summary(console, stats, len(jobs), view.elapsed(), expected)


def _batches(jobs: list[NewJob]) -> Iterator[list[NewJob]]:
    for start in range(0, len(jobs), MAX_BATCH):
        yield jobs[start : start + MAX_BATCH]


async def _wait_finished(
    processes: DemoProcesses, client: Client, view: ProgressView
) -> dict[str, Any]:
    """Poll /stats until every job is completed or dead; the last figures."""
    loop = asyncio.get_running_loop()
    done, last_change = -1, loop.time()
    while True:
        stats = await client.stats()
        now_done = view.show(stats)
        if now_done >= view.total:
            return stats
        if now_done != done:
            done, last_change = now_done, loop.time()
        elif loop.time() - last_change > STALL_SECONDS:
            raise DemoError(f"no job finished for {STALL_SECONDS:g} s; giving up")
        processes.check()
        await asyncio.sleep(POLL_SECONDS)


async def _keep_running(processes: DemoProcesses, console: Console) -> None:
    console.print(
        f"Still running (--keep): {processes.url}/ui/ ; try"
        f" [bold]leasehold jobs --status dead --url {processes.url}[/bold]. Ctrl+C stops it.",
        soft_wrap=True,
    )
    while True:
        processes.check()
        await asyncio.sleep(0.5)
