"""Batch reports: what goes into one (renew, complete, fail items) and what comes back.

A batch report is answered item by item: one stale token fails its own item, never the
others. ``ItemResult.error`` is the same error type the single call would have raised
(``StaleToken``, ``LeaseExpired``, ``JobNotFound``, ...), so callers can treat a batch
answer exactly as they treat the single calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from leasehold.batch_items import CompleteItem, FailItem, ItemOutcome, ItemVerdict, RenewItem
from leasehold.client._parse import error_from_code, parse_job
from leasehold.errors import Conflict, JobNotFound, LeaseholdError, StaleToken
from leasehold.model import Job

# The items and the enums are the coordinator's too (leasehold.batch_items), named here as
# the client's.
__all__ = [
    "CompleteItem",
    "FailItem",
    "ItemOutcome",
    "ItemResult",
    "ItemVerdict",
    "RenewItem",
    "parse_results",
]


# Protocol 1.0 answers carry no verdict: derived from the outcome as 1.0 documented it.
_VERDICT_OF_OUTCOME = {
    "ok": ItemVerdict.OK,
    "stale": ItemVerdict.STALE,
    "conflict": ItemVerdict.CONFLICT,
    "not_found": ItemVerdict.NOT_FOUND,
}


class ItemResult:
    """The answer to one item of a batch report: ``job`` when ok, ``error`` otherwise.

    The job is parsed from the answer when first asked for: a worker that only needs to
    know that its report was accepted does not pay for it.
    """

    __slots__ = ("_data", "_job", "error", "job_id", "outcome", "verdict")

    def __init__(
        self,
        job_id: int,
        outcome: ItemOutcome,
        *,
        job: Job | None = None,
        error: LeaseholdError | None = None,
        data: Any = None,
        verdict: ItemVerdict | None = None,
    ) -> None:
        self.job_id = job_id
        self.outcome = outcome
        self.verdict = verdict or _VERDICT_OF_OUTCOME[outcome]
        self.error = error
        self._job = job
        self._data = data

    @property
    def job(self) -> Job | None:
        if self._job is None and self._data is not None:
            self._job, self._data = parse_job(self._data), None
        return self._job

    @property
    def ok(self) -> bool:
        return self.outcome is ItemOutcome.OK

    def job_or_raise(self) -> Job:
        """The job, or the error the single call would have raised."""
        if self.error is not None:
            raise self.error
        job = self.job
        if job is None:
            raise LeaseholdError(f"the coordinator answered ok for job {self.job_id} without it")
        return job

    def __repr__(self) -> str:
        return f"ItemResult({self.job_id}, {self.outcome}, error={self.error!r})"


# For an item whose error code this client does not know (a newer coordinator's).
_FALLBACK: dict[ItemOutcome, type[LeaseholdError]] = {
    ItemOutcome.STALE: StaleToken,
    ItemOutcome.CONFLICT: Conflict,
    ItemOutcome.NOT_FOUND: JobNotFound,
}


def parse_results(data: Any, sent: Sequence[int]) -> list[ItemResult]:
    """A batch report's answer: one result per item sent, in order, each for the job its
    item named (``sent``: their ids). Anything else is not what was asked for."""
    try:
        results = [_parse_result(r) for r in data["results"]]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise LeaseholdError(f"the coordinator's answer is not a batch result: {exc!r}") from exc
    if len(results) != len(sent):
        raise LeaseholdError(f"the coordinator answered {len(results)} items of {len(sent)}")
    for result, job_id in zip(results, sent, strict=True):
        if result.job_id != job_id:
            raise LeaseholdError(
                f"the coordinator answered for job {result.job_id} where job {job_id} was sent"
            )
    return results


def _parse_result(data: Any) -> ItemResult:
    job_id, outcome = int(data["id"]), ItemOutcome(data["outcome"])
    verdict = _verdict(data.get("verdict"))
    if outcome is ItemOutcome.OK:
        if not isinstance(data["job"], dict):
            raise ValueError("an ok item without its job")
        return ItemResult(job_id, outcome, data=data["job"], verdict=verdict)
    message = str(data.get("message") or outcome)
    error = error_from_code(data.get("error"), message, _FALLBACK[outcome])
    return ItemResult(job_id, outcome, error=error, verdict=verdict)


def _verdict(raw: Any) -> ItemVerdict | None:
    # A verdict newer than this client is read as the outcome would be.
    try:
        return ItemVerdict(raw) if raw is not None else None
    except ValueError:
        return None
