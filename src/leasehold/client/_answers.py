"""What the coordinator answers, as types: errors, jobs, leases, pages."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from leasehold.api.schemas import AttemptOut, JobOut
from leasehold.errors import (
    Conflict,
    Forbidden,
    IdempotencyConflict,
    InvalidRequest,
    InvalidTransition,
    JobNotFound,
    LeaseExpired,
    LeaseholdError,
    PayloadTooLarge,
    ReportConflict,
    StaleToken,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
)
from leasehold.model import Attempt, Job, JobStatus

DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT_SECONDS = 10.0

_BY_CODE: dict[str, type[LeaseholdError]] = {
    cls.code: cls
    for cls in (
        JobNotFound,
        Conflict,
        StaleToken,
        LeaseExpired,
        ReportConflict,
        InvalidTransition,
        InvalidRequest,
        IdempotencyConflict,
        PayloadTooLarge,
        UnsupportedMediaType,
        Unauthorized,
        Forbidden,
        Unavailable,
    )
}
# The coordinator's codes for a body that failed validation.
_BY_CODE |= {"validation_error": InvalidRequest, "invalid_json": InvalidRequest}
# For answers without a known code (a proxy's, or a newer coordinator's). No 404 here: a
# route that does not exist (a wrong URL) is not a missing job.
_BY_STATUS: dict[int, type[LeaseholdError]] = {
    401: Unauthorized,
    403: Forbidden,
    409: Conflict,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    422: InvalidRequest,
}


def error_from_answer(status: int, body: bytes) -> LeaseholdError:
    """The error an HTTP answer with status >= 400 stands for."""
    code, message = _code_and_message(body)
    if status >= 500:
        return Unavailable(f"the coordinator answered {status}: {message}")
    cls = _BY_CODE.get(code or "") or _BY_STATUS.get(status)
    if cls is None:
        return LeaseholdError(f"the coordinator answered {status} ({code}): {message}")
    return cls(message)


def _code_and_message(body: bytes) -> tuple[str | None, str]:
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None, body[:200].decode(errors="replace") or "(no body)"
    if not isinstance(parsed, dict):
        return None, str(parsed)[:200]
    code = parsed.get("error")
    return (code if isinstance(code, str) else None), str(parsed.get("message", ""))


def encode(body: Mapping[str, Any]) -> bytes:
    # Strict JSON, as the coordinator requires: NaN and Infinity are refused here, not
    # silently turned into null.
    try:
        return json.dumps(body, allow_nan=False, separators=(",", ":")).encode()
    except (TypeError, ValueError) as exc:
        raise InvalidRequest(f"the request is not JSON: {exc}") from exc


# -- typed answers ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Lease:
    """A job leased to a worker, and the fencing token that speaks for the lease."""

    job: Job
    token: int


@dataclass(frozen=True, slots=True)
class JobPage:
    """One page of ``Client.list``; pass ``next_cursor`` back for the next one."""

    jobs: list[Job]
    next_cursor: str | None


def _utc(moment: datetime) -> datetime:
    # The coordinator sends UTC with an explicit offset; a naive time would be UTC too.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _utc_or_none(moment: datetime | None) -> datetime | None:
    return None if moment is None else _utc(moment)


def parse_job(data: Any) -> Job:
    """A ``model.Job`` from its wire form. Times are aware UTC datetimes; the fields the
    coordinator keeps to itself (``report``, ``request_hash``, ``lease_seconds``) are None."""
    out = JobOut.model_validate(data)
    return Job(
        id=out.id,
        kind=out.kind,
        payload=out.payload,
        status=JobStatus(out.status),
        attempts=out.attempts,
        max_attempts=out.max_attempts,
        run_after=_utc(out.run_after),
        created_at=_utc(out.created_at),
        lease_token=out.lease_token,
        lease_owner=out.lease_owner,
        lease_expires_at=_utc_or_none(out.lease_expires_at),
        leased_at=_utc_or_none(out.leased_at),
        finished_at=_utc_or_none(out.finished_at),
        idempotency_key=out.idempotency_key,
        result=out.result,
        last_error=out.last_error,
    )


def parse_attempt(job_id: int, data: Any) -> Attempt:
    out = AttemptOut.model_validate(data)
    return Attempt(
        job_id,
        out.token,
        out.worker_id,
        _utc(out.leased_at),
        _utc_or_none(out.finished_at),
        out.outcome,
        out.error,
    )


def drop_none(**fields: Any) -> dict[str, Any]:
    """Leave out what was not given, so the coordinator's defaults apply."""
    return {k: v for k, v in fields.items() if v is not None}
