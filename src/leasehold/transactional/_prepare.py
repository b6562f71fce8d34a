"""A job made ready for ``leasehold_enqueue``: checked as the coordinator's HTTP enqueue
checks it, with the fingerprints the coordinator would give it.

The body is the one the HTTP client sends (``client.NewJob.body``, with the trace context in
its headers; without the key it makes up when none is given), encoded and read back as the
coordinator reads a request, then validated by the coordinator's own wire model
(``EnqueueRequest``) and made into its ``NewJob`` (``Enqueue.new_job``): defaults, the
request's fingerprint (idempotency), the unique fingerprint and the states a duplicate may
be in. So a key or a unique job means the same whichever way a job came in, and bad input
is refused with the message the HTTP enqueue would give.
"""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import ValidationError

from leasehold.client import NewJob
from leasehold.coordinator.api.schemas.jobs import EnqueueRequest
from leasehold.coordinator.rules.userjson import json_problem
from leasehold.coordinator.store.contract import NewJob as StoredJob
from leasehold.errors import InvalidRequest


def prepared(job: NewJob) -> str:
    """The argument of ``leasehold_enqueue`` for ``job``, as JSON text; InvalidRequest
    (or a subclass) for what the coordinator would answer 422."""
    body = job.body()
    if job.idempotency_key is None:
        # The HTTP client makes one up, for its own retries of a request whose answer was
        # lost; a statement in the caller's transaction is not retried that way.
        del body["idempotency_key"]
    return orjson.dumps(_argument(_checked(body))).decode()


def _checked(body: dict[str, Any]) -> StoredJob:
    # The payload's own rule first (depth, NUL, integers past 64 bits), which orjson would
    # otherwise meet first with a message of its own.
    if problem := json_problem(body["payload"]):
        raise InvalidRequest(f"invalid request: body.payload: {problem}")
    try:
        raw = orjson.dumps(body)
    except TypeError as exc:  # orjson.JSONEncodeError: a value JSON has no form for
        raise InvalidRequest(f"invalid request: the job is not JSON: {exc}") from None
    try:
        request = EnqueueRequest.model_validate(orjson.loads(raw))
    except ValidationError as exc:
        raise _invalid(exc) from None
    return request.spec(request.idempotency_key).new_job()


def _invalid(exc: ValidationError) -> InvalidRequest:
    """The refusal the coordinator's 422 carries: a summary, and where each problem is."""
    detail = [
        {"loc": ["body", *map(str, e["loc"])], "msg": e["msg"], "type": e["type"]}
        for e in exc.errors(include_url=False)
    ]
    summary = "; ".join(f"{'.'.join(d['loc'])}: {d['msg']}" for d in detail)
    error = InvalidRequest(f"invalid request: {summary}")
    error.detail = detail
    return error


def _argument(new: StoredJob) -> dict[str, Any]:
    """``new`` as the function takes it (migration 012): defaults filled in, parents as
    [id, on_failure] pairs, the unique options the store applies."""
    unique = new.unique
    return {
        "kind": new.kind,
        "payload": new.payload,
        "max_attempts": new.max_attempts,
        "run_after": new.run_after.isoformat() if new.run_after else None,
        "idempotency_key": new.idempotency_key,
        "request_hash": new.request_hash,
        "also_matches": list(new.also_matches),
        "priority": new.priority,
        "queue": new.queue,
        "headers": new.headers,
        "timeout_seconds": new.timeout_seconds,
        "depends_on": [[d.id, str(d.on_failure)] for d in new.depends_on] or None,
        "group_key": new.group_key,
        "weight": new.weight,
        "start_by": new.start_by.isoformat() if new.start_by else None,
        "unique": None
        if unique is None
        else {
            "states": [str(s) for s in unique.states or ()],
            "period_seconds": unique.period_seconds,
            "replace": unique.replace,
        },
        "unique_key": new.unique_key,
    }
