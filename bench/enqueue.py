"""Enqueue one job at a time from one client, side by side with the peers.

    .venv/bin/python -m bench.enqueue [--jobs 1000] [--compare all|huey-redis,...] [--repeat 2]

Each system is set up on this machine (``bench/peers.py``: durable commits everywhere) with
no consumer running, and this process enqueues ``--jobs`` jobs one after the other, each
through the system's own client API as an application would (leasehold: ``Client.enqueue``,
one keep-alive connection; huey: calling the task; Dramatiq: ``actor.send``; procrastinate:
``task.defer``), each call returning once the job is stored. Prints jobs/s and the p50 and
p99 of one call, in milliseconds. The systems run in turn, ``--repeat`` rounds; compare the
ratios within one run: the machine may be shared.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench.harness import load_average
from bench.peers import Servers, choose, start


def percentile(ordered: list[float], p: float) -> float:
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def measure(name: str, tmp: Path, servers: Servers, jobs: int, synchronous: str) -> str:
    system = start(name, tmp, servers, synchronous)
    try:
        for n in range(50):  # warm up: connections, compiled statements
            system.enqueue(n)
        times = []
        started = time.perf_counter()
        for n in range(jobs):
            before = time.perf_counter()
            system.enqueue(n)
            times.append((time.perf_counter() - before) * 1000)
        rate = jobs / (time.perf_counter() - started)
    finally:
        system.close()
    times.sort()
    return (
        f"{name:<17} {rate:>7,.0f} jobs/s   p50 {statistics.median(times):6.2f} ms"
        f"   p99 {percentile(times, 99):6.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--compare", default=None, help="all, or systems separated by commas")
    parser.add_argument("--synchronous", default="FULL", choices=["FULL", "NORMAL"])
    parser.add_argument("--repeat", type=int, default=1, help="rounds over every system")
    args = parser.parse_args()
    names = choose(args.compare)
    print(
        f"enqueue one at a time, {args.jobs} jobs, one client; leasehold SQLite synchronous="
        f"{args.synchronous}; load average before: {load_average()}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="leasehold-bench-") as tmp:
        servers = Servers(Path(tmp))
        try:
            for _ in range(args.repeat):
                for name in names:
                    run = Path(tmp) / f"{name}-{time.monotonic_ns()}"
                    run.mkdir()
                    print(measure(name, run, servers, args.jobs, args.synchronous), flush=True)
        finally:
            servers.close()
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
