"""Answers on the hot paths, serialised straight from the model with orjson.

Leases, batch results and enqueues answer hundreds of jobs a request; building a Pydantic
model per job and serialising it was about a quarter of the coordinator's time per job.
These dicts are the same JSON as the response models in ``schemas`` (which stay the
documented contract in the OpenAPI schema); ``tests/unit/test_wire.py`` holds them equal.
Times come out as RFC 3339 in UTC with ``+00:00``, exactly as ``datetime.isoformat``.

Jobs are embedded as fragments (``service.answer.job_json``), each of which was built once
already inside the store's transaction, so that an answer cannot fail once its change is
committed.
"""

from __future__ import annotations

import json
from typing import Any, Final

from fastapi import Response

from leasehold import job_fields
from leasehold.batch_items import ItemOutcome, ItemVerdict
from leasehold.coordinator.service.answer import encode, job_json, job_wire
from leasehold.coordinator.store.contract import Inserted
from leasehold.errors import (
    InvalidRequest,
    JobCancelled,
    JobNotFound,
    LeaseExpired,
    LeaseholdError,
    PayloadTooLarge,
    StaleToken,
)
from leasehold.model import UNSERVED_HEADER, Job

__all__ = [
    "enqueued_wire",
    "item_result_wire",
    "job_json",
    "job_wire",
    "lease_wire",
    "reply_json",
    "with_unserved",
]

_JSON = "application/json"


def reply_json(data: Any, status_code: int = 200) -> Response:
    return Response(encode(data), status_code, media_type=_JSON)


def with_unserved(response: Response, pairs: list[tuple[str, str]]) -> Response:
    """The enqueue's answer, naming the pairs no live worker serves (``UNSERVED_HEADER``)."""
    if pairs:
        listed = [{"queue": queue, "kind": kind} for queue, kind in pairs]
        # json, not orjson: a header is ASCII, and json escapes every other character.
        response.headers[UNSERVED_HEADER] = json.dumps(listed, separators=(",", ":"))
    return response


_NOT_IN_SUMMARY: Final = tuple(f.name for f in job_fields.FIELDS if not f.in_summary)


def summary_wire(job: Job) -> dict[str, Any]:
    """``schemas.JobSummaryOut``: the job without its payload and result."""
    wire = job_wire(job)
    for name in _NOT_IN_SUMMARY:
        del wire[name]
    return wire


def lease_wire(job: Job) -> dict[str, Any]:
    """``schemas.LeaseOut``: with the parents of a job that has them (DESIGN.md §22)."""
    wire = {"job": job_json(job), "token": job.lease_token, "lease_seconds": job.lease_seconds}
    if job.parents is not None:
        wire["parents"] = job.parents  # dataclasses, whose results are JSON fragments
    return wire


def enqueued_wire(inserted: Inserted) -> dict[str, Any]:
    """``schemas.EnqueuedOut``."""
    return {
        "job": job_json(inserted.job),
        "created": inserted.created,
        "duplicate": inserted.duplicate,
        "replaced": inserted.replaced,
    }


# A batch item's verdict by the error it got, most specific first (PROTOCOL.md, "Errors").
_VERDICTS: tuple[tuple[type[LeaseholdError], ItemVerdict], ...] = (
    (JobNotFound, ItemVerdict.NOT_FOUND),
    (StaleToken, ItemVerdict.STALE),
    (JobCancelled, ItemVerdict.CANCELLED),
    (LeaseExpired, ItemVerdict.LOST),  # NotRunning included
    (PayloadTooLarge, ItemVerdict.REJECTED),
    (InvalidRequest, ItemVerdict.REJECTED),
)


def verdict_of(error: LeaseholdError) -> ItemVerdict:
    for cls, verdict in _VERDICTS:
        if isinstance(error, cls):
            return verdict
    return ItemVerdict.CONFLICT


def item_result_wire(job_id: int, answer: Job | LeaseholdError) -> dict[str, Any]:
    """``schemas.ItemResultOut``: ok with the job, or the error the single call answers."""
    if not isinstance(answer, LeaseholdError):
        return {
            "id": job_id,
            "outcome": ItemOutcome.OK,
            "verdict": ItemVerdict.OK,
            "error": None,
            "message": None,
            "job": job_json(answer),
        }
    outcome = (
        ItemOutcome.NOT_FOUND
        if isinstance(answer, JobNotFound)
        else ItemOutcome.STALE
        if isinstance(answer, StaleToken)
        else ItemOutcome.CONFLICT
    )
    return {
        "id": job_id,
        "outcome": outcome,
        "verdict": verdict_of(answer),
        "error": answer.code,
        "message": answer.message,
        "job": None,
    }
