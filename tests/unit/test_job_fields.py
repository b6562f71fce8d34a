"""The job's one definition (job_fields) agrees with everything that lists its fields."""

from __future__ import annotations

import dataclasses
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

from leasehold import job_fields
from leasehold.client._parse import parse_job
from leasehold.coordinator.api.encode import summary_wire
from leasehold.coordinator.api.schemas.jobs import JobOut, JobSummaryOut
from leasehold.coordinator.service.answer import job_bytes, job_wire
from leasehold.coordinator.store.sqlite.driver import SqliteStore
from leasehold.errors import LeaseholdError
from leasehold.job_fields import FIELDS, WIRE_ORDER, JobField, Stored
from leasehold.model import Job, JobStatus, Parent, Report

T = datetime(2026, 3, 4, 5, 6, 7, 891_011, UTC)
# Every field away from its default, so a field some conversion forgets cannot pass.
FULL = Job(
    id=41,
    kind="send-email",
    payload={"to": "a@example.com", "n": [1, 2.5, None]},
    status=JobStatus.RUNNING,
    attempts=2,
    max_attempts=7,
    run_after=T,
    created_at=T.replace(microsecond=0),
    lease_token=99,
    lease_owner="worker-1",
    lease_expires_at=T.replace(second=37),
    lease_seconds=30.0,
    leased_at=T.replace(second=7, microsecond=1),
    finished_at=T.replace(second=8),
    idempotency_key="key-1",
    request_hash="hash",
    result={"ok": True},
    last_error="Traceback\n  ...\nValueError: boom\n",
    report=Report.FAILED,
    priority=-3,
    queue="mail",
    cancel_requested=True,
    releases=2,
    headers={"traceparent": "00-abc-def-01"},
    timeout_seconds=12.5,
    waiting_for=2,
    depth=3,
    dependents=4,
    blocked_by=5,
    spawned_by=6,
    spawn_key="part-1",
    group_key="acme",
    weight=3,
    start_by=T.replace(second=9),
    unique_key="u1:abc",
    parents=(Parent(5, "fetch", JobStatus.COMPLETED),),
)


def test_every_field_of_full_differs_from_its_default() -> None:
    for field in dataclasses.fields(Job):
        assert getattr(FULL, field.name) != field.default, field.name


def test_a_definition_that_does_not_follow_the_job_is_refused() -> None:
    with pytest.raises(TypeError, match=r"does not follow model\.Job"):
        job_fields.check(FIELDS[:-1], WIRE_ORDER)
    with pytest.raises(TypeError, match=r"does not follow model\.Job"):
        job_fields.check((FIELDS[1], FIELDS[0], *FIELDS[2:]), WIRE_ORDER)
    with pytest.raises(TypeError, match="is not the wire fields"):
        job_fields.check(FIELDS, WIRE_ORDER[:-1])
    extra = JobField("releases", Stored.INT, job_fields.Wire.INT)
    swapped = tuple(extra if f.name == "releases" else f for f in FIELDS)
    with pytest.raises(TypeError, match="is not the wire fields"):
        job_fields.check(swapped, WIRE_ORDER)


def _fields(model: type[BaseModel]) -> list[str]:
    return list(model.model_fields)


def test_the_documented_job_is_the_wire_form_in_its_order() -> None:
    assert _fields(JobOut) == [*WIRE_ORDER, *job_fields.DERIVED_WIRE]
    summary = [n for n in WIRE_ORDER if job_fields.BY_NAME[n].in_summary]
    assert _fields(JobSummaryOut) == [*summary, *job_fields.DERIVED_WIRE]
    assert list(summary_wire(FULL)) == _fields(JobSummaryOut)


def test_the_wire_form_is_byte_for_byte_what_it_was() -> None:
    # Pinned: key order and encodings are the public protocol's (clients may depend on both).
    assert job_bytes(FULL) == (
        b'{"id":41,"kind":"send-email","payload":{"to":"a@example.com","n":[1,2.5,null]},'
        b'"status":"running","attempts":2,"max_attempts":7,'
        b'"run_after":"2026-03-04T05:06:07.891011+00:00","created_at":"2026-03-04T05:06:07+00:00",'
        b'"lease_owner":"worker-1","lease_expires_at":"2026-03-04T05:06:37.891011+00:00",'
        b'"lease_token":99,"idempotency_key":"key-1","result":{"ok":true},'
        b'"last_error":"Traceback\\n  ...\\nValueError: boom\\n",'
        b'"leased_at":"2026-03-04T05:06:07.000001+00:00",'
        b'"finished_at":"2026-03-04T05:06:08.891011+00:00","priority":-3,"queue":"mail",'
        b'"cancel_requested":true,"headers":{"traceparent":"00-abc-def-01"},'
        b'"timeout_seconds":12.5,"waiting_for":2,"depth":3,"dependents":4,"blocked_by":5,'
        b'"spawned_by":6,"spawn_key":"part-1","group_key":"acme","weight":3,'
        b'"start_by":"2026-03-04T05:06:09.891011+00:00","unique_key":"u1:abc",'
        b'"error_summary":"ValueError: boom"}'
    )


def test_the_client_reads_back_every_field_the_coordinator_sends() -> None:
    kept_to_itself = {f.name: f.default for f in FIELDS if f.wire is None}
    assert parse_job(orjson.loads(job_bytes(FULL))) == FULL.replace(**kept_to_itself)


def test_the_client_needs_the_required_keys_and_defaults_the_rest() -> None:
    wire = orjson.loads(job_bytes(FULL))
    for field in (job_fields.BY_NAME[n] for n in WIRE_ORDER):
        given = {k: v for k, v in wire.items() if k != field.name}
        if field.required:
            with pytest.raises(LeaseholdError, match="not a job"):
                parse_job(given)
        else:
            assert getattr(parse_job(given), field.name) == field.default


def test_the_client_refuses_a_value_of_the_wrong_kind() -> None:
    wire = orjson.loads(job_bytes(FULL))
    for key, bad in [("status", "lost"), ("run_after", "yesterday"), ("attempts", "two")]:
        with pytest.raises(LeaseholdError, match="not a job"):
            parse_job({**wire, key: bad})


def test_the_wire_dict_holds_the_jobs_own_values() -> None:
    wire: dict[str, Any] = job_wire(FULL)
    assert all(wire[name] is getattr(FULL, name) for name in WIRE_ORDER)


async def test_every_field_is_a_column_of_the_jobs_table(tmp_path: Path) -> None:
    path = str(tmp_path / "jobs.db")
    store = SqliteStore(path)
    await store.open()
    await store.close()
    with sqlite3.connect(path) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(jobs)")]
    stored = [f.name for f in FIELDS if f.stored is not Stored.NONE]
    assert sorted(stored) == sorted(columns)
    assert job_fields.columns().split(", ") == stored


def test_the_summary_columns_blank_what_the_summary_leaves_out() -> None:
    summary = job_fields.columns(lambda f: f"NULL AS {f.name}").split(", ")
    blanked = [f.name for f in FIELDS if not f.in_summary]
    assert blanked == ["payload", "result"]
    assert [c for c in summary if c.startswith("NULL")] == [f"NULL AS {n}" for n in blanked]


def test_the_guarded_write_sets_the_written_fields() -> None:
    placeholders = job_fields.set_list(lambda i: f"${i + 4}")
    assert placeholders.startswith("status = $4, attempts = $5, run_after = $6")
    assert placeholders.endswith(
        "cancel_requested = $14, releases = $15, waiting_for = $16, blocked_by = $17"
    )
