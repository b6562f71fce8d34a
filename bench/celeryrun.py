"""The workflow benchmark's phases on Celery with Redis (bench/workflows.py --compare
celery): plain tasks, ``chain``s of immutable signatures, and a ``chord`` whose body takes
the header's results, each sent with the workers stopped (SIGSTOP), then run (SIGCONT).

Two worker processes (``--workers``), each ``-P threads`` with at most 16 threads, as
Dramatiq in bench/throughput.py; the processing clock runs from the first start to the
last task's end, and a dependent's wait from its last parent's end to its start."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

from bench.harness import Proc, cpu_seconds, signal_all, wait_until
from bench.peers import Servers
from bench.workflows import WARM_UP, Figures, show

TIMEOUT = 900.0


def run_celery(args: argparse.Namespace, tmp: Path, servers: Servers) -> dict[str, Figures]:
    redis = servers.redis_url(3)
    env = {"LEASEHOLD_BENCH_CELERY_REDIS": redis, "LEASEHOLD_BENCH_STARTS": str(tmp / "celery")}
    os.environ.update(env)  # read when the app module is imported (once: no reload)
    app = importlib.import_module("bench.celeryapp").app
    workers = [
        Proc(
            f"celery{n}",
            [
                sys.executable,
                *("-m", "celery", "-A", "bench.celeryapp", "worker", "-P", "threads"),
                *("-c", str(min(args.concurrency, 16)), "-n", f"w{n}@%h", "--loglevel", "warning"),
            ],
            tmp,
            env,
        )
        for n in range(args.workers)
    ]
    for worker in workers:
        wait_until(lambda w=worker: _ready(app, w), 60, f"{worker.name} to answer a ping")
    pids = [*(p for w in workers for p in w.tree()), *servers.pids("celery-redis")]
    figures: dict[str, Figures] = {}
    done = 0
    try:
        for name, send in _phases(args, app):
            signal_all([w.pid for w in workers], signal.SIGSTOP)
            dependents = send()
            cpu_before = cpu_seconds(pids)
            signal_all([w.pid for w in workers], signal.SIGCONT)
            done += _count(args, name)
            wait_until(lambda d=done: _lines(tmp / "celery") >= d, TIMEOUT, f"celery {name}", 0.05)
            cpu = cpu_seconds(pids) - cpu_before
            if name != WARM_UP:
                figures[name] = _measure(tmp / "celery", name, dependents, cpu)
                show(f"celery {name}", figures[name])
    finally:
        for worker in workers:
            worker.popen.send_signal(signal.SIGCONT)
            worker.stop()
    return figures


def _ready(app: Any, worker: Proc) -> bool:
    if worker.popen.poll() is not None:
        raise RuntimeError(f"{worker.name} exited:\n{worker.log()[-3000:]}")
    replies = app.control.ping(timeout=0.5) or []
    return any(f"w{worker.name.removeprefix('celery')}@" in next(iter(r)) for r in replies)


def _count(args: argparse.Namespace, name: str) -> int:
    counts = {
        WARM_UP: min(args.plain, 1000),
        "plain": args.plain,
        "chains": args.chains * args.steps,
        "fan-in": args.fan_in + 1,
    }
    return counts[name]


def _phases(args: argparse.Namespace, app: Any) -> list[tuple[str, Any]]:
    from celery import chain, chord, group

    step = app.tasks["bench.step"]

    def plain(n: int, prefix: str) -> dict[str, list[str]]:
        group(step.si().set(task_id=f"{prefix}{i}") for i in range(n)).apply_async()
        return {}

    def chains() -> dict[str, list[str]]:
        parents = {}
        for c in range(args.chains):
            ids = [f"c{c}.{k}" for k in range(args.steps)]
            chain(step.si().set(task_id=i) for i in ids).apply_async()
            parents |= {ids[k]: [ids[k - 1]] for k in range(1, len(ids))}
        return parents

    def fan_in() -> dict[str, list[str]]:
        ids = [f"f{i}" for i in range(args.fan_in)]
        chord(step.si().set(task_id=i) for i in ids)(step.s().set(task_id="join"))
        return {"join": ids}

    return [
        (WARM_UP, lambda: plain(min(args.plain, 1000), "w")),
        ("plain", lambda: plain(args.plain, "p")),
        ("chains", chains),
        ("fan-in", fan_in),
    ]


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _measure(path: Path, name: str, parents: dict[str, list[str]], cpu: float) -> Figures:
    prefix = {"plain": "p", "chains": "c", "fan-in": "fj"}[name]
    times = {}
    for line in path.read_text().splitlines():
        task_id, start, end = line.split()
        if task_id[0] in prefix:
            times[task_id] = (float(start), float(end))
    n = len(times)
    first = min(s for s, _ in times.values())
    last = max(e for _, e in times.values())
    waits = [(times[job][0] - max(times[p][1] for p in ps)) * 1000 for job, ps in parents.items()]
    return Figures(n, n / (last - first), cpu / n * 1000, waits)
