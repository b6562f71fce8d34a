"""The systems the benchmarks put side by side, each started on this machine in one run.

    leasehold-sqlite   leasehold's coordinator on SQLite (synchronous=FULL)
    leasehold-pg       leasehold's coordinator on PostgreSQL
    huey-sqlite        huey with SqliteHuey (fsync=True)
    huey-redis         huey with RedisHuey
    dramatiq-redis     Dramatiq with its Redis broker
    procrastinate-pg   procrastinate on PostgreSQL (psycopg 3)

Durable commits everywhere: SQLite with synchronous=FULL, PostgreSQL with fsync and
synchronous_commit on (``tests/pgserver.py`` with ``durable=True``), Redis with
``appendonly yes`` and ``appendfsync always``. Redis comes from the system's packages
(``bench/ensure-redis.sh`` installs it); the peers' Python packages are in the ``bench``
extra. Each system's job is the same no-op: ``bench.apps.record_start``.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.harness import (
    REPO,
    Proc,
    free_port,
    process_tree,
    start_coordinator,
    start_leasehold_worker,
    wait_until,
)

ALL = (
    "leasehold-sqlite",
    "leasehold-pg",
    "huey-sqlite",
    "huey-redis",
    "dramatiq-redis",
    "procrastinate-pg",
)
SQLITE_ONLY = ("leasehold-sqlite", "huey-sqlite")

HUEY_DB_ENV = "LEASEHOLD_BENCH_HUEY_DB"
HUEY_REDIS_ENV = "LEASEHOLD_BENCH_HUEY_REDIS"
DRAMATIQ_REDIS_ENV = "LEASEHOLD_BENCH_DRAMATIQ_REDIS"
PROCRASTINATE_DSN_ENV = "LEASEHOLD_BENCH_PROCRASTINATE_DSN"
_BIN = Path(sys.executable).parent


def choose(spec: str | None) -> list[str]:
    """``--compare``'s value: ``all``, a comma-separated list, or ``huey`` (huey-sqlite, as
    earlier versions of the benchmarks took it); leasehold-sqlite always comes first."""
    if not spec:
        return ["leasehold-sqlite"]
    names = list(ALL) if spec == "all" else spec.replace("huey,", "huey-sqlite,").split(",")
    names = ["huey-sqlite" if n == "huey" else n for n in names]
    unknown = [n for n in names if n not in ALL]
    if unknown:
        raise SystemExit(f"unknown systems {unknown}; choose from {', '.join(ALL)} or all")
    return ["leasehold-sqlite", *(n for n in names if n != "leasehold-sqlite")]


class Servers:
    """A Redis and a PostgreSQL server for this run, each started on first use."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self._redis: tuple[Proc, str] | None = None
        self._pg: Any = None

    def redis_url(self, db: int) -> str:
        if self._redis is None:
            if shutil.which("redis-server") is None:
                subprocess.run(["bash", str(REPO / "bench" / "ensure-redis.sh")], check=True)
            port = free_port()
            proc = Proc(
                "redis",
                [
                    "redis-server",
                    "--port",
                    str(port),
                    "--bind",
                    "127.0.0.1",
                    "--dir",
                    str(self.tmp),
                    "--save",
                    "",
                    "--appendonly",
                    "yes",
                    "--appendfsync",
                    "always",  # every write on disk before the answer, as FULL
                ],
                self.tmp,
                {},
            )
            proc.wait_log("Ready to accept connections")
            self._redis = proc, f"redis://127.0.0.1:{port}"
        return f"{self._redis[1]}/{db}"

    def postgres_dsn(self, name: str) -> str:
        if self._pg is None:
            from tests.pgserver import start_pg_server

            self._pg = start_pg_server(self.tmp, durable=True)
        dsn: str = self._pg.create_database(name)
        return dsn

    def pids(self, system: str) -> list[int]:
        """The server processes ``system`` uses (their CPU counts as its own)."""
        if system.endswith("-redis") and self._redis is not None:
            return self._redis[0].tree()
        if system.endswith("-pg") and self._pg is not None:
            return process_tree(self._pg.pid)
        return []

    def close(self) -> None:
        if self._redis is not None:
            self._redis[0].stop()
        if self._pg is not None:
            self._pg.stop()


class System:
    """One system under test: its broker or coordinator, a producer in this process, and
    consumer processes started on demand."""

    name = ""
    stop_signal = signal.SIGINT  # the peers' consumers stop cleanly on Ctrl-C

    def __init__(self, tmp: Path, servers: Servers) -> None:
        self.tmp = tmp
        self.servers = servers
        self.env: dict[str, str] = {}
        self.consumers: list[Proc] = []

    def enqueue(self, tag: Any) -> None:
        """Enqueue one job, as an application would, and return once it is stored."""
        raise NotImplementedError

    def load(self, jobs: int) -> float:
        """Enqueue ``jobs`` jobs as fast as the system allows (batches where it has them);
        the rate its client API managed, jobs/s."""
        started = time.perf_counter()
        for n in range(jobs):
            self.enqueue(n)
        return jobs / (time.perf_counter() - started)

    def start_consumers(self, probe: dict[str, str], workers: int, concurrency: int) -> None:
        """Start consumers that run jobs ``concurrency`` at a time in ``workers`` processes
        (``workers=0``: one consumer tuned for latency, one job at a time)."""
        raise NotImplementedError

    def consumer_pids(self) -> list[int]:
        return [pid for c in self.consumers for pid in c.tree()]

    def close(self) -> None:
        for consumer in self.consumers:
            consumer.popen.send_signal(signal.SIGCONT)
            for pid in consumer.tree()[1:]:
                os.kill(pid, signal.SIGCONT)
            consumer.stop(self.stop_signal)


class Leasehold(System):
    stop_signal = signal.SIGTERM

    def __init__(self, tmp: Path, servers: Servers, postgres: bool, synchronous: str) -> None:
        super().__init__(tmp, servers)
        self.name = "leasehold-pg" if postgres else "leasehold-sqlite"
        database = servers.postgres_dsn(f"leasehold_{uuid.uuid4().hex[:8]}") if postgres else None
        self.coordinator, self.url = start_coordinator(tmp, synchronous, "info", database)
        from leasehold.client import Client

        self.loop = asyncio.new_event_loop()
        self.client = Client(self.url)

    def enqueue(self, tag: Any) -> None:
        self.loop.run_until_complete(self.client.enqueue("bench", tag))

    def load(self, jobs: int) -> float:
        from leasehold.client import NewJob

        async def send(batch: list[NewJob]) -> None:
            async with gate:
                await self.client.enqueue_many(batch)

        async def everything() -> None:
            await asyncio.gather(
                *(
                    send([NewJob("bench") for _ in range(min(1000, jobs - start))])
                    for start in range(0, jobs, 1000)
                )
            )

        gate = asyncio.Semaphore(4)
        started = time.perf_counter()
        self.loop.run_until_complete(everything())
        return jobs / (time.perf_counter() - started)

    def start_consumers(self, probe: dict[str, str], workers: int, concurrency: int) -> None:
        for n in range(max(1, workers)):
            flags = ["--wait-seconds", "30" if workers == 0 else "5"]
            if workers:
                flags += ["--concurrency", str(concurrency)]
            self.consumers.append(
                start_leasehold_worker(f"w{n}", self.url, self.tmp, probe, *flags)
            )
        for worker in self.consumers:
            worker.wait_log("worker.started")

    def close(self) -> None:
        super().close()
        self.loop.run_until_complete(self.client.close())
        self.loop.close()
        self.coordinator.stop()


def _reload(module: str, env: dict[str, str]) -> ModuleType:
    """Import a peer's app module afresh, with this run's settings in the environment."""
    os.environ.update(env)
    return importlib.reload(importlib.import_module(module))


class Huey(System):
    def __init__(self, tmp: Path, servers: Servers, redis: bool) -> None:
        super().__init__(tmp, servers)
        self.name = "huey-redis" if redis else "huey-sqlite"
        os.environ.pop(HUEY_REDIS_ENV, None)
        self.env = (
            {HUEY_REDIS_ENV: servers.redis_url(1)} if redis else {HUEY_DB_ENV: str(tmp / "huey.db")}
        )
        self.app = _reload("bench.hueyapp", self.env)

    def enqueue(self, tag: Any) -> None:
        self.app.noop_task(tag)

    def load(self, jobs: int) -> float:
        if self.name == "huey-redis":
            return super().load(jobs)
        # No batch API: its rate is that of 1,000 enqueues through it; the rest are written
        # in one transaction, as huey's own enqueue writes them.
        sample = min(jobs, 1000)
        rate = super().load(sample)
        with self.app.huey.storage.db(commit=True) as cursor:
            message = self.app.huey.serialize_task(self.app.noop_task.s())
            cursor.executemany(
                "insert into task (queue, data, priority) values (?, ?, 0)",
                [(self.app.huey.storage.name, message)] * (jobs - sample),
            )
        return rate

    def start_consumers(self, probe: dict[str, str], workers: int, concurrency: int) -> None:
        if workers == 0:  # one thread; SQLite polled every millisecond (Redis blocks)
            flags = ["-w", "1", "-k", "thread", "-d", "0.001", "-m", "0.001", "-b", "1"]
        else:  # a poll that never delays a start after an idle pause
            flags = ["-w", str(workers), "-k", "process", "-d", "0.01", "-m", "0.1"]
        consumer = Proc(
            "huey",
            [str(_BIN / "huey_consumer"), "bench.hueyapp.huey", *flags, "-n"],
            self.tmp,
            {**self.env, **probe},
        )
        self.consumers.append(consumer)
        consumer.wait_log("consumer started")
        _wait_children(consumer, workers if workers > 1 else 0)


class Dramatiq(System):
    name = "dramatiq-redis"

    def __init__(self, tmp: Path, servers: Servers) -> None:
        super().__init__(tmp, servers)
        self.env = {DRAMATIQ_REDIS_ENV: servers.redis_url(2)}
        self.app = _reload("bench.dramatiqapp", self.env)

    def enqueue(self, tag: Any) -> None:
        self.app.noop.send(tag)

    def start_consumers(self, probe: dict[str, str], workers: int, concurrency: int) -> None:
        threads = 1 if workers == 0 else min(concurrency, 16)  # a thread per job at once
        consumer = Proc(
            "dramatiq",
            [
                str(_BIN / "dramatiq"),
                "bench.dramatiqapp",
                "-p",
                str(max(1, workers)),
                "-t",
                str(threads),
            ],
            self.tmp,
            {**self.env, **probe},
        )
        self.consumers.append(consumer)
        consumer.wait_log("Worker process is ready for action.")
        _wait_children(consumer, max(1, workers))


class Procrastinate(System):
    name = "procrastinate-pg"

    def __init__(self, tmp: Path, servers: Servers) -> None:
        super().__init__(tmp, servers)
        self.env = {PROCRASTINATE_DSN_ENV: servers.postgres_dsn(f"pr_{uuid.uuid4().hex[:8]}")}
        self.app = _reload("bench.procrastinateapp", self.env)
        self._cli(["schema", "--apply"]).wait(60)
        self.app.app.open()

    def _cli(self, args: list[str], probe: dict[str, str] | None = None) -> subprocess.Popen[Any]:
        return subprocess.Popen(
            [str(_BIN / "procrastinate"), "--app", "bench.procrastinateapp.app", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": str(REPO), **self.env, **(probe or {})},
            cwd=REPO,
        )

    def enqueue(self, tag: Any) -> None:
        self.app.noop.defer(tag=tag)

    def load(self, jobs: int) -> float:
        started = time.perf_counter()
        for start in range(0, jobs, 1000):
            self.app.noop.batch_defer(*({"tag": None} for _ in range(min(1000, jobs - start))))
        return jobs / (time.perf_counter() - started)

    def start_consumers(self, probe: dict[str, str], workers: int, concurrency: int) -> None:
        for n in range(max(1, workers)):
            slots = "1" if workers == 0 else str(min(concurrency, 50))
            consumer = Proc(
                f"procrastinate{n}",
                [
                    str(_BIN / "procrastinate"),
                    "--app",
                    "bench.procrastinateapp.app",
                    "--log-level",
                    "info",
                    "worker",
                    "--concurrency",
                    slots,
                ],
                self.tmp,
                {**self.env, **probe},
            )
            self.consumers.append(consumer)
        for consumer in self.consumers:
            consumer.wait_log("Starting worker")

    def close(self) -> None:
        super().close()
        self.app.app.close()


def _wait_children(consumer: Proc, children: int) -> None:
    wait_until(lambda: len(consumer.tree()) > children, 30, f"{consumer.name}'s processes")


def start(name: str, tmp: Path, servers: Servers, synchronous: str = "FULL") -> System:
    """Set up one system (its database or broker, no consumers yet)."""
    makers: dict[str, Callable[[], System]] = {
        "leasehold-sqlite": lambda: Leasehold(tmp, servers, False, synchronous),
        "leasehold-pg": lambda: Leasehold(tmp, servers, True, synchronous),
        "huey-sqlite": lambda: Huey(tmp, servers, False),
        "huey-redis": lambda: Huey(tmp, servers, True),
        "dramatiq-redis": lambda: Dramatiq(tmp, servers),
        "procrastinate-pg": lambda: Procrastinate(tmp, servers),
    }
    return makers[name]()


__all__ = ["ALL", "Servers", "System", "choose", "start"]
