"""The admin commands' parts that need no coordinator: option parsing, the exit code of each
error, the JSON form of a job, and a stats watch through an outage."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import typer
from rich.console import Console

from leasehold import errors
from leasehold.cli.admin import connect, parse, render, watch
from leasehold.cli.admin.wire import job_json
from leasehold.model import Job, JobStatus

NOW = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", NOW + timedelta(seconds=90)),
        ("+15m", NOW + timedelta(minutes=15)),
        ("1.5h", NOW + timedelta(minutes=90)),
        ("2d", NOW + timedelta(days=2)),
        ("2030-06-01T12:00:00Z", datetime(2030, 6, 1, 12, tzinfo=UTC)),
        ("2030-06-01T14:00:00+02:00", datetime(2030, 6, 1, 12, tzinfo=UTC)),
        (None, None),
    ],
)
def test_run_after_is_a_time_or_a_delay(text: str | None, expected: datetime | None) -> None:
    assert parse.run_after(text, now=NOW) == expected


@pytest.mark.parametrize("text", ["2030-06-01T12:00:00", "tomorrow", "15 minutes", "-5m"])
def test_run_after_refuses_what_it_cannot_place(
    text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(typer.Exit) as exit_:
        parse.run_after(text, now=NOW)
    assert exit_.value.exit_code == connect.EXIT_USAGE
    assert capsys.readouterr().err.startswith("leasehold: --run-after: ")


def test_payload_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse.payload(None) is None
    assert parse.payload('{"a": [1, 2.5, null]}') == {"a": [1, 2.5, None]}
    assert parse.payload("null") is None
    monkeypatch.setattr("sys.stdin", io.StringIO('"from stdin"'))
    assert parse.payload("-") == "from stdin"


@pytest.mark.parametrize("text", ["Infinity", '{"a": -Infinity}', "@/nonexistent/payload.json"])
def test_payload_refusals(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as exit_:
        parse.payload(text)
    assert exit_.value.exit_code == connect.EXIT_USAGE
    assert capsys.readouterr().err.startswith("leasehold: --payload")


def test_status_names_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse.status("dead") is JobStatus.DEAD
    with pytest.raises(typer.Exit):
        parse.status("failed")
    assert "(waiting, queued, running, completed, dead" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (errors.Unavailable("down"), connect.EXIT_UNREACHABLE),
        (errors.JobNotFound("no job has id 4"), connect.EXIT_NOT_FOUND),
        (errors.ScheduleNotFound(), connect.EXIT_NOT_FOUND),
        (errors.LimitNotFound(), connect.EXIT_NOT_FOUND),
        (errors.JobCancelled(), connect.EXIT_CONFLICT),
        (errors.Unauthorized(), connect.EXIT_AUTH),
        (errors.Forbidden(), connect.EXIT_AUTH),
        (errors.InvalidTransition("job 1 is queued"), connect.EXIT_CONFLICT),
        (errors.StaleToken(), connect.EXIT_CONFLICT),
        (errors.InvalidRequest("bad"), connect.EXIT_REFUSED),
        (errors.IdempotencyConflict(), connect.EXIT_REFUSED),
        (errors.PayloadTooLarge(), connect.EXIT_REFUSED),
        (errors.UnsupportedMediaType(), connect.EXIT_REFUSED),
        (errors.LeaseholdError("the coordinator answered 404"), connect.EXIT_ERROR),
    ],
)
def test_each_error_has_its_exit_code_and_one_line(error: errors.LeaseholdError, code: int) -> None:
    message, exit_code = connect.describe(error, "http://h:1")
    assert exit_code == code
    assert "\n" not in message


def test_a_message_over_several_lines_becomes_one() -> None:
    message, _ = connect.describe(errors.InvalidRequest("kind:\n  too long\n"), "http://h:1")
    assert message == "refused: kind: too long"


def test_job_json_is_the_wire_form() -> None:
    job = Job(1, "k", {"a": 1}, JobStatus.DEAD, 2, 2, NOW, NOW, lease_token=2, finished_at=NOW)
    assert job_json(job) == {
        "id": 1,
        "kind": "k",
        "payload": {"a": 1},
        "status": "dead",
        "attempts": 2,
        "max_attempts": 2,
        "run_after": "2030-01-01T09:00:00+00:00",
        "created_at": "2030-01-01T09:00:00+00:00",
        "lease_token": 2,
        "lease_owner": None,
        "lease_expires_at": None,
        "leased_at": None,
        "finished_at": "2030-01-01T09:00:00+00:00",
        "idempotency_key": None,
        "result": None,
        "last_error": None,
        "priority": 0,
        "queue": "default",
        "cancel_requested": False,
        "headers": None,
        "timeout_seconds": None,
        "waiting_for": 0,
        "depth": 0,
        "dependents": 0,
        "blocked_by": None,
        "spawned_by": None,
        "spawn_key": None,
        "group_key": None,
        "weight": 1,
        "start_by": None,
        "unique_key": None,
    }


class ScriptedStats:
    """Answers ``stats()`` from a list: a dict is returned, an exception raised."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)

    def stats(self) -> dict[str, Any]:
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer  # type: ignore[no-any-return]


def stats_answer(queued: int) -> dict[str, Any]:
    return {
        "by_status": {"queued": queued, "running": 0, "completed": 0, "dead": 0},
        "by_kind": {"k": {"queued": queued}},
        "totals": {},
        "avg_wait_seconds": None,
        "avg_run_seconds": None,
        "average_window_seconds": 300,
        "lease_expirations": 0,
        "stale_token_rejections": 0,
        "oldest_queued_age_seconds": None,
        "completed_last_minute": 0,
        "failed_last_minute": 0,
    }


def test_a_watch_shows_an_outage_and_goes_on_until_ctrl_c(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Off a terminal, Live prints only its last frame: look at each frame as it is made.
    frames: list[tuple[int, str | None]] = []
    make_frame = watch._frame

    def spy(stats: dict[str, Any], url: str, every: float, problem: str | None, width: int) -> Any:
        frames.append((stats["by_status"]["queued"], problem))
        return make_frame(stats, url, every, problem, width)

    monkeypatch.setattr(watch, "_frame", spy)
    client = ScriptedStats(
        stats_answer(1), errors.Unavailable("restarting"), stats_answer(7), KeyboardInterrupt()
    )
    watch.show_stats(client, "http://h:1", 0.01, as_json=False)  # type: ignore[arg-type]
    # The outage keeps the last figures on screen, with the reason above them.
    assert frames == [(1, None), (1, "restarting"), (7, None)]
    assert client.answers == []  # read until the Ctrl+C, which ended it quietly
    assert "RECENTLY" in capsys.readouterr().out


def test_a_watch_stops_at_an_error_that_asking_again_will_not_fix() -> None:
    client = ScriptedStats(stats_answer(1), errors.Unauthorized())
    with pytest.raises(errors.Unauthorized):
        watch.show_stats(client, "http://h:1", 0.01, as_json=True)  # type: ignore[arg-type]


def test_a_watch_in_json_reports_an_outage_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    client = ScriptedStats(
        stats_answer(1), errors.Unavailable("restarting"), stats_answer(2), KeyboardInterrupt()
    )
    watch.show_stats(client, "http://h:1", 0.01, as_json=True)  # type: ignore[arg-type]
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines()]
    assert [line["by_status"]["queued"] for line in lines] == [1, 2]
    assert captured.err == "leasehold: coordinator unavailable: restarting\n"


def test_stats_show_what_the_coordinator_added_up_apart_from_any_kind() -> None:
    """A kind named ``other`` is a row like any; the rest is its own, styled row."""
    stats = {
        **stats_answer(14),
        "by_kind": {"other": {"queued": 3}},
        "by_queue": {"default": {"queued": 14}},
        "folded": {
            "by_kind": {"names": 11, "counts": {"queued": 11}},
            "by_queue": None,
            "totals_by_kind": {"names": 11, "counts": {"enqueued": 11}},
        },
    }
    console = Console(file=io.StringIO(), width=120)
    console.print(render.stats_view(stats, console.width))
    rows = [line.split() for line in console.file.getvalue().splitlines()]  # type: ignore[attr-defined]
    assert ["other", "3", "0", "0", "0"] in rows
    assert ["(11", "more,", "added", "up)", "11", "0", "0", "0"] in rows
