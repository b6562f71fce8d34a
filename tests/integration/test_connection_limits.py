"""The HTTP protocol's limits, against a real coordinator process: a request head is capped
before authentication, silent and slow connections are closed, and running out of file
descriptors is logged and recovered from (DESIGN.md §16, Limits)."""

from __future__ import annotations

import contextlib
import resource
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.process import Coordinator, wait_until
from tests.sockets import connect, cpu_seconds, read_all, rss_kib


@pytest.fixture(scope="module")
def coordinator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Coordinator]:
    folder = tmp_path_factory.mktemp("limits")
    args = ["--request-timeout-seconds", "1", "--keep-alive-timeout-seconds", "1"]
    c = Coordinator(f"sqlite:///{folder / 'l.db'}", folder, args).start()
    yield c
    c.kill()


def test_100_mb_of_headers_is_refused_early_without_memory(coordinator: Coordinator) -> None:
    """Three connections streaming 100 MB of headers each are cut off after the cap, and the
    coordinator's memory does not follow them."""
    assert coordinator.proc is not None
    before = rss_kib(coordinator.proc.pid)
    chunk = b"X-Filler: " + b"a" * 65_000 + b"\r\n"
    sent_total = []
    for _ in range(3):
        s = connect(coordinator)
        s.sendall(b"GET /jobs HTTP/1.1\r\nHost: localhost\r\n")
        sent = 0
        try:
            while sent < 100_000_000:
                s.sendall(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        sent_total.append(sent)
        s.close()
    grown = rss_kib(coordinator.proc.pid) - before
    assert all(n < 20_000_000 for n in sent_total), sent_total  # closed long before 100 MB
    assert grown < 16 * 1024, f"RSS grew by {grown} KiB"


def test_a_head_over_the_cap_is_answered_431(coordinator: Coordinator) -> None:
    """Over 64 KiB of headers, or over 100 headers: 431 with a JSON body, then closed."""
    big = b"X-Big: " + b"b" * 70_000 + b"\r\n"
    many = b"".join(b"X-%d: 1\r\n" % i for i in range(101))
    for extra in (big, many):
        with connect(coordinator) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n" + extra + b"\r\n")
            answer = read_all(s)
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
        assert b'"error":"headers_too_large"' in answer


@pytest.mark.parametrize(
    "head",
    [
        b"POST /jobs HTTP/1.1\r\nHost: localhost\r\nContent-Length: " + b"9" * 5000,
        b"POST /jobs HTTP/1.1\r\nHost: localhost\r\nContent-Length: -1",
        b"GET /health HTTP/1.1\r\nHost: localhost\r\nBad Header Name: x",
        b"NOT A REQUEST LINE",
    ],
)
def test_a_request_the_parser_refuses_is_answered_400_in_json(
    coordinator: Coordinator, head: bytes
) -> None:
    """What is not HTTP/1.1 gets the same JSON error body as every other refusal, then the
    connection is closed."""
    with connect(coordinator) as s:
        s.sendall(head + b"\r\n\r\n{}")
        answer = read_all(s)
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    assert b"content-type: application/json" in answer.lower()
    assert b'"error":"bad_request"' in answer


def test_100_headers_are_still_served(coordinator: Coordinator) -> None:
    """A head within both caps is an ordinary request."""
    headers = b"".join(b"X-%d: 1\r\n" % i for i in range(98))  # plus Host and Connection
    with connect(coordinator) as s:
        s.sendall(
            b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + headers + b"\r\n"
        )
        assert read_all(s).startswith(b"HTTP/1.1 200 ")


@pytest.mark.parametrize("sends", ["nothing", "a byte at a time"])
def test_an_incomplete_request_is_closed_after_the_timeout(
    coordinator: Coordinator, sends: str
) -> None:
    """A connection whose request does not arrive whole in 1 s gets a 408 and is closed,
    also when it keeps sending a byte now and then."""
    with connect(coordinator) as s:
        started = time.monotonic()
        if sends != "nothing":
            s.settimeout(0.3)
            for byte in b"GET /health HTTP/1.1\r\nHost: localhost\r\n":
                try:
                    s.sendall(bytes([byte]))
                except OSError:
                    break
                try:
                    if s.recv(65536):
                        break  # the 408 came
                except TimeoutError:
                    continue
            else:
                pytest.fail("the slow request was never cut off")
        else:
            s.settimeout(5)
            assert read_all(s).startswith(b"HTTP/1.1 408 ")
        elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 3.0, elapsed


def test_an_idle_keep_alive_connection_is_closed(coordinator: Coordinator) -> None:
    """After its answer, a kept-alive connection with no next request is closed (1 s)."""
    with connect(coordinator) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        first = s.recv(65536)
        assert first.startswith(b"HTTP/1.1 200 ")
        started = time.monotonic()
        rest = read_all(s)
        elapsed = time.monotonic() - started
    assert b"HTTP/1.1" not in rest  # closed without an answer: nothing was asked
    assert elapsed < 3.0, elapsed


def _few_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (200, 200))


def test_silent_sockets_past_the_file_limit_do_not_lock_clients_out(tmp_path: Path) -> None:
    """With 200 descriptors and room for more connections than that (``--max-connections``
    above the limit; by default there is room for fewer, test_connection_room.py), 250
    silent sockets exhaust them: the coordinator says so in its log, closes them at the
    request timeout, and a new request is served again."""
    c = Coordinator(
        f"sqlite:///{tmp_path / 'f.db'}",
        tmp_path,
        ["--request-timeout-seconds", "2", "--max-connections", "1000"],
        preexec=_few_files,
    ).start()
    silent: list[socket.socket] = []
    try:
        for _ in range(250):
            # Refused outright once the backlog fills: also a silent client.
            with contextlib.suppress(OSError):
                silent.append(socket.create_connection(("127.0.0.1", c.port), timeout=2))

        def served() -> bool:
            try:
                with connect(c) as s:
                    s.sendall(
                        b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
                    )
                    return read_all(s).startswith(b"HTTP/1.1 200 ")
            except OSError:
                return False

        wait_until(served, timeout=15, interval=0.2, what="a request served again")
        wait_until(lambda: "server.open_files_exhausted" in c.logs(), timeout=5)
        assert '"soft":200' in c.logs()  # the limit it runs with is logged at start
    finally:
        for s in silent:
            s.close()
        c.kill()


@pytest.mark.parametrize(
    ("path", "cpu_budget"),
    [("/jobs", 0.05), ("/lease", 0.05), ("/jobs/batch", 0.2)],
)
def test_a_1_mib_body_of_empty_lists_is_cheap_to_refuse(
    coordinator: Coordinator, path: str, cpu_budget: float
) -> None:
    """1 MiB of ``[[],[],...]`` (350,000 values): refused unread where the route's cap is
    smaller, and parsed without walking the whole heap where it is not (each took about 0.35 s)."""
    assert coordinator.proc is not None
    body = b'{"jobs":[' + b"[]," * 349_000 + b"[]]}"
    head = (
        f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    before = cpu_seconds(coordinator.proc.pid)
    with connect(coordinator) as s:
        with contextlib.suppress(OSError):  # refused unread: the rest may not be taken
            s.sendall(head + body)
        answer = read_all(s)
    used = cpu_seconds(coordinator.proc.pid) - before
    assert answer.startswith((b"HTTP/1.1 413 ", b"HTTP/1.1 422 ")), answer[:100]
    assert used < cpu_budget, f"{used:.3f} s of CPU for one refused body"


def post(c: Coordinator, path: str, body: bytes) -> bytes:
    """``POST path`` with ``body`` as JSON, on a connection of its own: the whole answer."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with connect(c) as s:
        with contextlib.suppress(OSError):  # refused unread: the rest may not be taken
            s.sendall(head + body)
        return read_all(s)


# Bodies under their route's cap whose user JSON is 190,000 and 333,000 empty lists: a
# payload over its cap (413), a result over it (the item is rejected).
WIDE_PAYLOAD = b'{"kind":"k","payload":[' + b"[]," * 190_000 + b"[]]}"  # 557 KiB
WIDE_RESULT = b'{"items":[{"id":1,"token":1,"result":[' + b"[]," * 333_000 + b"[]]}]}"  # 976 KiB


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [("/jobs", WIDE_PAYLOAD, b"413"), ("/batch/complete", WIDE_RESULT, b"200")],
    ids=["payload", "result"],
)
def test_wide_user_json_under_the_body_cap_is_cheap_to_refuse(
    coordinator: Coordinator, path: str, body: bytes, status: bytes
) -> None:
    """Parsed and refused in a few tens of milliseconds of CPU, where they took 0.38 s and
    0.49 s (issue 26, item 9): every check of user JSON is made in C."""
    assert coordinator.proc is not None
    before = cpu_seconds(coordinator.proc.pid)
    answer = post(coordinator, path, body)
    used = cpu_seconds(coordinator.proc.pid) - before
    assert answer.startswith(b"HTTP/1.1 " + status), answer[:300]
    if path == "/batch/complete":
        assert b'"verdict":"rejected"' in answer or b'"verdict":"not_found"' in answer, answer
    assert used < 0.15, f"{used:.3f} s of CPU for one refused body"
