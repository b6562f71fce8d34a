"""What one request costs the coordinator, with no network, server or client in the way.

    .venv/bin/python -m bench.request_cpu [--requests 500] [--rounds 7] [--synchronous OFF]

Builds the coordinator app (``create_app``) on a SQLite file in a temporary directory, runs
its lifespan, and calls the ASGI app directly, as the server would, with the headers our
client sends: ``POST /jobs`` (one job, with the idempotency key the client makes up),
``POST /jobs`` with the key as an ``Idempotency-Key`` header (which the FastAPI route
answers, past the fast path), ``GET /health`` and ``GET /jobs/{id}``. Prints the median over
``--rounds`` rounds of the process CPU time per request, in microseconds. The rounds of each
request alternate, so a change in the machine's speed touches them all alike.

To compare two versions of the code, run this in each checkout in turn, a few times each.
``--synchronous OFF`` by default: the disk's fsync is not what this measures.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

from bench.harness import load_average
from leasehold.cli.logs import configure_logging
from leasehold.coordinator.app import create_app
from leasehold.coordinator.settings import CoordinatorSettings
from tests.inproc import Headers, http_scope

Call = Callable[[str, str, bytes, Headers], Awaitable[int]]


def caller(app: Any) -> Call:
    """A function sending one request into ``app``; it returns the answer's status."""

    async def call(method: str, path: str, body: bytes, extra: Headers) -> int:
        status = 0

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]

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
        return status

    return call


def requests(call: Call, job_id: int) -> dict[str, Callable[[], Awaitable[int]]]:
    """The requests measured, by name."""

    def enqueue() -> Awaitable[int]:
        body = {"kind": "bench", "payload": {"n": 1}, "idempotency_key": secrets.token_hex(16)}
        return call("POST", "/jobs", orjson.dumps(body), [])

    def enqueue_routed() -> Awaitable[int]:
        key = secrets.token_hex(16).encode()
        return call(
            "POST", "/jobs", b'{"kind":"bench","payload":{"n":1}}', [(b"idempotency-key", key)]
        )

    return {
        "POST /jobs": enqueue,
        "POST /jobs through the route": enqueue_routed,
        "GET /health": lambda: call("GET", "/health", b"", []),
        "GET /jobs/{id}": lambda: call("GET", f"/jobs/{job_id}", b"", []),
    }


async def measure(count: int, rounds: int, synchronous: str) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory(prefix="leasehold-bench-") as tmp:
        settings = CoordinatorSettings(
            database_url=f"sqlite:///{Path(tmp) / 'leasehold.db'}", sqlite_synchronous=synchronous
        )
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            call = caller(app)
            assert await call("POST", "/jobs", b'{"kind":"bench"}', []) == 201
            named = requests(call, 1)
            for send in named.values():  # warm up
                for _ in range(50):
                    assert await send() < 300
            times: dict[str, list[float]] = {name: [] for name in named}
            for _ in range(rounds):
                for name, send in named.items():
                    started = time.process_time()
                    for _ in range(count):
                        await send()
                    times[name].append((time.process_time() - started) / count * 1e6)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500, help="per round and request")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--synchronous", default="OFF", choices=["OFF", "NORMAL", "FULL"])
    args = parser.parse_args()
    configure_logging("json", "warning")
    print(f"CPU per request, in the process; load average before: {load_average()}", flush=True)
    times = asyncio.run(measure(args.requests, args.rounds, args.synchronous))
    for name, per_round in times.items():
        print(
            f"{name:<30} {statistics.median(per_round):7.0f} us   (rounds: "
            + " ".join(f"{t:.0f}" for t in per_round)
            + ")"
        )
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
