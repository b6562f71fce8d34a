"""End-to-end throughput: N no-op jobs enqueued in batches, then run by worker processes.

    .venv/bin/python -m bench.throughput [--jobs 20000] [--workers 2] [--concurrency 200]
                                         [--synchronous FULL] [--compare huey] [--repeat 1]

Everything runs on this machine: one coordinator process (SQLite, ``synchronous=FULL`` by
default: every 2xx is on disk), this process as the producer, and ``--workers`` worker
processes (``leasehold worker bench.apps:registry``), each running ``--concurrency`` jobs at
once. Phases:

1. enqueue: ``--jobs`` jobs through ``POST /jobs/batch``, 1,000 a request, 4 requests in
   flight, with the workers started but stopped (SIGSTOP), so nothing else runs;
2. processing: the workers are continued (SIGCONT); timed from the first job's start
   (each job writes its start time to a probe file) until the coordinator counts every job
   completed, so every result is on disk when the clock stops.

CPU: user + system seconds of the coordinator and the worker processes during the
processing phase (from /proc), per 1,000 jobs.

``--compare huey`` runs the same workload in the same run on huey with its SQLite storage
(``SqliteHuey``, ``fsync=True``: synchronous=FULL as well, WAL journal) and huey's consumer
with ``--workers`` worker processes (``-k process``): same job count, the same no-op job
(record the start time, return None, so huey stores no result), default logging for both
(INFO, to a file). Huey's consumer polls with ``-d 0.01 -m 0.1`` so that an idle pause
never delays its start; its processing clock stops at the last job's start (it keeps no
completion record), which favours huey. Huey has no batch enqueue: its enqueue rate is
measured on 1,000 tasks through its API, the rest are loaded in one transaction.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from bench.apps import PROBE_ENV, PROBE_RECORD
from bench.harness import (
    Proc,
    cpu_seconds,
    load_average,
    signal_all,
    start_coordinator,
    start_huey_consumer,
    start_leasehold_worker,
    wait_until,
)
from leasehold.client import Client, NewJob

BATCH = 1000
IN_FLIGHT = 4
TIMEOUT = 600.0


@dataclass
class Figures:
    enqueue_per_s: float
    process_per_s: float
    cpu_per_1000: float  # coordinator + workers while processing
    server_cpu_per_1000: float  # of which the coordinator's (huey: the consumer's main process)


def probe_times(path: Path) -> list[float]:
    if not path.exists():
        return []
    return [float(line) for line in path.read_bytes().splitlines()]


def probe_count(path: Path) -> int:
    return path.stat().st_size // PROBE_RECORD if path.exists() else 0


def completed(url: str) -> int:
    with urllib.request.urlopen(url + "/stats", timeout=10) as answer:
        count: int = json.loads(answer.read())["by_status"]["completed"]
        return count


async def enqueue_all(url: str, jobs: int) -> float:
    """Seconds to enqueue ``jobs`` no-op jobs in batches."""
    async with Client(url) as client:
        batches = [
            [NewJob("bench") for _ in range(min(BATCH, jobs - start))]
            for start in range(0, jobs, BATCH)
        ]
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def send(batch: list[NewJob]) -> None:
            async with gate:
                await client.enqueue_many(batch)

        started = time.perf_counter()
        await asyncio.gather(*(send(b) for b in batches))
        return time.perf_counter() - started


def profile(directory: Path, pid: int, name: str) -> subprocess.Popen[bytes]:
    """py-spy sampling ``pid`` into DIRECTORY/NAME.txt (collapsed stacks) until SIGINT."""
    directory.mkdir(parents=True, exist_ok=True)
    spy = Path(sys.executable).parent / "py-spy"
    out = directory / f"{name}.txt"
    return subprocess.Popen(
        [str(spy), "record", "--pid", str(pid), "--format", "raw", "--rate", "250", "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def run_leasehold(args: argparse.Namespace, tmp: Path) -> Figures:
    coordinator, url = start_coordinator(tmp, args.synchronous, args.log_level)
    probe = tmp / "probe"
    workers: list[Proc] = []
    try:
        for n in range(args.workers):
            workers.append(
                start_leasehold_worker(
                    f"w{n}",
                    url,
                    tmp,
                    {PROBE_ENV: str(probe)},
                    "--concurrency",
                    str(args.concurrency),
                    "--wait-seconds",
                    "5",
                )
            )
        for worker in workers:
            worker.wait_log("worker.started")
        worker_pids = [w.pid for w in workers]
        signal_all(worker_pids, signal.SIGSTOP)
        pids = [coordinator.pid, *worker_pids]
        enqueue_seconds = asyncio.run(enqueue_all(url, args.jobs))
        profilers = (
            [
                profile(args.profile, pid, name)
                for pid, name in zip(pids, ["coordinator", *(w.name for w in workers)], strict=True)
            ]
            if args.profile
            else []
        )
        cpu_before = cpu_seconds(pids)
        server_before = cpu_seconds([coordinator.pid])
        signal_all(worker_pids, signal.SIGCONT)
        wait_until(lambda: probe_count(probe) >= args.jobs, TIMEOUT, "every job to start")
        wait_until(lambda: completed(url) >= args.jobs, TIMEOUT, "every job completed", 0.005)
        finished = time.time()
        cpu = cpu_seconds(pids) - cpu_before
        server = cpu_seconds([coordinator.pid]) - server_before
        for profiler in profilers:
            profiler.send_signal(signal.SIGINT)
            profiler.wait(30)
        first = min(probe_times(probe))
        return Figures(
            args.jobs / enqueue_seconds,
            args.jobs / (finished - first),
            cpu / args.jobs * 1000,
            server / args.jobs * 1000,
        )
    finally:
        for worker in workers:
            worker.popen.send_signal(signal.SIGCONT)
            worker.stop()
        coordinator.stop()


HUEY_DB_ENV = "LEASEHOLD_BENCH_HUEY_DB"  # read by bench.hueyapp at import


def run_huey(args: argparse.Namespace, tmp: Path) -> Figures:
    probe = tmp / "huey-probe"
    env = {HUEY_DB_ENV: str(tmp / "huey.db"), PROBE_ENV: str(probe)}
    os.environ[HUEY_DB_ENV] = env[HUEY_DB_ENV]
    import bench.hueyapp as apps  # huey is a benchmark extra: imported only when compared

    apps = importlib.reload(apps)  # this run's database file
    consumer = start_huey_consumer(
        tmp, env, "-w", str(args.workers), "-k", "process", "-d", "0.01", "-m", "0.1", "-n"
    )
    try:
        consumer.wait_log("consumer started")
        wait_until(lambda: len(consumer.tree()) > args.workers, 30, "huey's worker processes")
        pids = consumer.tree()
        signal_all(pids, signal.SIGSTOP)
        sample = min(args.jobs, 1000)
        started = time.perf_counter()
        for _ in range(sample):
            apps.noop_task()
        enqueue_seconds = time.perf_counter() - started
        rest = args.jobs - sample
        with apps.huey.storage.db(commit=True) as cursor:
            message = apps.huey.serialize_task(apps.noop_task.s())
            cursor.executemany(
                "insert into task (queue, data, priority) values (?, ?, 0)",
                [(apps.huey.storage.name, message)] * rest,
            )
        cpu_before = cpu_seconds(pids)
        server_before = cpu_seconds([consumer.pid])
        signal_all(pids, signal.SIGCONT)
        wait_until(lambda: probe_count(probe) >= args.jobs, TIMEOUT, "every huey task to start")
        cpu = cpu_seconds(pids) - cpu_before
        server = cpu_seconds([consumer.pid]) - server_before
        times = probe_times(probe)
        return Figures(
            sample / enqueue_seconds,
            args.jobs / (max(times) - min(times)),
            cpu / args.jobs * 1000,
            server / args.jobs * 1000,
        )
    finally:
        consumer.stop(signal.SIGINT)
        os.environ.pop(HUEY_DB_ENV, None)


def show(name: str, figures: Figures) -> None:
    print(
        f"{name:<10} enqueue {figures.enqueue_per_s:>9,.0f} jobs/s   processing"
        f" {figures.process_per_s:>7,.0f} jobs/s   CPU {figures.cpu_per_1000:.3f} s/1000 jobs"
        f" (coordinator {figures.server_cpu_per_1000:.3f})",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--concurrency", type=int, default=200, help="jobs at once per worker")
    parser.add_argument("--synchronous", default="FULL", choices=["FULL", "NORMAL"])
    parser.add_argument("--compare", choices=["huey"], default=None)
    parser.add_argument(
        "--log-level", default="info", help="the coordinator's (debug: a line per request)"
    )
    parser.add_argument("--keep", type=Path, default=None, help="copy the logs here")
    parser.add_argument("--repeat", type=int, default=1, help="runs; medians are printed")
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="py-spy the coordinator and workers while they process, into this directory",
    )
    args = parser.parse_args()
    print(
        f"{args.jobs:,} no-op jobs, {args.workers} worker processes, synchronous="
        f"{args.synchronous}; load average before: {load_average()}",
        flush=True,
    )
    ours: list[Figures] = []
    theirs: list[Figures] = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="leasehold-bench-") as tmp:
            ours.append(run_leasehold(args, Path(tmp)))
            show("leasehold", ours[-1])
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                for log in Path(tmp).glob("*.log"):
                    shutil.copy(log, args.keep / log.name)
        if args.compare == "huey":
            with tempfile.TemporaryDirectory(prefix="huey-bench-") as tmp:
                theirs.append(run_huey(args, Path(tmp)))
                show("huey", theirs[-1])
            print(f"{'':<10} ratio {ours[-1].process_per_s / theirs[-1].process_per_s:.2f}x")
    if args.repeat > 1:
        print("medians:")
        show("leasehold", median(ours))
        if theirs:
            show("huey", median(theirs))
            ratios = [o.process_per_s / t.process_per_s for o, t in zip(ours, theirs, strict=True)]
            print(f"{'':<10} ratio {statistics.median(ratios):.2f}x (median of per-run ratios)")
    print(f"load average after: {load_average()}")


def median(runs: list[Figures]) -> Figures:
    return Figures(
        statistics.median(r.enqueue_per_s for r in runs),
        statistics.median(r.process_per_s for r in runs),
        statistics.median(r.cpu_per_1000 for r in runs),
        statistics.median(r.server_cpu_per_1000 for r in runs),
    )


if __name__ == "__main__":
    main()
