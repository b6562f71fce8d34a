"""``leasehold demo``: a coordinator, workers and jobs, watched on a live progress bar."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

from rich.console import Console
from rich.live import Live

from leasehold.client import MAX_BATCH, NewJob, SyncClient
from leasehold.demo.processes import DemoError, DemoProcesses
from leasehold.demo.progress import ProgressView, print_summary
from leasehold.demo.workload import demo_jobs

POLL_SECONDS = 0.25
# Every job ends within seconds (the slowest sleeps 0.6 s; retries wait 2 s at most), so
# this long without a finished job means something is wrong: give up rather than hang.
STALL_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class DemoSettings:
    jobs: int
    workers: int
    concurrency: int
    port: int
    keep: bool


class Stopped(BaseException):
    """SIGTERM or SIGHUP: leave like Ctrl+C does, through every ``finally``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, frame: FrameType | None) -> None:
    raise Stopped(signum)


def run_demo(settings: DemoSettings, console: Console) -> int:
    """Run the demo; the exit status (130 after Ctrl+C, 128 + N after signal N)."""
    previous = {s: signal.signal(s, _raise_stopped) for s in (signal.SIGTERM, signal.SIGHUP)}
    # Python leaves SIGINT ignored when it started that way (a shell's background job);
    # the demo is for the foreground, and Ctrl+C is how it is meant to end early.
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with DemoProcesses(settings.port) as processes:
            console.print(
                f"Starting a coordinator on {processes.url} (SQLite in {processes.dir})",
                soft_wrap=True,
            )
            processes.start_coordinator()
            processes.start_workers(settings.workers, settings.concurrency)
            console.print(
                f"Dashboard: [bold]{processes.url}/ui/[/bold]   "
                f"({settings.workers} workers, {settings.jobs} jobs)"
            )
            with SyncClient(processes.url) as client:
                _run_jobs(settings, processes, client, console)
                if settings.keep:
                    _keep_running(processes, console)
            console.print("Stopping the workers and the coordinator...")
        return 0
    except KeyboardInterrupt:
        console.print("Interrupted; everything the demo started is stopped.")
        return 128 + signal.SIGINT
    except Stopped as stop:
        console.print(
            f"{signal.Signals(stop.signum).name}; everything the demo started is stopped."
        )
        return 128 + stop.signum
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _run_jobs(
    settings: DemoSettings, processes: DemoProcesses, client: SyncClient, console: Console
) -> None:
    jobs, expected = demo_jobs(settings.jobs)
    view = ProgressView(len(jobs))
    try:
        with Live(view.renderable(), console=console, refresh_per_second=8):
            for batch in _batches(jobs):
                client.enqueue_many(batch)
                view.enqueued(len(batch))
                processes.check()
            stats = _wait_finished(processes, client, view)
    finally:
        if not console.is_terminal:
            console.line()  # off a terminal, Live leaves its last line unterminated
    print_summary(console, stats, len(jobs), view.elapsed(), expected)


def _batches(jobs: list[NewJob]) -> Iterator[list[NewJob]]:
    for start in range(0, len(jobs), MAX_BATCH):
        yield jobs[start : start + MAX_BATCH]


def _wait_finished(
    processes: DemoProcesses, client: SyncClient, view: ProgressView
) -> dict[str, Any]:
    """Poll /stats until every job is completed or dead; the last figures."""
    done, last_change = -1, time.monotonic()
    while True:
        stats = client.stats()
        now_done = view.show(stats)
        if now_done >= view.total:
            return stats
        if now_done != done:
            done, last_change = now_done, time.monotonic()
        elif time.monotonic() - last_change > STALL_SECONDS:
            raise DemoError(f"no job finished for {STALL_SECONDS:g} s; giving up")
        processes.check()
        time.sleep(POLL_SECONDS)


def _keep_running(processes: DemoProcesses, console: Console) -> None:
    console.print(
        f"Still running (--keep): {processes.url}/ui/ ; try"
        f" [bold]leasehold jobs --status dead --url {processes.url}[/bold]. Ctrl+C stops it."
    )
    while True:
        processes.check()
        time.sleep(0.5)
