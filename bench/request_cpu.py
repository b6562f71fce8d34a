"""What one request costs the coordinator: in the process, or through a real server.

    .venv/bin/python -m bench.request_cpu [--requests 500] [--rounds 7] [--synchronous OFF]
    .venv/bin/python -m bench.request_cpu --server [--requests 2000] [--rounds 5]

In the process (the default): builds the coordinator app (``create_app``) on a SQLite file
in a temporary directory, runs its lifespan, and calls the ASGI app directly, as the server
would, with the headers our client sends; the CPU counted is this process's.

``--server``: starts ``leasehold serve`` (SQLite ``synchronous=NORMAL``, warnings logged)
and sends the same requests over one keep-alive connection; the CPU counted is the
coordinator process's alone (from /proc, in 10 ms ticks: hence more requests a round).

The requests: ``POST /jobs`` (one job, with the idempotency key the client makes up), the
same with the key as an ``Idempotency-Key`` header, ``POST /lease`` (one job),
``POST /jobs/{id}/complete``, ``POST /batch/complete`` (10 items, a quarter as many
requests), ``GET /health`` and ``GET /jobs/{id}``. What a request needs (queued or leased jobs) is made before its timed
loop, outside the count. Prints the median over ``--rounds`` rounds of the CPU time per
request, in microseconds. The rounds of each request alternate, so a change in the
machine's speed touches them all alike.

To compare two versions of the code, run this in each checkout in turn, a few times each.
In the process, ``--synchronous OFF`` by default: the disk's fsync is not what this
measures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import secrets
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bench.harness import cpu_seconds, load_average, start_coordinator
from leasehold.cli.logs import configure_logging
from leasehold.coordinator.app import create_app
from leasehold.coordinator.settings import CoordinatorSettings
from tests.inproc import Headers, http_scope

# One request: method, path, body, extra headers -> (status, answer body).
Send = Callable[[str, str, bytes, Headers], Awaitable[tuple[int, bytes]]]
# The CPU seconds used so far by what is measured.
Clock = Callable[[], float]

_BATCH_ITEMS = 10


def caller(app: Any) -> Send:
    """A function sending one request into ``app``."""

    async def call(method: str, path: str, body: bytes, extra: Headers) -> tuple[int, bytes]:
        status = 0
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            else:
                chunks.append(message.get("body", b""))

        headers = [
            (b"host", b"127.0.0.1:8000"),
            (b"accept", b"application/json"),
            (b"user-agent", b"leasehold/bench"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            *extra,
        ]
        scope = http_scope(method, path, headers)
        await app(scope, receive, send)
        return status, b"".join(chunks)

    return call


def http_caller(session: aiohttp.ClientSession, url: str) -> Send:
    """A function sending one request to the server at ``url``."""

    async def call(method: str, path: str, body: bytes, extra: Headers) -> tuple[int, bytes]:
        headers = {
            "accept": "application/json",
            "user-agent": "leasehold/bench",
            "content-type": "application/json",
            **{k.decode(): v.decode() for k, v in extra},
        }
        async with session.request(method, url + path, data=body, headers=headers) as answer:
            return answer.status, await answer.read()

    return call


@dataclass
class Request:
    """One measured request: ``prepare(count)`` makes, untimed, the arguments of ``count``
    of them (queued or leased jobs included); each is then sent in the timed loop."""

    prepare: Callable[[int], Awaitable[list[tuple[str, str, bytes, Headers]]]]


class Workload:
    """The measured requests, over ``send``."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self.job_id = 0

    async def _ok(self, method: str, path: str, body: Any) -> Any:
        status, answer = await self.send(method, path, orjson.dumps(body), [])
        assert status < 300, (status, answer)
        return orjson.loads(answer) if answer else None

    async def leased(self, kind: str, count: int) -> list[dict[str, Any]]:
        """``count`` jobs of ``kind`` enqueued and leased: their ids and tokens."""
        leases: list[dict[str, Any]] = []
        while len(leases) < count:
            n = min(1000, count - len(leases))
            await self._ok("POST", "/jobs/batch", {"jobs": [{"kind": kind}] * n})
            answer = await self._ok(
                "POST", "/lease", {"worker_id": "bench", "kinds": [kind], "max_jobs": n}
            )
            leases += [
                {"id": lease["job"]["id"], "token": lease["token"]} for lease in answer["leases"]
            ]
        return leases

    async def setup(self) -> None:
        job = await self._ok("POST", "/jobs", {"kind": "read"})
        self.job_id = job["id"]

    def requests(self) -> dict[str, Request]:
        async def enqueue(count: int) -> list[tuple[str, str, bytes, Headers]]:
            return [
                (
                    "POST",
                    "/jobs",
                    orjson.dumps(
                        {
                            "kind": "bench",
                            "payload": {"n": 1},
                            "idempotency_key": secrets.token_hex(16),
                        }
                    ),
                    [],
                )
                for _ in range(count)
            ]

        async def enqueue_header(count: int) -> list[tuple[str, str, bytes, Headers]]:
            body = b'{"kind":"bench","payload":{"n":1}}'
            return [
                ("POST", "/jobs", body, [(b"idempotency-key", secrets.token_hex(16).encode())])
                for _ in range(count)
            ]

        async def lease(count: int) -> list[tuple[str, str, bytes, Headers]]:
            for start in range(0, count, 1000):
                jobs = [{"kind": "lease"}] * min(1000, count - start)
                await self._ok("POST", "/jobs/batch", {"jobs": jobs})
            body = orjson.dumps({"worker_id": "bench", "kinds": ["lease"]})
            return [("POST", "/lease", body, [])] * count

        async def complete(count: int) -> list[tuple[str, str, bytes, Headers]]:
            return [
                (
                    "POST",
                    f"/jobs/{held['id']}/complete",
                    orjson.dumps({"token": held["token"], "result": {"ok": True}}),
                    [],
                )
                for held in await self.leased("complete", count)
            ]

        async def complete_batch(count: int) -> list[tuple[str, str, bytes, Headers]]:
            # A quarter as many requests as the others: each completes ten jobs.
            held = await self.leased("batch", max(1, count // 4) * _BATCH_ITEMS)
            return [
                (
                    "POST",
                    "/batch/complete",
                    orjson.dumps(
                        {"items": [{**h, "result": None} for h in held[at : at + _BATCH_ITEMS]]}
                    ),
                    [],
                )
                for at in range(0, len(held), _BATCH_ITEMS)
            ]

        async def health(count: int) -> list[tuple[str, str, bytes, Headers]]:
            return [("GET", "/health", b"", [])] * count

        async def read(count: int) -> list[tuple[str, str, bytes, Headers]]:
            return [("GET", f"/jobs/{self.job_id}", b"", [])] * count

        return {
            "POST /jobs": Request(enqueue),
            "POST /jobs, Idempotency-Key": Request(enqueue_header),
            "POST /lease": Request(lease),
            "POST /jobs/{id}/complete": Request(complete),
            f"POST /batch/complete ({_BATCH_ITEMS})": Request(complete_batch),
            "GET /health": Request(health),
            "GET /jobs/{id}": Request(read),
        }


async def measure(send: Send, clock: Clock, count: int, rounds: int) -> dict[str, list[float]]:
    workload = Workload(send)
    await workload.setup()
    named = workload.requests()
    for request in named.values():  # warm up
        for args in await request.prepare(50):
            status, _ = await send(*args)
            assert status < 300, (args, status)
    times: dict[str, list[float]] = {name: [] for name in named}
    for _ in range(rounds):
        for name, request in named.items():
            todo = await request.prepare(count)
            started = clock()
            for args in todo:
                await send(*args)
            times[name].append((clock() - started) / len(todo) * 1e6)
    return times


@contextlib.asynccontextmanager
async def in_process(synchronous: str) -> AsyncIterator[tuple[Send, Clock]]:
    with tempfile.TemporaryDirectory(prefix="leasehold-bench-") as tmp:
        settings = CoordinatorSettings(
            database_url=f"sqlite:///{Path(tmp) / 'leasehold.db'}", sqlite_synchronous=synchronous
        )
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            yield caller(app), time.process_time


@contextlib.asynccontextmanager
async def served() -> AsyncIterator[tuple[Send, Clock]]:
    with tempfile.TemporaryDirectory(prefix="leasehold-bench-") as tmp:
        coordinator, url = start_coordinator(Path(tmp), "normal", "warning")
        try:
            connector = aiohttp.TCPConnector(limit=1)  # one keep-alive connection
            async with aiohttp.ClientSession(connector=connector) as session:
                yield http_caller(session, url), lambda: cpu_seconds([coordinator.pid])
        finally:
            coordinator.stop()


async def run(args: argparse.Namespace) -> dict[str, list[float]]:
    setup = served() if args.server else in_process(args.synchronous)
    async with setup as (send, clock):
        return await measure(send, clock, args.requests, args.rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=None, help="per round and request")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--synchronous", default="OFF", choices=["OFF", "NORMAL", "FULL"])
    parser.add_argument(
        "--server", action="store_true", help="through a coordinator process: its CPU alone"
    )
    args = parser.parse_args()
    args.requests = args.requests or (2000 if args.server else 500)
    args.rounds = args.rounds or (5 if args.server else 7)
    configure_logging("json", "warning")
    where = "the coordinator process" if args.server else "the process"
    print(f"CPU per request, {where}; load average before: {load_average()}", flush=True)
    times = asyncio.run(run(args))
    for name, per_round in times.items():
        print(
            f"{name:<30} {statistics.median(per_round):7.0f} us   (rounds: "
            + " ".join(f"{t:.0f}" for t in per_round)
            + ")"
        )
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
