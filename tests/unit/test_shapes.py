"""An enqueue and a schedule are defined once (``model.EnqueueSpec``, ``model.ScheduleSpec``);
the wire models carry every field over, and refuse to drift from them."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest
from pydantic import BaseModel

from leasehold.client import NewJob
from leasehold.coordinator.api.schemas import jobs, schedules
from leasehold.coordinator.api.schemas.jobs import EnqueueRequest
from leasehold.coordinator.api.schemas.schedules import ScheduleOut, ScheduleRequest
from leasehold.coordinator.service.requests import Enqueue
from leasehold.model import (
    CatchUp,
    Dependency,
    EnqueueSpec,
    JobStatus,
    OnFailure,
    Schedule,
    ScheduleSpec,
    Unique,
)

WHEN = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
# Every field away from its default, so a field some conversion forgets cannot pass.
FULL = Enqueue(
    kind="k",
    payload={"a": [1, None]},
    max_attempts=3,
    run_after=WHEN,
    idempotency_key="key",
    priority=-2,
    queue="q",
    headers={"traceparent": "00-abc-def-01"},
    timeout_seconds=12.5,
    depends_on=(Dependency(7), Dependency(8, OnFailure.RUN)),
    group_key="acme",
    weight=3,
    start_by=WHEN.replace(hour=9),
    unique=Unique(
        key="k1",
        fields=("a",),
        payload=True,
        queue=True,
        period_seconds=60.0,
        states=(JobStatus.QUEUED,),
        replace=True,
    ),
)
SPEC = ScheduleSpec(
    name="nightly",
    cron="0 3 * * *",
    kind="k",
    timezone="Europe/Paris",
    payload={"a": 1},
    queue="q",
    priority=7,
    max_attempts=2,
    catch_up=CatchUp.ONCE,
    enabled=False,
)


def test_every_field_of_the_examples_differs_from_its_default() -> None:
    for example, fields in ((FULL, EnqueueSpec), (SPEC, ScheduleSpec)):
        for field in dataclasses.fields(fields):
            assert getattr(example, field.name) != field.default, field.name


def test_an_enqueue_request_becomes_the_same_enqueue() -> None:
    body = NewJob(**{f.name: getattr(FULL, f.name) for f in dataclasses.fields(EnqueueSpec)})
    request = EnqueueRequest.model_validate(body.body())
    assert request.spec("key") == FULL


def test_the_idempotency_key_header_replaces_the_bodys() -> None:
    request = EnqueueRequest.model_validate({"kind": "k", "idempotency_key": "body"})
    assert request.spec("header") == Enqueue("k", idempotency_key="header")
    assert request.spec("body") == Enqueue("k", idempotency_key="body")


class _Swapped(BaseModel):
    payload: object = None
    kind: str = ""


def test_an_enqueue_model_that_drifts_from_the_spec_is_refused() -> None:
    # The spec is built from its fields by position, so their order counts too.
    with pytest.raises(TypeError, match=r"are not model\.EnqueueSpec's"):
        jobs.check(_Swapped)
    jobs.check(EnqueueRequest)


def test_a_schedule_request_sets_every_field_of_the_spec() -> None:
    wire = {f: getattr(SPEC, f) for f in ScheduleRequest.model_fields}
    assert ScheduleRequest.model_validate(wire).spec("nightly") == SPEC


def test_a_schedule_request_that_leaves_fields_out_gets_the_specs_defaults() -> None:
    request = ScheduleRequest.model_validate({"cron": "* * * * *", "kind": "k"})
    assert request.spec("n") == ScheduleSpec("n", "* * * * *", "k")


def test_a_stored_schedule_answers_every_field() -> None:
    stored = Schedule(SPEC, next_fire_at=WHEN, created_at=WHEN, updated_at=WHEN)
    out = ScheduleOut.of(stored).model_dump()
    assert (
        ScheduleRequest.model_validate({f: out[f] for f in ScheduleRequest.model_fields}).spec(
            out["name"]
        )
        == SPEC
    )
    assert (out["next_fire_at"], out["last_fire_at"]) == (WHEN.isoformat(), None)


class _Forgot(ScheduleRequest):
    cron: str = "* * * * *"  # a default the spec does not have


class _Older(ScheduleRequest):
    timezone: str = "Europe/London"


class _Short(BaseModel):
    kind: str


def test_wire_models_that_drift_from_the_spec_are_refused() -> None:
    with pytest.raises(TypeError, match="default for cron"):
        schedules.check(_Forgot, ScheduleOut)
    with pytest.raises(TypeError, match="default for timezone"):
        schedules.check(_Older, ScheduleOut)
    with pytest.raises(TypeError, match="fields"):
        schedules.check(_Short, ScheduleOut)
    with pytest.raises(TypeError, match="stored Schedule's"):
        schedules.check(ScheduleRequest, _Short)
    schedules.check(ScheduleRequest, ScheduleOut)
