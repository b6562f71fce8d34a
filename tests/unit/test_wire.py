"""The hot paths' hand-built answers are the same JSON as the documented response models."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest

from leasehold.batch_items import ItemOutcome, ItemVerdict
from leasehold.coordinator.api.encode import item_result_wire, job_wire, lease_wire
from leasehold.coordinator.api.schemas.jobs import JobOut
from leasehold.coordinator.api.schemas.leases import ItemResultOut, LeaseOut
from leasehold.errors import (
    JobCancelled,
    JobNotFound,
    LeaseExpired,
    LeaseholdError,
    NotRunning,
    PayloadTooLarge,
    ReportConflict,
    StaleToken,
)
from leasehold.model import Job, JobStatus, OnFailure, Parent

QUEUED = Job(
    id=7,
    kind="k",
    payload={"a": [1, 2.5, None, "é"]},
    status=JobStatus.QUEUED,
    attempts=0,
    max_attempts=5,
    run_after=datetime(2026, 1, 1, tzinfo=UTC),  # no microseconds: isoformat leaves them out
    created_at=datetime.fromtimestamp(1_764_467_000.123456, UTC),
)
RUNNING = QUEUED.replace(
    status=JobStatus.RUNNING,
    attempts=1,
    lease_token=3,
    lease_owner="w",
    lease_seconds=30.0,
    lease_expires_at=datetime.fromtimestamp(1_764_467_030.5, UTC),
    leased_at=datetime.fromtimestamp(1_764_467_000.000001, UTC),
    idempotency_key="key",
    result=[True],
    last_error="x",
    finished_at=datetime.fromtimestamp(1_764_467_001, UTC),
)


def model_json(model: JobOut | LeaseOut | ItemResultOut) -> object:
    return orjson.loads(model.__pydantic_serializer__.to_json(model))


@pytest.mark.parametrize("job", [QUEUED, RUNNING])
def test_job_and_lease_answers_match_their_models(job: Job) -> None:
    assert orjson.dumps(job_wire(job)) == JobOut.of(job).__pydantic_serializer__.to_json(
        JobOut.of(job)
    )


def test_a_lease_answer_matches_its_model_and_carries_its_length() -> None:
    lease = orjson.loads(orjson.dumps(lease_wire(RUNNING)))
    expected = model_json(LeaseOut(job=JobOut.of(RUNNING), token=3, lease_seconds=30.0))
    assert isinstance(expected, dict) and expected.pop("parents") is None  # absent: no parents
    assert lease == expected
    assert lease["lease_seconds"] == 30.0


def test_a_dependents_lease_carries_its_parents_as_their_model_says() -> None:
    parents = (
        Parent(1, "fetch", JobStatus.COMPLETED, orjson.Fragment(b'{"a":1}'), spawn_key="k"),
        Parent(2, None, None, None, True, None, OnFailure.RUN),
    )
    lease = orjson.loads(orjson.dumps(lease_wire(RUNNING.replace(parents=parents))))
    shaped = LeaseOut.model_validate(lease)
    assert lease == model_json(shaped)
    assert lease["parents"][0]["result"] == {"a": 1}


@pytest.mark.parametrize(
    ("error", "outcome", "verdict"),
    [
        (StaleToken("s"), ItemOutcome.STALE, ItemVerdict.STALE),
        (JobNotFound("n"), ItemOutcome.NOT_FOUND, ItemVerdict.NOT_FOUND),
        (LeaseExpired("e"), ItemOutcome.CONFLICT, ItemVerdict.LOST),
        (NotRunning("r"), ItemOutcome.CONFLICT, ItemVerdict.LOST),
        (JobCancelled("c"), ItemOutcome.CONFLICT, ItemVerdict.CANCELLED),
        (PayloadTooLarge("p"), ItemOutcome.CONFLICT, ItemVerdict.REJECTED),
        (ReportConflict("r"), ItemOutcome.CONFLICT, ItemVerdict.CONFLICT),
    ],
)
def test_item_results_match_their_model(
    error: LeaseholdError, outcome: ItemOutcome, verdict: ItemVerdict
) -> None:
    """Protocol 1.0's outcome is kept as it was; the verdict names what the worker does."""
    assert orjson.loads(orjson.dumps(item_result_wire(7, error))) == model_json(
        ItemResultOut(
            id=7, outcome=outcome, verdict=verdict, error=error.code, message=error.message
        )
    )
    assert orjson.loads(orjson.dumps(item_result_wire(7, RUNNING))) == model_json(
        ItemResultOut(id=7, outcome=ItemOutcome.OK, verdict=ItemVerdict.OK, job=JobOut.of(RUNNING))
    )
