"""Typed tasks without a coordinator: payloads from arguments and back, options, the handler."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime

import pytest
from pydantic import BaseModel

from leasehold import PayloadError, TaskTimeout, task
from leasehold.worker import LeasedJob, PermanentFailure, Registry


@task(kind="send-email", queue="mail", max_attempts=3, idempotency_key=lambda to, **_: f"to:{to}")
async def send_email(to: str, subject: str, copies: int = 1) -> dict[str, object]:
    return {"to": to, "subject": subject, "copies": copies}


@task(kind="schedule-at")
def schedule_at(when: datetime, tags: list[str]) -> str:
    return f"{threading.current_thread().name} {when.isoformat()} {','.join(tags)}"


class Invoice(BaseModel):
    number: int
    total_cents: int


@task(kind="bill")
async def bill(invoice: Invoice) -> Invoice:
    return invoice


def leased(kind: str, payload: object) -> LeasedJob:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    return LeasedJob(1, kind, payload, 1, 3, 1, when, "w")


def test_the_payload_is_the_arguments_by_name_with_defaults() -> None:
    assert send_email.payload("ada@example.com", subject="hi") == {
        "to": "ada@example.com",
        "subject": "hi",
        "copies": 1,
    }
    when = datetime(2026, 5, 1, 12, tzinfo=UTC)
    assert schedule_at.payload(when, ["a"]) == {"when": "2026-05-01T12:00:00Z", "tags": ["a"]}


def test_a_single_model_parameter_is_the_payload_itself() -> None:
    assert bill.payload(Invoice(number=7, total_cents=100)) == {"number": 7, "total_cents": 100}


def test_arguments_that_do_not_fit_are_refused_before_sending() -> None:
    with pytest.raises(PayloadError, match="missing a required argument: 'subject'"):
        send_email.payload(to="ada@example.com")  # type: ignore[call-arg]
    with pytest.raises(PayloadError, match="copies: Input should be a valid integer"):
        send_email.payload("a", "b", copies="many")  # type: ignore[arg-type]
    with pytest.raises(PayloadError, match="unexpected keyword argument 'cc'"):
        send_email.payload("a", "b", cc="c")  # type: ignore[call-arg]


def test_the_job_carries_the_tasks_options_and_the_key_from_the_arguments() -> None:
    new = send_email.new_job("ada@example.com", "hi")
    assert (new.kind, new.queue, new.max_attempts, new.priority) == ("send-email", "mail", 3, None)
    assert new.idempotency_key == "to:ada@example.com"


def test_options_change_one_call_and_leave_the_task_alone() -> None:
    urgent = send_email.options(queue="urgent", priority=10, idempotency_key="once")
    new = urgent.new_job("ada@example.com", "hi")
    assert (new.queue, new.priority, new.max_attempts, new.idempotency_key) == (
        "urgent",
        10,
        3,
        "once",
    )
    assert send_email.new_job("a", "b").queue == "mail"


async def test_the_handler_validates_the_payload_into_the_signatures_types() -> None:
    payload = {"when": "2026-05-01T12:00:00+00:00", "tags": ["x", "y"]}
    result = await schedule_at.handle(leased("schedule-at", payload))
    # A plain function runs on a thread of its own, with a real datetime.
    assert result == "leasehold-handler 2026-05-01T12:00:00+00:00 x,y"
    answer = await bill.handle(leased("bill", {"number": 7, "total_cents": 100}))
    assert answer == {"number": 7, "total_cents": 100}  # the result as JSON
    assert bill.decode(answer) == Invoice(number=7, total_cents=100)


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        ({"to": "a"}, "subject: Field required"),
        ({"to": "a", "subject": "b", "copies": "x"}, "copies: Input should be a valid integer"),
        ({"to": "a", "subject": "b", "bcc": "c"}, "bcc: Extra inputs are not permitted"),
        ([1, 2], "Input should be a valid dictionary"),
    ],
)
async def test_a_payload_that_does_not_fit_fails_for_good(payload: object, error: str) -> None:
    with pytest.raises(PermanentFailure, match=error) as failure:
        await send_email.handle(leased("send-email", payload))
    assert "send-email: the payload does not fit" in str(failure.value)


async def test_a_run_over_the_timeout_fails_and_is_retried() -> None:
    @task(kind="slow", timeout=0.05)
    async def slow() -> None:
        await asyncio.Event().wait()

    with pytest.raises(TaskTimeout, match=r"slow ran over its timeout of 0\.05 s"):
        await slow.handle(leased("slow", {}))


def test_a_registry_takes_tasks_and_refuses_unnamed_parameters() -> None:
    registry = Registry()
    assert registry.register(send_email) is send_email
    assert registry.kinds == ("send-email",)
    with pytest.raises(TypeError, match="parameters must be named"):

        @task()
        def splat(*args: int) -> None: ...


def test_the_kind_defaults_to_the_functions_name() -> None:
    @task()
    def resize(width: int) -> None: ...

    assert resize.kind == "resize"
    assert resize(width=1) is None  # still callable as the function
