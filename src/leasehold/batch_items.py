"""The items of a batch report (renew, complete, fail) and what an item's answer says:
one definition, which the client sends and the coordinator answers with.

The client builds its requests from these dataclasses (``wire()`` is an item's JSON); the
coordinator validates the same JSON with its Pydantic models (``api.schemas.leases.RenewItem``,
...), which stay declared there because they carry the bounds and the OpenAPI
documentation, and a unit test holds their fields equal to these items' wire keys. The
outcome and the verdict of an answered item are the enums both sides use.

This module imports only ``model``, so the client need not import the coordinator.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from leasehold.model import JSON

MAX_BATCH = 1000
"""The most items (or jobs to enqueue) one batch request takes."""


def _given(**fields: Any) -> dict[str, Any]:
    # Left out when not given, so that the coordinator's default applies.
    return {k: v for k, v in fields.items() if v is not None}


@dataclass(frozen=True, slots=True)
class RenewItem:
    """Renew the lease ``token`` of job ``job_id`` (for ``lease_seconds``, default: the
    coordinator's)."""

    job_id: int
    token: int
    lease_seconds: float | None = None

    def wire(self) -> dict[str, Any]:
        return _given(id=self.job_id, token=self.token, lease_seconds=self.lease_seconds)


@dataclass(frozen=True, slots=True)
class CompleteItem:
    """Report job ``job_id`` done under lease ``token``, with its result."""

    job_id: int
    token: int
    result: JSON = None

    def wire(self) -> dict[str, Any]:
        return {"id": self.job_id, "token": self.token, "result": self.result}


@dataclass(frozen=True, slots=True)
class FailItem:
    """Report job ``job_id`` failed under lease ``token``."""

    job_id: int
    token: int
    error: str
    retryable: bool = True
    retry_after_seconds: float | None = None

    def wire(self) -> dict[str, Any]:
        return _given(
            id=self.job_id,
            token=self.token,
            error=self.error,
            retryable=self.retryable,
            retry_after_seconds=self.retry_after_seconds,
        )


class ItemOutcome(StrEnum):
    """Protocol 1.0's classification of an item's answer, kept as it was."""

    OK = "ok"  # applied, or an idempotent repeat
    STALE = "stale"  # the token is not the job's current one
    CONFLICT = "conflict"  # the lease expired, or a different outcome was already reported
    NOT_FOUND = "not_found"


class ItemVerdict(StrEnum):
    """What the worker does with an item's answer (protocol 1.1; PROTOCOL.md, "Errors")."""

    OK = "ok"  # applied (or an idempotent repeat): renew: keep running; report: done
    CANCELLED = "cancelled"  # the job was cancelled: stop the handler, report nothing more
    STALE = "stale"  # a newer lease exists: stop the handler, drop the report
    LOST = "lost"  # the lease ran out or this lease already reported: stop, drop
    CONFLICT = "conflict"  # a different outcome was already reported: drop
    REJECTED = "rejected"  # the item itself was refused (too large): report a failure instead
    NOT_FOUND = "not_found"  # no such job: drop
