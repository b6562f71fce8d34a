"""Per-route body caps: a body over its route's cap is refused before it is read or parsed."""

from __future__ import annotations

import time

import pytest

from leasehold.coordinator.api.middleware.bodysize import (
    ENVELOPE_BYTES,
    SMALL_BODY_BYTES,
    route_caps,
)
from leasehold.coordinator.api.middleware.pipeline import RequestPipeline
from leasehold.coordinator.settings import MAX_BODY_BYTES, MAX_PAYLOAD_BYTES


@pytest.fixture
def limit() -> RequestPipeline:
    async def app(scope: object, receive: object, send: object) -> None:
        raise AssertionError("the route must not run")

    return RequestPipeline(app, MAX_BODY_BYTES, route_caps(MAX_BODY_BYTES, MAX_PAYLOAD_BYTES))


@pytest.mark.parametrize(
    ("method", "path", "cap"),
    [
        ("POST", "/jobs", 2 * MAX_PAYLOAD_BYTES + ENVELOPE_BYTES),
        ("POST", "/jobs/12/complete", 2 * MAX_PAYLOAD_BYTES + ENVELOPE_BYTES),
        ("PUT", "/schedules/nightly", 2 * MAX_PAYLOAD_BYTES + ENVELOPE_BYTES),
        ("POST", "/lease", SMALL_BODY_BYTES),
        ("POST", "/jobs/12/renew", SMALL_BODY_BYTES),
        ("POST", "/jobs/12/cancel", SMALL_BODY_BYTES),
        ("PUT", "/limits/a/b", SMALL_BODY_BYTES),
        ("POST", "/jobs/batch", MAX_BODY_BYTES),
        ("POST", "/batch/complete", MAX_BODY_BYTES),
        ("POST", "/jobs/12/fail", MAX_BODY_BYTES),
    ],
)
def test_each_route_has_its_cap(limit: RequestPipeline, method: str, path: str, cap: int) -> None:
    """Payload routes take two payloads' worth plus an envelope, others far less, batches all."""
    assert limit.cap_for(method, path) == cap


async def test_a_large_declared_body_is_refused_unread(limit: RequestPipeline) -> None:
    """1 MiB of ``[[],[],...]`` declared to /jobs is answered 413 without being read."""
    body = b"[" + b"[]," * 349_000 + b"[]]"
    sent: list[dict[str, object]] = []
    reads = 0

    async def receive() -> dict[str, object]:
        nonlocal reads
        reads += 1
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/jobs",
        "headers": [(b"content-length", str(len(body)).encode())],
    }
    started = time.process_time()
    await limit(scope, receive, send)  # type: ignore[arg-type]
    assert time.process_time() - started < 0.05
    assert sent[0]["status"] == 413
    assert reads <= 1  # drained (so the client reads the 413), never parsed
