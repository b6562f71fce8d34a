"""Answers on the hot paths, serialised straight from the model with orjson.

Leases, batch results and enqueues answer hundreds of jobs a request; building a Pydantic
model per job and serialising it was about a quarter of the coordinator's time per job.
These dicts are the same JSON as the response models in ``schemas`` (which stay the
documented contract in the OpenAPI schema); ``tests/unit/test_wire.py`` holds them equal.
Times come out as RFC 3339 in UTC with ``+00:00``, exactly as ``datetime.isoformat``.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import Response

from leasehold.core.transitions import summary_line
from leasehold.errors import JobNotFound, LeaseholdError, StaleToken
from leasehold.model import Job

_JSON = "application/json"


def reply_json(data: Any, status_code: int = 200) -> Response:
    return Response(orjson.dumps(data), status_code, media_type=_JSON)


def job_wire(job: Job) -> dict[str, Any]:
    """``schemas.JobOut`` of the job, as a dict orjson serialises."""
    return {
        "id": job.id,
        "kind": job.kind,
        "payload": job.payload,
        "status": job.status,
        "attempts": job.attempts,
        "max_attempts": job.max_attempts,
        "run_after": job.run_after,
        "created_at": job.created_at,
        "lease_owner": job.lease_owner,
        "lease_expires_at": job.lease_expires_at,
        "lease_token": job.lease_token,
        "idempotency_key": job.idempotency_key,
        "result": job.result,
        "last_error": job.last_error,
        "leased_at": job.leased_at,
        "finished_at": job.finished_at,
        "priority": job.priority,
        "queue": job.queue,
        "cancel_requested": job.cancel_requested,
        "timeout_seconds": job.timeout_seconds,
        "error_summary": summary_line(job.last_error),
    }


def lease_wire(job: Job) -> dict[str, Any]:
    """``schemas.LeaseOut``."""
    return {"job": job_wire(job), "token": job.lease_token}


def item_result_wire(job_id: int, answer: Job | LeaseholdError) -> dict[str, Any]:
    """``schemas.ItemResultOut``: ok with the job, or the error the single call answers."""
    if not isinstance(answer, LeaseholdError):
        return {
            "id": job_id,
            "outcome": "ok",
            "error": None,
            "message": None,
            "job": job_wire(answer),
        }
    outcome = (
        "not_found"
        if isinstance(answer, JobNotFound)
        else "stale"
        if isinstance(answer, StaleToken)
        else "conflict"
    )
    return {
        "id": job_id,
        "outcome": outcome,
        "error": answer.code,
        "message": answer.message,
        "job": None,
    }
