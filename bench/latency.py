"""Enqueue-to-start latency on an idle system: jobs enqueued one at a time.

    .venv/bin/python -m bench.latency [--samples 500] [--gap 0.02] [--compare all|huey-redis,...]

For each system (``bench/peers.py``; leasehold on SQLite first, with ``synchronous=FULL`` by
default), one consumer runs one job at a time: leasehold's worker long-polls
(``--wait-seconds 30``), huey's consumer runs one thread (on SQLite polling every
millisecond; on Redis blocked on the list), Dramatiq one process with one thread,
procrastinate one worker with concurrency 1 (woken by LISTEN/NOTIFY). This process
enqueues one job through the system's own client API, notes the time just before, and
waits for the job's handler to report the time it started, by a UDP datagram; then it
pauses (``--gap``) so that the consumer is back waiting and the system idle before the
next job. Prints p50, p90, p99 and the worst, in milliseconds, per system.

leasehold's latency includes one durable commit on the coordinator: an enqueue that finds
a worker waiting leases the job to it in the same transaction.
"""

from __future__ import annotations

import argparse
import math
import socket
import statistics
import tempfile
import time
from pathlib import Path

from bench.apps import UDP_ENV
from bench.harness import load_average
from bench.peers import Servers, System, choose, start


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


def measure(system: System, sock: socket.socket, samples: int, gap: float) -> list[float]:
    """Latencies in ms; a job not started within the socket's timeout counts as infinite."""
    latencies = []
    for n in range(-10, samples):  # ten to warm up, not counted
        time.sleep(gap)
        sent = time.time()
        system.enqueue(n)
        try:
            latency = (started_at(sock, n) - sent) * 1000
        except TimeoutError:
            latency = math.inf
        if n >= 0:
            latencies.append(latency)
    return latencies


def run(name: str, tmp: Path, servers: Servers, args: argparse.Namespace) -> list[float]:
    sock = listener()
    system = start(name, tmp, servers, args.synchronous)
    try:
        system.start_consumers({UDP_ENV: str(sock.getsockname()[1])}, 0, 1)
        return measure(system, sock, args.samples, args.gap)
    finally:
        system.close()
        sock.close()


def show(name: str, latencies: list[float]) -> None:
    ordered = sorted(latencies)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]

    print(
        f"{name:<17} p50 {statistics.median(ordered):6.2f} ms   p90 {pct(90):6.2f} ms"
        f"   p99 {pct(99):6.2f} ms   worst {ordered[-1]:7.2f} ms   ({len(ordered)} jobs,"
        f" {sum(math.isinf(x) for x in ordered)} not started within 10 s)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--gap", type=float, default=0.02, help="idle seconds between jobs")
    parser.add_argument("--synchronous", default="FULL", choices=["FULL", "NORMAL"])
    parser.add_argument("--compare", default=None, help="all, or systems separated by commas")
    args = parser.parse_args()
    print(
        f"enqueue-to-start latency, {args.samples} jobs one at a time, {args.gap * 1000:g} ms"
        f" apart; leasehold SQLite synchronous={args.synchronous}; load average before:"
        f" {load_average()}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="leasehold-bench-") as tmp:
        servers = Servers(Path(tmp))
        try:
            for name in choose(args.compare):
                run_dir = Path(tmp) / name
                run_dir.mkdir()
                show(name, run(name, run_dir, servers, args))
        finally:
            servers.close()
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
