"""Workflows end to end: chains and a fan-in against plain jobs, on one coordinator.

    .venv/bin/python -m bench.workflows [--plain 10000] [--chains 1000] [--steps 10]
                                        [--fan-in 10000] [--workers 2] [--concurrency 200]
                                        [--postgres] [--compare celery]

One coordinator (SQLite, ``synchronous=FULL``, or ``--postgres`` on the tests' throwaway
server, durable) and ``--workers`` worker processes (``bench.apps:registry``), each running
``--concurrency`` no-op jobs at once; each job writes its id and start time to a file. Three
phases, after a warm-up of plain jobs, each enqueued with the workers stopped (SIGSTOP) and
then run (SIGCONT):

1. ``plain``: ``--plain`` jobs without dependencies, through ``POST /jobs/batch``;
2. ``chains``: ``--chains`` chains of ``--steps`` jobs, each step depending on the one
   before, 100 chains to a ``POST /jobs/batch`` (the steps name each other by ``ref``);
3. ``fan-in``: ``--fan-in`` jobs, then one job depending on all of them (``POST /jobs``
   with their ids in ``depends_on``).

For each phase: the processing rate (its jobs over the time from the first start to the
last completion, the coordinator's ``finished_at``), the CPU of the coordinator and the
workers per 1,000 jobs, and, for each job with parents, the time from its last parent's
completion (``finished_at``) to its start in the handler: p50 and p99 over the chains'
steps, the one figure of the fan-in's continuation.

``--compare celery`` runs the same three phases on Celery with Redis (broker and result
backend, ``appendfsync always``): ``chain`` for the chains, ``chord`` for the fan-in, the
same no-op recording its start, and its end for the parents' completion
(``bench/celeryapp.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import tempfile
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.apps import STARTS_ENV
from bench.harness import (
    Proc,
    cpu_seconds,
    load_average,
    signal_all,
    start_coordinator,
    start_leasehold_worker,
    wait_until,
)
from bench.peers import Servers
from leasehold.client import Client

KIND = "bench-wf"
BATCH = 1000
IN_FLIGHT = 4
TIMEOUT = 900.0
WARM_UP = "warm-up"  # a first phase of plain jobs, not measured: every process warm


@dataclass
class Phase:
    """One phase's jobs: every id, and each dependent's parents."""

    name: str
    ids: list[int] = field(default_factory=list)
    parents: dict[int, list[int]] = field(default_factory=dict)


@dataclass
class Figures:
    jobs: int
    per_second: float
    cpu_per_1000: float
    waits_ms: list[float]  # last parent's completion to the dependent's start


def post(url: str, path: str, body: Any) -> Any:
    request = urllib.request.Request(
        url + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.loads(answer.read())


async def in_batches(bodies: Sequence[Any], send: Callable[[Any], Any]) -> list[Any]:
    """``send`` each body in a thread, ``IN_FLIGHT`` at a time; the answers in order."""
    gate = asyncio.Semaphore(IN_FLIGHT)

    async def one(body: Any) -> Any:
        async with gate:
            return await asyncio.to_thread(send, body)

    return await asyncio.gather(*(one(b) for b in bodies))


def plain_items(n: int) -> list[dict[str, Any]]:
    return [{"kind": KIND, "idempotency_key": uuid.uuid4().hex} for _ in range(n)]


async def enqueue_plain(url: str, n: int) -> Phase:
    phase = Phase("plain")
    bodies = [{"jobs": plain_items(min(BATCH, n - s))} for s in range(0, n, BATCH)]
    for answer in await in_batches(bodies, lambda b: post(url, "/jobs/batch", b)):
        phase.ids += [item["job"]["id"] for item in answer["jobs"]]
    return phase


async def enqueue_chains(url: str, chains: int, steps: int) -> Phase:
    phase = Phase("chains")
    per_batch = max(1, BATCH // steps)
    bodies = []
    for first in range(0, chains, per_batch):
        items = []
        for chain in range(first, min(chains, first + per_batch)):
            for step in range(steps):
                item = {"kind": KIND, "ref": f"{chain}.{step}", "idempotency_key": uuid.uuid4().hex}
                if step:
                    item["depends_on"] = [{"ref": f"{chain}.{step - 1}"}]
                items.append(item)
        bodies.append({"jobs": items})
    for answer in await in_batches(bodies, lambda b: post(url, "/jobs/batch", b)):
        ids = [item["job"]["id"] for item in answer["jobs"]]
        for start in range(0, len(ids), steps):
            chain = ids[start : start + steps]
            phase.parents |= {chain[k]: [chain[k - 1]] for k in range(1, len(chain))}
        phase.ids += ids
    return phase


async def enqueue_fan_in(url: str, n: int) -> Phase:
    phase = await enqueue_plain(url, n)
    phase.name = "fan-in"
    body = {"kind": KIND, "depends_on": phase.ids, "idempotency_key": uuid.uuid4().hex}
    join = (await asyncio.to_thread(post, url, "/jobs", body))["id"]
    phase.parents[join] = list(phase.ids)
    phase.ids.append(join)
    return phase


def starts(path: Path) -> dict[int, float]:
    found: dict[int, float] = {}
    for line in path.read_text().splitlines():
        job_id, at = line.split()
        found.setdefault(int(job_id), float(at))
    return found


async def finished(url: str) -> dict[int, float]:
    """Every job's completion time, as the coordinator recorded it."""
    done: dict[int, float] = {}
    async with Client(url) as client:
        cursor = None
        while True:
            page = await client.list(cursor=cursor, limit=1000)
            done |= {j.id: j.finished_at.timestamp() for j in page.jobs if j.finished_at}
            if (cursor := page.next_cursor) is None:
                return done


def completed(url: str) -> int:
    with urllib.request.urlopen(url + "/stats", timeout=30) as answer:
        count: int = json.loads(answer.read())["by_status"]["completed"]
        return count


def run_leasehold(args: argparse.Namespace, tmp: Path, servers: Servers) -> dict[str, Figures]:
    database = servers.postgres_dsn(f"wf_{uuid.uuid4().hex[:8]}") if args.postgres else None
    coordinator, url = start_coordinator(tmp, "FULL", "warning", database)
    probe = tmp / "starts"
    workers: list[Proc] = []
    figures: dict[str, Figures] = {}
    try:
        for n in range(args.workers):
            workers.append(
                start_leasehold_worker(
                    f"w{n}",
                    url,
                    tmp,
                    {STARTS_ENV: str(probe)},
                    *("--concurrency", str(args.concurrency), "--kinds", KIND),
                    *("--wait-seconds", "5", "--log-level", "warning"),
                )
            )
        wait_until(lambda: all(w.popen.poll() is None for w in workers), 5, "the workers")
        pids = [coordinator.pid, *(w.pid for w in workers), *servers.pids("leasehold-pg")]
        done = 0
        for name, enqueue in phases(args, url):
            signal_all([w.pid for w in workers], signal.SIGSTOP)
            phase = asyncio.run(enqueue())
            cpu_before = cpu_seconds(pids)
            signal_all([w.pid for w in workers], signal.SIGCONT)
            done += len(phase.ids)
            wait_until(lambda d=done: completed(url) >= d, TIMEOUT, f"the {name} jobs", 0.05)
            cpu = cpu_seconds(pids) - cpu_before
            if name != WARM_UP:
                figures[name] = measure(phase, starts(probe), asyncio.run(finished(url)), cpu)
                show(f"leasehold {name}", figures[name])
    finally:
        for worker in workers:
            worker.popen.send_signal(signal.SIGCONT)
            worker.stop()
        coordinator.stop()
    return figures


def phases(args: argparse.Namespace, url: str) -> list[tuple[str, Callable[[], Any]]]:
    return [
        (WARM_UP, lambda: enqueue_plain(url, min(args.plain, 1000))),
        ("plain", lambda: enqueue_plain(url, args.plain)),
        ("chains", lambda: enqueue_chains(url, args.chains, args.steps)),
        ("fan-in", lambda: enqueue_fan_in(url, args.fan_in)),
    ]


def measure(phase: Phase, start: dict[int, float], end: dict[int, float], cpu: float) -> Figures:
    first = min(start[i] for i in phase.ids)
    last = max(end[i] for i in phase.ids)
    waits = [
        (start[job] - max(end[p] for p in parents)) * 1000 for job, parents in phase.parents.items()
    ]
    n = len(phase.ids)
    return Figures(n, n / (last - first), cpu / n * 1000, waits)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def show(name: str, f: Figures) -> None:
    waits = (
        f"   last parent done -> start p50 {percentile(f.waits_ms, 0.5):.1f} ms,"
        f" p99 {percentile(f.waits_ms, 0.99):.1f} ms ({len(f.waits_ms):,} dependents)"
        if f.waits_ms
        else ""
    )
    print(
        f"{name:<20} {f.jobs:>6,} jobs  {f.per_second:>7,.0f} jobs/s"
        f"  CPU {f.cpu_per_1000:.3f} s/1000 jobs{waits}",
        flush=True,
    )


def table(results: dict[str, dict[str, Figures]]) -> None:
    print(
        f"\n{'system':<12} {'phase':<8} {'jobs/s':>8} {'vs plain':>9} {'CPU/1000':>9}"
        f" {'wait p50 ms':>12} {'wait p99 ms':>12}"
    )
    for system, figures in results.items():
        base = figures["plain"].per_second
        for name, f in figures.items():
            p50 = f"{percentile(f.waits_ms, 0.5):.1f}" if f.waits_ms else "-"
            p99 = f"{percentile(f.waits_ms, 0.99):.1f}" if f.waits_ms else "-"
            print(
                f"{system:<12} {name:<8} {f.per_second:>8,.0f} {f.per_second / base:>8.2f}x"
                f" {f.cpu_per_1000:>9.3f} {p50:>12} {p99:>12}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plain", type=int, default=10_000)
    parser.add_argument("--chains", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--fan-in", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--compare", default="", help="celery")
    args = parser.parse_args()
    print(
        f"{args.plain:,} plain jobs, {args.chains:,} chains of {args.steps}, a fan-in of"
        f" {args.fan_in:,}; {args.workers} workers x {args.concurrency};"
        f" load average before: {load_average()}",
        flush=True,
    )
    results: dict[str, dict[str, Figures]] = {}
    with tempfile.TemporaryDirectory(prefix="leasehold-bench-") as tmp:
        servers = Servers(Path(tmp))
        try:
            name = "leasehold-pg" if args.postgres else "leasehold"
            results[name] = run_leasehold(args, Path(tmp), servers)
            if "celery" in args.compare:
                from bench.celeryrun import run_celery

                results["celery"] = run_celery(args, Path(tmp), servers)
        finally:
            servers.close()
    table(results)
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
