"""OpenTelemetry, when it is installed (the ``otel`` extra); nothing at all otherwise.

- The client's enqueue runs in a PRODUCER span (``send {kind}``) and puts the current trace
  context into the job's headers (W3C ``traceparent``, ``tracestate``), which the
  coordinator stores with the job and hands to every worker that leases it.
- The worker runs each handler in a CONSUMER span (``process {kind}``) whose parent is the
  producer's span, so one trace goes from the producer through enqueue and lease to the
  handler and whatever it calls; the span also links to the producer's context.
- The coordinator sets ``messaging.message.id`` on the current span of the routes that
  name jobs (enqueue, lease, read), which is the request's span when the application runs
  the coordinator under an OpenTelemetry ASGI instrumentation.

Attribute names follow OpenTelemetry's messaging semantic conventions. Only the API is
used: the application chooses the SDK, its sampler and exporters. Until it sets a tracer
provider, no span is made (the API's own would record nothing, at a cost per job).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

try:
    from opentelemetry import propagate, trace
except ImportError:  # the otel extra is not installed: every function here does nothing
    propagate = None  # type: ignore[assignment]
    trace = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from opentelemetry.trace import Span

SYSTEM = "leasehold"
_TRACER = "leasehold"


def enabled() -> bool:
    return trace is not None


def _spans_recorded() -> bool:
    """Whether the application has set a tracer provider. Until it does, OpenTelemetry's API
    hands out spans that record nothing, and building one per job (its context, links and
    attributes) cost a worker about 7% of its time: then no span is made at all."""
    return trace is not None and not isinstance(
        trace.get_tracer_provider(), trace.ProxyTracerProvider | trace.NoOpTracerProvider
    )


def inject_headers(headers: Mapping[str, str] | None) -> dict[str, str] | None:
    """``headers`` plus the current trace context (none if no span is current)."""
    if propagate is None:
        return dict(headers) if headers is not None else None
    carrier = dict(headers or {})
    propagate.inject(carrier)
    return carrier or None


@contextlib.contextmanager
def producing(kind: str, count: int = 1) -> Iterator[Span | None]:
    """The PRODUCER span of one enqueue (or of a batch of ``count``)."""
    if trace is None or not _spans_recorded():
        yield None
        return
    attributes: dict[str, Any] = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "send",
        "messaging.operation.name": "send",
        "messaging.destination.name": kind,
    }
    if count != 1:
        attributes["messaging.batch.message_count"] = count
    tracer = trace.get_tracer(_TRACER)
    with tracer.start_as_current_span(
        f"send {kind}", kind=trace.SpanKind.PRODUCER, attributes=attributes
    ) as span:
        yield span


def sent(span: Span | None, job_ids: Iterable[int]) -> None:
    """Record the enqueued jobs' ids on the producer's span."""
    ids = [str(i) for i in job_ids]
    if span is not None and len(ids) == 1:
        span.set_attribute("messaging.message.id", ids[0])


@contextlib.contextmanager
def processing(
    kind: str,
    job_id: int,
    attempt: int,
    token: int,
    worker_id: str,
    headers: Mapping[str, str] | None,
) -> Iterator[Span | None]:
    """The CONSUMER span a handler runs in: a child of the producer's span, and linked to
    it, when the job carries trace context."""
    if trace is None or propagate is None or not _spans_recorded():
        yield None
        return
    parent = propagate.extract(dict(headers or {}))
    producer = trace.get_current_span(parent).get_span_context()
    links = [trace.Link(producer)] if producer.is_valid else []
    attributes: dict[str, Any] = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": kind,
        "messaging.message.id": str(job_id),
        "messaging.consumer.group.name": worker_id,
        "leasehold.job.attempt": attempt,
        "leasehold.lease.token": token,
    }
    tracer = trace.get_tracer(_TRACER)
    with tracer.start_as_current_span(
        f"process {kind}",
        context=parent,
        kind=trace.SpanKind.CONSUMER,
        links=links,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        yield span


def processed(span: Span | None, error: str | None) -> None:
    """Mark the handler's span failed (with the first line of the error) or leave it OK."""
    if span is None or trace is None or error is None:
        return
    last = error.rstrip().rsplit("\n", 1)[-1]
    span.set_status(trace.Status(trace.StatusCode.ERROR, last))
    span.set_attribute("error.type", last.split(":", 1)[0])


def tag_jobs(job_ids: Iterable[int]) -> None:
    """Put the job id on the current span (the coordinator's request span, if any)."""
    if trace is None:
        return
    span = trace.get_current_span()
    if not span.is_recording():
        return
    ids = [str(i) for i in job_ids]
    if len(ids) == 1:
        span.set_attribute("messaging.message.id", ids[0])
    elif ids:
        span.set_attribute("leasehold.job.ids", ids)


def server_telemetry() -> dict[str, bool]:
    """FastAPI's own OpenTelemetry (a span, metrics and log records per request), one
    switch per signal: on when the application has set that signal's provider by the time
    the coordinator app is made (as ``opentelemetry-instrument`` does at start).

    Left at FastAPI's default, each request asked the API for all three providers to find
    them unset: about a tenth of the coordinator's CPU for a plain ``GET /health``.
    """
    if trace is None:
        return {"tracing": False, "metrics": False, "logs": False}
    from opentelemetry import _logs, metrics  # the API package, present with trace

    return {
        "tracing": _spans_recorded(),
        "metrics": type(metrics.get_meter_provider()).__name__
        not in ("_ProxyMeterProvider", "NoOpMeterProvider"),
        "logs": type(_logs.get_logger_provider()).__name__
        not in ("ProxyLoggerProvider", "NoOpLoggerProvider"),
    }
