"""``leasehold demo``: a coordinator, workers and jobs, watched on a live progress bar."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from leasehold.client import MAX_BATCH, NewJob, SyncClient
from leasehold.demo.processes import DemoError, DemoProcesses
from leasehold.demo.workload import Expected, demo_jobs

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
            console.print(f"Starting a coordinator on {processes.url} (SQLite in {processes.dir})")
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
    progress = Progress(
        TextColumn("{task.description:<9}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:>8}"),
        TimeElapsedColumn(),
    )
    enqueued = progress.add_task("enqueued", total=len(jobs), rate="")
    finished = progress.add_task("finished", total=len(jobs), rate="")
    status = Text("")
    started = time.monotonic()
    try:
        with Live(Group(progress, status), console=console, refresh_per_second=8):
            for batch in _batches(jobs):
                client.enqueue_many(batch)
                progress.advance(enqueued, len(batch))
                processes.check()
            stats = _wait_finished(
                len(jobs), processes, client, progress, finished, status, started
            )
    finally:
        if not console.is_terminal:
            console.line()  # off a terminal, Live leaves its last line unterminated
    _summary(console, stats, len(jobs), time.monotonic() - started, expected)


def _batches(jobs: list[NewJob]) -> Iterator[list[NewJob]]:
    for start in range(0, len(jobs), MAX_BATCH):
        yield jobs[start : start + MAX_BATCH]


def _wait_finished(
    total: int,
    processes: DemoProcesses,
    client: SyncClient,
    progress: Progress,
    task: Any,
    status: Text,
    started: float,
) -> dict[str, Any]:
    """Poll /stats until every job is completed or dead; the last figures."""
    done, last_change = -1, time.monotonic()
    while True:
        stats = client.stats()
        counts: dict[str, int] = stats["by_status"]
        now_done = counts.get("completed", 0) + counts.get("dead", 0)
        rate = now_done / max(time.monotonic() - started, 1e-9)
        progress.update(task, completed=now_done, rate=f"{rate:.0f}/s")
        status.plain = _status_line(stats)
        if now_done >= total:
            return stats
        if now_done != done:
            done, last_change = now_done, time.monotonic()
        elif time.monotonic() - last_change > STALL_SECONDS:
            raise DemoError(f"no job finished for {STALL_SECONDS:g} s; giving up")
        processes.check()
        time.sleep(POLL_SECONDS)


def _status_line(stats: dict[str, Any]) -> str:
    counts = stats["by_status"]
    shown = " · ".join(f"{name} {n}" for name, n in counts.items())
    return f"{shown} · failures reported {stats['totals'].get('failed', 0)}"


def _summary(
    console: Console, stats: dict[str, Any], total: int, seconds: float, expected: Expected
) -> None:
    counts, totals = stats["by_status"], stats["totals"]
    # Once every job is finished, each was leased once plus once per retry.
    retries = totals.get("leased", 0) - total
    console.print(
        f"[bold]Done:[/bold] {total} jobs in {seconds:.1f} s, [bold]{total / seconds:.0f} jobs/s[/bold]"
    )
    console.print(
        f"  completed {counts.get('completed', 0)} · dead {counts.get('dead', 0)}"
        f" (expected {expected.dead}) · retries {retries} (expected {expected.retries})"
    )
    console.print(
        f"  average wait {_secs(stats['avg_wait_seconds'])}"
        f" · average run {_secs(stats['avg_run_seconds'])}"
    )
    console.print(
        f"  lease expirations {stats['lease_expirations']}"
        f" · stale tokens refused {stats['stale_token_rejections']}"
    )


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _keep_running(processes: DemoProcesses, console: Console) -> None:
    console.print(
        f"Still running (--keep): {processes.url}/ui/ ; try"
        f" [bold]leasehold jobs --status dead --url {processes.url}[/bold]. Ctrl+C stops it."
    )
    while True:
        processes.check()
        time.sleep(0.5)
