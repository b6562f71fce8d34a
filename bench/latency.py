"""Enqueue-to-start latency on an idle system: jobs enqueued one at a time.

    .venv/bin/python -m bench.latency [--samples 500] [--synchronous FULL] [--compare huey]

One coordinator process (SQLite, ``synchronous=FULL`` by default) and one worker process
(``leasehold worker bench.apps:registry``, long-polling with ``--wait-seconds 30``). This
process enqueues one job (``POST /jobs``, as ``Client.enqueue`` sends it), notes the time
just before, and waits for the job's handler to report the time it started, by a UDP
datagram; then it pauses (``--gap``) so that the worker is back in its long poll and the
system idle before the next job. Prints p50, p90, p99 and the worst, in milliseconds.

The latency includes two durable commits on the coordinator (the enqueue, and the lease
that hands the job to the worker), each an fsync with ``synchronous=FULL``.

``--compare huey`` measures huey with its SQLite storage (``SqliteHuey``, ``fsync=True``)
tuned for latency: one consumer worker thread polling the queue every millisecond
(``-w 1 -k thread -d 0.001 -m 0.001 -b 1``); the task is enqueued through huey's API.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import signal
import socket
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.apps import UDP_ENV
from bench.harness import (
    Proc,
    load_average,
    start_coordinator,
    start_huey_consumer,
    start_leasehold_worker,
)
from leasehold.client import Client

HUEY_DB_ENV = "LEASEHOLD_BENCH_HUEY_DB"  # read by bench.hueyapp at import


def listener() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(10.0)
    return sock


def started_at(sock: socket.socket, tag: int) -> float:
    """The start time the handler of job ``tag`` reported."""
    while True:
        data = sock.recv(256).decode().split()
        if int(data[0]) == tag:
            return float(data[1])


def measure(
    enqueue: Callable[[int], None], sock: socket.socket, samples: int, gap: float
) -> list[float]:
    latencies = []
    for n in range(-10, samples):  # ten to warm up, not counted
        time.sleep(gap)
        sent = time.time()
        enqueue(n)
        latency = started_at(sock, n) - sent
        if n >= 0:
            latencies.append(latency * 1000)
    return latencies


def run_leasehold(args: argparse.Namespace, tmp: Path) -> list[float]:
    sock = listener()
    coordinator, url = start_coordinator(tmp, args.synchronous)
    worker: Proc | None = None
    try:
        env = {UDP_ENV: str(sock.getsockname()[1])}
        worker = start_leasehold_worker("w0", url, tmp, env, "--wait-seconds", "30")
        worker.wait_log("worker.started")
        loop = asyncio.new_event_loop()
        client = Client(url)
        try:

            def enqueue(n: int) -> None:
                loop.run_until_complete(client.enqueue("bench", n))

            return measure(enqueue, sock, args.samples, args.gap)
        finally:
            loop.run_until_complete(client.close())
            loop.close()
    finally:
        if worker is not None:
            worker.stop()
        coordinator.stop()
        sock.close()


def run_huey(args: argparse.Namespace, tmp: Path) -> list[float]:
    sock = listener()
    env = {HUEY_DB_ENV: str(tmp / "huey.db"), UDP_ENV: str(sock.getsockname()[1])}
    os.environ[HUEY_DB_ENV] = env[HUEY_DB_ENV]
    import bench.hueyapp as apps  # huey is a benchmark extra: imported only when compared

    apps = importlib.reload(apps)  # this run's database file
    consumer = start_huey_consumer(
        tmp, env, "-w", "1", "-k", "thread", "-d", "0.001", "-m", "0.001", "-b", "1", "-n"
    )
    try:
        consumer.wait_log("consumer started")
        return measure(lambda n: apps.noop_task(n), sock, args.samples, args.gap)
    finally:
        consumer.stop(signal.SIGINT)
        os.environ.pop(HUEY_DB_ENV, None)
        sock.close()


def show(name: str, latencies: list[float]) -> None:
    ordered = sorted(latencies)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]

    print(
        f"{name:<10} p50 {statistics.median(ordered):6.2f} ms   p90 {pct(90):6.2f} ms"
        f"   p99 {pct(99):6.2f} ms   worst {ordered[-1]:6.2f} ms   ({len(ordered)} jobs)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--gap", type=float, default=0.05, help="idle seconds between jobs")
    parser.add_argument("--synchronous", default="FULL", choices=["FULL", "NORMAL"])
    parser.add_argument("--compare", choices=["huey"], default=None)
    args = parser.parse_args()
    print(
        f"enqueue-to-start latency, {args.samples} jobs one at a time, synchronous="
        f"{args.synchronous}; load average before: {load_average()}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="leasehold-bench-") as tmp:
        show("leasehold", run_leasehold(args, Path(tmp)))
    if args.compare == "huey":
        with tempfile.TemporaryDirectory(prefix="huey-bench-") as tmp:
            show("huey", run_huey(args, Path(tmp)))
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
