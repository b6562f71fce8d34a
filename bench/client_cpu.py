"""What one lone enqueue costs the client, by client, side by side with the coordinator.

    .venv/bin/python -m bench.client_cpu [--requests 1500] [--rounds 3]

Starts ``leasehold serve`` (SQLite ``synchronous=NORMAL``, warnings logged) and enqueues
``--requests`` jobs one at a time on one keep-alive connection through each client in
turn, ``--rounds`` times over (the clients alternate, so a change in the machine's speed
touches them all alike). Prints, per client, the median over the rounds of: the client's
CPU per request (this process's, every thread counted), the coordinator's CPU per request
(from /proc, in 10 ms ticks), and enqueues per second.

The clients: ``leasehold.SyncClient`` and ``leasehold.Client`` as an application uses them
(each call builds the request, makes up its idempotency key and parses the job); the
former ``SyncClient`` design (``Client`` on a private event-loop thread), kept here to
compare; and the same request through ``http.client``, urllib3 and httpx (when installed),
and a raw socket with httptools, each also parsing the answer into a ``Job``. Then the cost
of encoding a request body with the standard library's ``json`` and with orjson.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import socket
import statistics
import tempfile
import threading
import time
import timeit
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httptools
import orjson

from bench.harness import cpu_seconds, load_average, start_coordinator
from leasehold.client import Client, SyncClient, parse_job

One = Callable[[], object]
Run = Callable[[int], None]  # sends that many requests, one after the other
HEADERS = {"Accept": "application/json", "Content-Type": "application/json"}
# What closes each client made, once the run is over.
CLOSE: list[Callable[[], object]] = []


def body() -> bytes:
    """The body ``Client.enqueue`` sends for ``enqueue("bench", {"n": 1})``."""
    key = f"auto-{uuid.uuid4().hex}"
    return json.dumps(
        {"kind": "bench", "idempotency_key": key, "payload": {"n": 1}},
        allow_nan=False,
        separators=(",", ":"),
    ).encode()


def sync_client(url: str) -> One:
    client = SyncClient(url)
    CLOSE.append(client.close)
    return lambda: client.enqueue("bench", {"n": 1})


def loop_thread_client(url: str) -> One:
    """The former SyncClient: the async client run on a private event-loop thread."""
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    client = Client(url)
    CLOSE.append(lambda: asyncio.run_coroutine_threadsafe(client.close(), loop).result())

    def one() -> object:
        call: Coroutine[Any, Any, object] = client.enqueue("bench", {"n": 1})
        return asyncio.run_coroutine_threadsafe(call, loop).result()

    return one


def stdlib(url: str) -> One:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)

    def one() -> object:
        connection.request("POST", "/jobs", body(), HEADERS)
        return parse_job(orjson.loads(connection.getresponse().read()))

    return one


def urllib3_pool(url: str) -> One:
    import urllib3

    parts = urlsplit(url)
    pool = urllib3.HTTPConnectionPool(parts.hostname or "", parts.port, maxsize=1)
    return lambda: parse_job(
        orjson.loads(pool.request("POST", "/jobs", body=body(), headers=HEADERS).data)
    )


def httpx_client(url: str) -> One | None:
    try:
        import httpx
    except ImportError:
        return None
    client = httpx.Client(base_url=url)
    return lambda: parse_job(
        orjson.loads(client.post("/jobs", content=body(), headers=HEADERS).content)
    )


class _Answer:
    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.complete = False

    def on_body(self, chunk: bytes) -> None:
        self.chunks.append(chunk)

    def on_message_complete(self) -> None:
        self.complete = True


def raw_socket(url: str) -> One:
    """The floor: one sendall of a request written by hand, httptools for the answer."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname or "", parts.port or 80))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    head = f"POST /jobs HTTP/1.1\r\nHost: {parts.netloc}\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in HEADERS.items()
    )

    def one() -> object:
        sent = body()
        sock.sendall(f"{head}Content-Length: {len(sent)}\r\n\r\n".encode() + sent)
        answer = _Answer()
        parser = httptools.HttpResponseParser(answer)
        while not answer.complete:
            parser.feed_data(sock.recv(65536))
        data = orjson.loads(b"".join(answer.chunks))
        if parser.get_status_code() != 201:
            raise RuntimeError(f"{parser.get_status_code()}: {data}")
        return parse_job(data)

    return one


def async_client(url: str) -> Run:
    """``Client`` awaited in one coroutine, on a loop of its own in this thread."""
    loop = asyncio.new_event_loop()
    client = Client(url)
    CLOSE.append(lambda: loop.run_until_complete(client.close()))

    async def many(count: int) -> None:
        for _ in range(count):
            await client.enqueue("bench", {"n": 1})

    return lambda count: loop.run_until_complete(many(count))


def one_by_one(make: Callable[[str], One | None]) -> Callable[[str], Run | None]:
    def made(url: str) -> Run | None:
        one = make(url)
        if one is None:
            return None

        def run(count: int) -> None:
            for _ in range(count):
                one()

        return run

    return made


CLIENTS: dict[str, Callable[[str], Run | None]] = {
    "SyncClient": one_by_one(sync_client),
    "Client (async)": async_client,
    "Client on a loop thread (before)": one_by_one(loop_thread_client),
    "http.client": one_by_one(stdlib),
    "urllib3": one_by_one(urllib3_pool),
    "httpx.Client": one_by_one(httpx_client),
    "socket + httptools": one_by_one(raw_socket),
}


def measure(run: Run, requests: int, coordinator_pid: int) -> tuple[float, float, float]:
    """Client CPU per request (ms), coordinator CPU per request (ms), requests per second."""
    cpu, theirs, wall = time.process_time(), cpu_seconds([coordinator_pid]), time.perf_counter()
    run(requests)
    elapsed = time.perf_counter() - wall
    mine = (time.process_time() - cpu) / requests * 1000
    coordinator = (cpu_seconds([coordinator_pid]) - theirs) / requests * 1000
    return mine, coordinator, requests / elapsed


def encoding() -> str:
    sample = {"kind": "bench", "idempotency_key": "auto-" + "0" * 32, "payload": {"n": 1}}
    n = 20_000
    plain = timeit.timeit(lambda: json.dumps(sample, allow_nan=False), number=n) / n * 1e6
    fast = timeit.timeit(lambda: orjson.dumps(sample), number=n) / n * 1e6
    return (
        f"encoding one enqueue body: json {plain:.1f} us, orjson {fast:.1f} us"
        " (orjson writes NaN as null, which the protocol refuses: json with allow_nan=False)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"lone enqueues, one keep-alive connection; load average before: {load_average()}")
    with tempfile.TemporaryDirectory(prefix="leasehold-bench-") as tmp:
        coordinator, url = start_coordinator(Path(tmp), "normal", "warning")
        figures: dict[str, list[tuple[float, float, float]]] = {}
        try:
            for _ in range(args.rounds):
                for name, make in CLIENTS.items():
                    # Made anew each round: the coordinator closes a connection left idle.
                    run = make(url)
                    if run is None:
                        continue
                    run(100)  # warm up: the connection, first imports
                    figure = measure(run, args.requests, coordinator.pid)
                    figures.setdefault(name, []).append(figure)
        finally:
            for close in CLOSE:
                close()
            coordinator.stop()
    print(f"{'client':<34} {'client CPU':>11} {'coordinator CPU':>16} {'enqueues/s':>11}")
    for name, rounds in figures.items():
        mine, theirs, rate = (statistics.median(r[i] for r in rounds) for i in range(3))
        print(f"{name:<34} {mine:8.3f} ms {theirs:13.3f} ms {rate:11,.0f}")
    print(encoding())
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
