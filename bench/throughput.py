"""End-to-end throughput: N no-op jobs enqueued, then run by worker processes.

    .venv/bin/python -m bench.throughput [--jobs 20000] [--workers 2] [--concurrency 200]
                                         [--synchronous FULL] [--compare all|huey,...]
                                         [--repeat 1]

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
processing phase (from /proc), per 1,000 jobs; for a system on PostgreSQL or Redis, the
database server's processes count too.

``--compare`` runs the same workload in the same run on the peers of ``bench/peers.py``
(``all``, or names separated by commas; ``huey`` is huey-sqlite) and prints one table:
the same job count and no-op job, durable commits everywhere, default logging (INFO, to a
file), ``--workers`` consumer processes. huey: ``-k process``, polling with
``-d 0.01 -m 0.1`` so that an idle pause never delays a start; Dramatiq: ``--concurrency``
threads a process, at most 16; procrastinate: ``--concurrency`` at most 50 a worker. The
peers' processing clock stops at the last job's start (they keep no completion record, or
we do not wait for it), which favours them. The enqueue column is each system's fastest
way in: batches for leasehold and procrastinate, one call a job for huey and Dramatiq
(huey-sqlite: 1,000 calls; the rest written in one transaction).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

from bench.apps import PROBE_ENV, PROBE_RECORD
from bench.harness import (
    Proc,
    cpu_seconds,
    load_average,
    signal_all,
    start_coordinator,
    start_leasehold_worker,
    wait_until,
)
from bench.peers import Servers, choose, start
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


def run_leasehold(
    args: argparse.Namespace, tmp: Path, servers: Servers, postgres: bool = False
) -> Figures:
    database = servers.postgres_dsn(f"leasehold_{uuid.uuid4().hex[:8]}") if postgres else None
    database_servers = servers.pids("leasehold-pg") if postgres else []
    coordinator, url = start_coordinator(tmp, args.synchronous, args.log_level, database)
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
        pids = [coordinator.pid, *worker_pids, *database_servers]
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
        server_before = cpu_seconds([coordinator.pid, *database_servers])
        signal_all(worker_pids, signal.SIGCONT)
        wait_until(lambda: probe_count(probe) >= args.jobs, TIMEOUT, "every job to start")
        wait_until(lambda: completed(url) >= args.jobs, TIMEOUT, "every job completed", 0.005)
        finished = time.time()
        cpu = cpu_seconds(pids) - cpu_before
        server = cpu_seconds([coordinator.pid, *database_servers]) - server_before
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


def run_peer(name: str, args: argparse.Namespace, tmp: Path, servers: Servers) -> Figures:
    probe = tmp / "probe"
    system = start(name, tmp, servers)
    try:
        system.start_consumers({PROBE_ENV: str(probe)}, args.workers, args.concurrency)
        consumers = system.consumer_pids()
        signal_all(consumers, signal.SIGSTOP)
        enqueue_rate = system.load(args.jobs)
        pids = [*consumers, *servers.pids(name)]
        cpu_before = cpu_seconds(pids)
        server_before = cpu_seconds(servers.pids(name))
        signal_all(consumers, signal.SIGCONT)
        wait_until(lambda: probe_count(probe) >= args.jobs, TIMEOUT, f"every {name} job to start")
        cpu = cpu_seconds(pids) - cpu_before
        server = cpu_seconds(servers.pids(name)) - server_before
        times = probe_times(probe)
        return Figures(
            enqueue_rate,
            args.jobs / (max(times) - min(times)),
            cpu / args.jobs * 1000,
            server / args.jobs * 1000,
        )
    finally:
        system.close()


def show(name: str, figures: Figures) -> None:
    print(
        f"{name:<17} enqueue {figures.enqueue_per_s:>9,.0f} jobs/s   processing"
        f" {figures.process_per_s:>7,.0f} jobs/s   CPU {figures.cpu_per_1000:.3f} s/1000 jobs"
        f" (coordinator or broker {figures.server_cpu_per_1000:.3f})",
        flush=True,
    )


def run(name: str, args: argparse.Namespace, servers: Servers) -> Figures:
    with tempfile.TemporaryDirectory(prefix="leasehold-bench-") as tmp:
        if name.startswith("leasehold"):
            figures = run_leasehold(args, Path(tmp), servers, postgres=name == "leasehold-pg")
        else:
            figures = run_peer(name, args, Path(tmp), servers)
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            for log in Path(tmp).glob("*.log"):
                shutil.copy(log, args.keep / f"{name}-{log.name}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--concurrency", type=int, default=200, help="jobs at once per worker")
    parser.add_argument("--synchronous", default="FULL", choices=["FULL", "NORMAL"])
    parser.add_argument("--compare", default=None, help="all, or systems separated by commas")
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
    names = choose(args.compare)
    print(
        f"{args.jobs:,} no-op jobs, {args.workers} worker processes x {args.concurrency},"
        f" synchronous={args.synchronous}; load average before: {load_average()}",
        flush=True,
    )
    results: dict[str, list[Figures]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory(prefix="leasehold-servers-") as tmp:
        servers = Servers(Path(tmp))
        try:
            for _ in range(args.repeat):
                for name in names:
                    results[name].append(run(name, args, servers))
                    show(name, results[name][-1])
        finally:
            servers.close()
    if len(names) > 1 or args.repeat > 1:
        table(results)
    print(f"load average after: {load_average()}")


def table(results: dict[str, list[Figures]]) -> None:
    """Medians over the runs, and each system's processing rate against leasehold-sqlite's
    (the median of the per-run ratios)."""
    ours = results["leasehold-sqlite"]
    print(
        f"\n{'median of runs':<17} {'enqueue/s':>10} {'process/s':>10} {'CPU/1000':>9} {'ours/theirs':>12}"
    )
    for name, runs in results.items():
        m = median(runs)
        ratio = statistics.median(
            o.process_per_s / t.process_per_s for o, t in zip(ours, runs, strict=True)
        )
        print(
            f"{name:<17} {m.enqueue_per_s:>10,.0f} {m.process_per_s:>10,.0f}"
            f" {m.cpu_per_1000:>9.3f} {ratio:>11.2f}x"
        )


def median(runs: list[Figures]) -> Figures:
    return Figures(
        statistics.median(r.enqueue_per_s for r in runs),
        statistics.median(r.process_per_s for r in runs),
        statistics.median(r.cpu_per_1000 for r in runs),
        statistics.median(r.server_cpu_per_1000 for r in runs),
    )


if __name__ == "__main__":
    main()
