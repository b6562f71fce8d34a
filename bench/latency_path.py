"""Where leasehold's enqueue-to-start time goes on an idle system, hop by hop.

    .venv/bin/python -m bench.latency_path [--samples 100] [--gap 0.02] [--synchronous FULL]

The setting of ``bench/latency.py`` for leasehold on SQLite alone: one worker long-polling,
one job enqueued at a time through ``Client.enqueue``, ``--gap`` seconds apart. The
coordinator logs at debug level, so that each request's line gives when it was answered
and how long it took (from which: when it arrived); the handler reports when it started by
a UDP datagram. All three processes read the same clock. Prints, per job, the median and
p90 of the time from the producer's call to:

- the coordinator starting on the request (the client's work, the loopback hop, waking the
  coordinator, parsing the request);
- the enqueue answered (the insert, and the lease made in the same commit for the waiting
  worker);
- the worker's long poll answered;
- the handler started (waking the worker, parsing the answer, starting the job);
- the producer's call returning.

The debug log costs the coordinator a little; ``bench/latency.py`` gives the figures
without it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.apps import UDP_ENV
from bench.harness import load_average, start_coordinator, start_leasehold_worker
from bench.latency import listener, started_at
from leasehold.client import Client

STEPS = (
    "coordinator starts on the enqueue",
    "enqueue answered",
    "worker's long poll answered",
    "handler started",
    "producer's call returned",
)


def _time(line: dict[str, Any]) -> float:
    return datetime.fromisoformat(line["timestamp"].replace("Z", "+00:00")).timestamp()


def _requests(log: Path, route: str) -> list[tuple[float, float]]:
    """(arrived, answered) of each logged request to ``route``, in the log's order."""
    found = []
    for text in log.read_text().splitlines():
        if not text.startswith("{"):
            continue
        line = json.loads(text)
        if line.get("event") == "http.request" and line.get("route") == route:
            answered = _time(line)
            found.append((answered - line["duration_ms"] / 1000, answered))
    return found


def run(samples: int, gap: float, synchronous: str) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory(prefix="leasehold-bench-") as name:
        tmp = Path(name)
        coordinator, url = start_coordinator(tmp, synchronous, "debug")
        sock: socket.socket = listener()
        port = str(sock.getsockname()[1])
        worker = start_leasehold_worker("w0", url, tmp, {UDP_ENV: port}, "--wait-seconds", "30")
        loop = asyncio.new_event_loop()
        client = Client(url)
        calls: list[tuple[float, float, float]] = []  # sent, returned, handler started
        try:
            worker.wait_log("worker.started")
            for n in range(-10, samples):  # ten to warm up, not counted
                time.sleep(gap)
                sent = time.time()
                loop.run_until_complete(client.enqueue("bench", n))
                returned = time.time()
                began = started_at(sock, n)
                if n >= 0:
                    calls.append((sent, returned, began))
        finally:
            loop.run_until_complete(client.close())
            loop.close()
            worker.stop()
            coordinator.stop()
        enqueues = _requests(tmp / "coordinator.log", "/jobs")[-samples:]
        polls = [answered for _, answered in _requests(tmp / "coordinator.log", "/leases")]
        polls += [answered for _, answered in _requests(tmp / "coordinator.log", "/lease")]
        polls.sort()
    steps: dict[str, list[float]] = {step: [] for step in STEPS}
    for (sent, returned, began), (arrived, answered) in zip(calls, enqueues, strict=True):
        # The poll answered with this job: the first answered once the enqueue arrived.
        poll = min((t for t in polls if t >= arrived), default=float("nan"))
        for step, at in zip(STEPS, (arrived, answered, poll, began, returned), strict=True):
            steps[step].append((at - sent) * 1000)
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--gap", type=float, default=0.02, help="seconds between jobs")
    parser.add_argument("--synchronous", default="FULL", choices=["FULL", "NORMAL"])
    args = parser.parse_args()
    print(
        f"enqueue-to-start, hop by hop: {args.samples} jobs one at a time, {args.gap * 1000:g} ms"
        f" apart; leasehold SQLite synchronous={args.synchronous}; ms after the producer's"
        f" call began; load average before: {load_average()}",
        flush=True,
    )
    steps = run(args.samples, args.gap, args.synchronous)
    for step, times in steps.items():
        ordered = sorted(times)
        p90 = ordered[int(0.9 * (len(ordered) - 1))]
        print(f"{step:<36} p50 {statistics.median(ordered):6.2f}   p90 {p90:6.2f}")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
