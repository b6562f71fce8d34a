"""OpenTelemetry: one trace from a producer's span through enqueue and lease to the handler."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from leasehold import Client, task
from leasehold.coordinator.app import create_app
from leasehold.coordinator.settings import CoordinatorSettings
from leasehold.worker import Registry, Worker, WorkerSettings
from tests.process import Coordinator, free_port, sqlite_coordinator
from tests.workers import COORDINATOR_ARGS

WITHIN = 20.0
tracer = trace.get_tracer("tests")


@pytest.fixture(scope="module")
def exporter() -> InMemorySpanExporter:
    """The process's tracer provider (it can be set once per process), spans kept in memory."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    trace.set_tracer_provider(provider)
    return memory


@pytest.fixture
def spans(exporter: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    exporter.clear()
    yield exporter
    exporter.clear()


@pytest.fixture(scope="module")
def coordinator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Coordinator]:
    with sqlite_coordinator(tmp_path_factory.mktemp("tracing"), COORDINATOR_ARGS) as c:
        yield c


@task(kind="t-charge")
async def charge(order: int, fail: bool = False) -> str:
    with tracer.start_as_current_span("call the bank"):
        if fail:
            raise ValueError("card declined")
        return f"charged {order}"


@contextlib.asynccontextmanager
async def worker(url: str) -> AsyncIterator[None]:
    registry = Registry()
    registry.register(charge)
    w = Worker(registry, WorkerSettings(url=url, wait_seconds=0.2, worker_id="w-trace"))
    run = asyncio.create_task(w.run())
    try:
        yield
    finally:
        w.stop()
        assert await asyncio.wait_for(run, WITHIN) == 0


def by_name(spans: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {s.name: s for s in spans.get_finished_spans()}


async def test_one_trace_from_the_producer_to_the_handler(
    coordinator: Coordinator, spans: InMemorySpanExporter
) -> None:
    async with Client(coordinator.url) as client, worker(coordinator.url):
        with tracer.start_as_current_span("checkout"):
            handle = await charge.enqueue(client, 7)
        assert handle.job.headers is not None and "traceparent" in handle.job.headers
        assert await handle.result(timeout=WITHIN) == "charged 7"
        (attempt,) = await client.attempts(handle.id)
    found = by_name(spans)
    checkout, send = found["checkout"], found["send t-charge"]
    process, bank = found["process t-charge"], found["call the bank"]
    assert {s.context.trace_id for s in (checkout, send, process, bank)} == {
        checkout.context.trace_id
    }
    assert send.parent is not None and send.parent.span_id == checkout.context.span_id
    assert process.parent is not None and process.parent.span_id == send.context.span_id
    assert [link.context.span_id for link in process.links] == [send.context.span_id]
    assert bank.parent is not None and bank.parent.span_id == process.context.span_id
    assert (send.kind, process.kind) == (SpanKind.PRODUCER, SpanKind.CONSUMER)
    assert (
        attributes(send).items()
        >= {
            "messaging.system": "leasehold",
            "messaging.operation.type": "send",
            "messaging.destination.name": "t-charge",
            "messaging.message.id": str(handle.id),
        }.items()
    )
    assert (
        attributes(process).items()
        >= {
            "messaging.system": "leasehold",
            "messaging.operation.type": "process",
            "messaging.destination.name": "t-charge",
            "messaging.message.id": str(handle.id),
            "messaging.consumer.group.name": "w-trace",
            "leasehold.job.attempt": 1,
            "leasehold.lease.token": attempt.token,
        }.items()
    )
    assert process.status.status_code is StatusCode.UNSET


async def test_a_failed_handler_marks_its_span(
    coordinator: Coordinator, spans: InMemorySpanExporter
) -> None:
    async with Client(coordinator.url) as client, worker(coordinator.url):
        handle = await charge.options(max_attempts=1).enqueue(client, 8, fail=True)
        with contextlib.suppress(Exception):
            await handle.result(timeout=WITHIN)
    process = by_name(spans)["process t-charge"]
    assert process.parent is not None  # the send span, though no span was current before it
    assert process.status.status_code is StatusCode.ERROR
    assert process.status.description == "ValueError: card declined"


class SpanPerRequest:
    """What an ASGI instrumentation does, reduced: each request runs in a server span."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        name = f"{scope['method']} {scope['path']}"
        with tracer.start_as_current_span(name, kind=SpanKind.SERVER):
            await self.app(scope, receive, send)


async def test_the_coordinators_request_spans_carry_the_job_id(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    port = free_port()
    app = create_app(CoordinatorSettings(database_url=f"sqlite:///{tmp_path / 'c.db'}"))
    config = uvicorn.Config(SpanPerRequest(app), port=port, log_config=None, lifespan="on")
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    try:
        while not server.started:
            assert not serving.done()
            await asyncio.sleep(0.01)
        async with Client(f"http://127.0.0.1:{port}") as client:
            job = await client.enqueue("k")
            lease = await client.lease("w", kinds=["k"])
            assert lease is not None
            await client.get(job.id)
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, WITHIN)
    # The id is on the span current in the route: the request's span, or the endpoint span
    # under it when FastAPI traces requests itself. Either way, in the request's trace.
    finished = spans.get_finished_spans()
    tagged = {
        s.context.trace_id
        for s in finished
        if attributes(s).get("messaging.message.id") == str(job.id)
    }
    requests = [("POST", "/jobs", "/jobs"), ("POST", "/lease", "/lease")]
    requests.append(("GET", f"/jobs/{job.id}", "/jobs/{job_id}"))
    for method, path, route in requests:
        # Named by the path, the route, or (FastAPI, for some routes) the method alone.
        names = {f"{method} {path}", f"{method} {route}", method}
        traces = {s.context.trace_id for s in finished if s.name in names}
        assert traces & tagged, path


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})
