"""What an idle system costs: coordinator and worker CPU while long polls wait.

    .venv/bin/python -m bench.idle [--workers 4] [--seconds 60] [--polls 0]

One coordinator (SQLite, ``synchronous=FULL``) and ``--workers`` worker processes
long-polling with ``--wait-seconds 30`` and nothing to do. After they have started, it reads
their CPU time from /proc, waits ``--seconds``, and prints what each side used meanwhile.
Run it with ``--workers 0`` too: the difference is what the waiting polls cost.

``--polls N`` adds N raw long polls (30 s each, renewed as they end) held open by this
process itself, as many idle workers would: what 1,000 waiting polls cost the coordinator.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import threading
import time
from pathlib import Path

import aiohttp

from bench.harness import Proc, cpu_seconds, load_average, start_coordinator, start_leasehold_worker


async def _hold_polls(url: str, n: int, stop: threading.Event) -> None:
    """Keep ``n`` long polls waiting until ``stop`` is set."""
    connector = aiohttp.TCPConnector(limit=n + 10)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def poll(name: str) -> None:
            while not stop.is_set():
                body = {"worker_id": name, "wait_seconds": 30}
                async with session.post(url + "/lease", json=body) as answer:
                    await answer.read()

        tasks = [asyncio.create_task(poll(f"p{k}")) for k in range(n)]
        await asyncio.to_thread(stop.wait)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _start_polls(url: str, n: int, stop: threading.Event) -> threading.Thread:
    thread = threading.Thread(target=asyncio.run, args=(_hold_polls(url, n, stop),), daemon=True)
    thread.start()
    return thread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--polls", type=int, default=0)
    args = parser.parse_args()
    print(f"load average before: {load_average()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="leasehold-bench-") as tmp:
        coordinator, url = start_coordinator(Path(tmp), "FULL")
        workers: list[Proc] = []
        stop = threading.Event()
        try:
            if args.polls:
                _start_polls(url, args.polls, stop)
            for n in range(args.workers):
                worker = start_leasehold_worker(f"w{n}", url, Path(tmp), {}, "--wait-seconds", "30")
                workers.append(worker)
            for worker in workers:
                worker.wait_log("worker.started")
            time.sleep(2.0)  # past start-up
            pids = [w.pid for w in workers]
            coordinator_before, workers_before = cpu_seconds([coordinator.pid]), cpu_seconds(pids)
            started = time.monotonic()
            time.sleep(args.seconds)
            elapsed = time.monotonic() - started
            coordinator_used = cpu_seconds([coordinator.pid]) - coordinator_before
            workers_used = cpu_seconds(pids) - workers_before
        finally:
            stop.set()
            for worker in workers:
                worker.stop()
            coordinator.stop()
    print(
        f"idle {elapsed:.0f} s with {args.workers} long-polling workers and {args.polls} raw"
        f" long polls: coordinator CPU "
        f"{coordinator_used:.2f} s, workers CPU {workers_used:.2f} s (together)"
    )


if __name__ == "__main__":
    main()
