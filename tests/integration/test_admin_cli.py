"""The admin commands against a real coordinator: tables, --json, and each error's exit code.

Most run in-process through typer's CliRunner (quick); the ones about the real entry point
(stdout kept clean, the retry policy's bound, Ctrl+C ending a watch) run ``python -m
leasehold`` as a subprocess.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import structlog
from typer.testing import CliRunner, Result

from leasehold.cli import app
from leasehold.cli.logs import configure_quiet_logging
from leasehold.client import SyncClient
from leasehold.coordinator.auth_tokens import new_token
from leasehold.model import JobStatus
from tests.process import Coordinator, free_port, sqlite_coordinator
from tests.scripted import serving, status

# Wide enough that no table cell is cut short in the assertions below.
RUNNER_ENV = {"COLUMNS": "200", "LEASEHOLD_URL": "", "LEASEHOLD_TOKEN": ""}


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Coordinator]:
    """One coordinator for the module; each test uses kinds of its own."""
    with sqlite_coordinator(tmp_path_factory.mktemp("admin")) as coordinator:
        yield coordinator


@pytest.fixture(autouse=True)
def quiet_logs() -> Iterator[None]:
    """What ``leasehold.cli.main`` sets up before a command (CliRunner calls the app)."""
    old = structlog.get_config()
    configure_quiet_logging()
    yield
    structlog.configure(**old)


@pytest.fixture
def client(shared: Coordinator) -> Iterator[SyncClient]:
    with SyncClient(shared.url) as c:
        yield c


def cli(url: str, *args: str, env: dict[str, str] | None = None) -> Result:
    env = {**RUNNER_ENV, **(env or {})}
    return CliRunner().invoke(app, [*args, "--url", url] if url else list(args), env=env)


def cli_json(url: str, *args: str) -> Any:
    result = cli(url, *args, "--json")
    assert result.exit_code == 0, result.output
    # Nothing on stderr but an enqueue's warning: these jobs have no worker, on purpose.
    said = result.stderr.splitlines()
    assert all(line.startswith("leasehold: warning: no live worker serves") for line in said)
    return json.loads(result.stdout)  # the whole of stdout is the JSON


def run_process(*args: str, timeout: float = 30, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "leasehold", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **RUNNER_ENV, **env},
    )


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the tables in ``text`` (the lines under a header's rule, up to a
    blank line), split into cells at runs of two or more spaces."""
    rows, in_body = [], False
    for line in text.splitlines():
        if line.strip() and set(line.strip()) == {"─"}:
            in_body = True
        elif not line.strip():
            in_body = False
        elif in_body:
            rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


def make_dead(client: SyncClient, kind: str, error: str = "boom: the thing broke") -> int:
    """A real dead job of ``kind``: enqueued, leased, failed on its only attempt."""
    job = client.enqueue(kind, {"n": 1}, max_attempts=1)
    lease = client.lease("cli-test-worker", kinds=[kind])
    assert lease is not None and lease.job.id == job.id
    client.fail(job.id, lease.token, f"Traceback (most recent call last):\n  ...\n{error}")
    return job.id


def test_every_command_as_tables(shared: Coordinator, client: SyncClient) -> None:
    """enqueue -> jobs -> job -> requeue of a dead job -> stats, read as a person would."""
    dead_id = make_dead(client, "cli-table")
    out = cli(shared.url, "enqueue", "cli-table", "--payload", '{"to": "ada@example.com"}')
    assert out.exit_code == 0, out.output
    assert "cli-table" in out.stdout and "queued" in out.stdout
    assert '{"to": "ada@example.com"}' in out.stdout
    queued_id = int(out.stdout.split()[1])  # the first row is "id  <id>"

    listed = cli(shared.url, "jobs", "--kind", "cli-table")
    assert listed.exit_code == 0, listed.output
    queued_row, dead_row, caption = table_rows(listed.stdout)  # the newest first
    assert dead_row[:4] == [str(dead_id), "cli-table", "dead", "1/1"]
    assert dead_row[-2:] == ["cli-test-worker", "boom: the thing broke"]
    assert queued_row[:4] == [str(queued_id), "cli-table", "queued", "0/5"]
    assert caption == ["2 jobs, times in UTC"]
    dead_only = cli(shared.url, "jobs", "--kind", "cli-table", "--status", "dead")
    assert [row[0] for row in table_rows(dead_only.stdout)[:-1]] == [str(dead_id)]

    shown = cli(shared.url, "job", str(dead_id))
    assert shown.exit_code == 0, shown.output
    (attempt,) = table_rows(shown.stdout)
    assert attempt[:2] == [str(client.get(dead_id).lease_token), "cli-test-worker"]
    assert attempt[-2:] == ["failed", "boom: the thing broke"]
    assert "last error, in full:\nTraceback (most recent call last):" in shown.stdout

    requeued = cli(shared.url, "requeue", str(dead_id))
    assert requeued.exit_code == 0, requeued.output
    assert f"requeued job {dead_id}" in requeued.stdout
    assert client.get(dead_id).status is JobStatus.QUEUED

    stats = cli(shared.url, "stats")
    assert stats.exit_code == 0, stats.output
    (row,) = [row for row in table_rows(stats.stdout) if row[0] == "cli-table"]
    # The by-kind table: WAITING is the first count, QUEUED the second.
    assert row[1:3] == ["0", "2"]  # both are queued now
    assert "RECENTLY" in stats.stdout and "SINCE THE START" in stats.stdout


def test_every_command_as_json(shared: Coordinator, client: SyncClient) -> None:
    """The same round trip with --json: plain JSON on stdout, the wire form of jobs."""
    enqueue = (
        "enqueue",
        "cli-json",
        "--payload",
        "[1, 2]",
        "--key",
        "cli-json-1",
        "--queue",
        "mail",
    )
    added = cli_json(shared.url, *enqueue, "--run-after", "1h", "--max-attempts", "2")
    assert (added["kind"], added["payload"], added["status"]) == ("cli-json", [1, 2], "queued")
    assert (added["max_attempts"], added["idempotency_key"]) == (2, "cli-json-1")
    assert (added["queue"], added["priority"]) == ("mail", 0)
    later = datetime.fromisoformat(added["run_after"]) - datetime.now(UTC)
    assert timedelta(minutes=55) < later <= timedelta(hours=1)
    # The same key and the same request: the stored job, not a second one.
    again = cli_json(shared.url, *enqueue, "--run-after", added["run_after"], "--max-attempts", "2")
    assert again["id"] == added["id"]
    dead_id = make_dead(client, "cli-json")

    first = cli_json(shared.url, "jobs", "--kind", "cli-json", "--limit", "1")
    assert [j["id"] for j in first["jobs"]] == [dead_id]  # the newest first
    rest = cli_json(shared.url, "jobs", "--kind", "cli-json", "--cursor", first["next_cursor"])
    assert ([j["id"] for j in rest["jobs"]], rest["next_cursor"]) == ([added["id"]], None)
    assert cli_json(shared.url, "jobs", "--kind", "cli-json", "--status", "dead")["jobs"] == [
        first["jobs"][0]
    ]
    oldest = cli_json(shared.url, "jobs", "--kind", "cli-json", "--oldest-first")
    assert [j["id"] for j in oldest["jobs"]] == [added["id"], dead_id]
    in_mail = cli_json(shared.url, "jobs", "--kind", "cli-json", "--queue", "mail")
    assert [j["id"] for j in in_mail["jobs"]] == [added["id"]]
    broke = cli_json(shared.url, "jobs", "--kind", "cli-json", "--error-contains", "thing broke")
    assert [j["id"] for j in broke["jobs"]] == [dead_id]

    shown = cli_json(shared.url, "job", str(dead_id))
    assert shown["job"]["status"] == "dead"
    assert shown["job"]["last_error"].endswith("boom: the thing broke")
    (attempt,) = shown["attempts"]
    assert (attempt["token"], attempt["worker_id"], attempt["outcome"]) == (
        shown["job"]["lease_token"],  # coordinator-wide tokens: the coordinator is shared
        "cli-test-worker",
        "failed",
    )

    revived = cli_json(shared.url, "requeue", str(dead_id))
    assert (revived["id"], revived["status"], revived["attempts"]) == (dead_id, "queued", 0)

    stats = cli_json(shared.url, "stats")
    assert stats["by_kind"]["cli-json"]["queued"] == 2
    assert set(stats["by_status"]) == {s.value for s in JobStatus}


def test_requeue_all_dead_with_filters(shared: Coordinator, client: SyncClient) -> None:
    timed_out = make_dead(client, "cli-bulk", "TimeoutError: the bank did not answer")
    refused = make_dead(client, "cli-bulk", "ValueError: no such account")
    other_kind = make_dead(client, "cli-bulk-other", "TimeoutError: also")
    only_timeouts = ("--kind", "cli-bulk", "--error-contains", "TimeoutError")
    assert cli_json(shared.url, "requeue", "--all-dead", *only_timeouts) == {"requeued": 1}
    assert client.get(timed_out).status is JobStatus.QUEUED
    assert client.get(refused).status is JobStatus.DEAD
    rest = cli(shared.url, "requeue", "--all-dead", "--kind", "cli-bulk")
    assert (rest.exit_code, rest.stdout.strip()) == (0, "requeued 1 dead job")
    assert client.get(refused).status is JobStatus.QUEUED
    assert client.get(other_kind).status is JobStatus.DEAD


@pytest.mark.parametrize(
    "args",
    [(), ("7", "--all-dead"), ("7", "--kind", "k"), ("7", "--error-contains", "x")],
)
def test_requeue_wants_an_id_or_all_dead(shared: Coordinator, args: tuple[str, ...]) -> None:
    result = cli(shared.url, "requeue", *args)
    assert result.exit_code == 2
    assert result.stderr.startswith("leasehold: ") and result.stderr.count("\n") == 1


def test_unknown_job_is_exit_4(shared: Coordinator) -> None:
    for command in ("job", "requeue"):
        result = cli(shared.url, command, "999999", "--json")
        assert (result.exit_code, result.stdout) == (4, "")
        assert result.stderr == "leasehold: not found: no job has id 999999\n"


def test_requeue_of_a_job_that_is_not_dead_is_exit_6(shared: Coordinator) -> None:
    """Through the real entry point: stdout stays empty, one line on stderr."""
    job_id = cli_json(shared.url, "enqueue", "cli-conflict")["id"]
    done = run_process("requeue", str(job_id), "--json", "--url", shared.url)
    assert (done.returncode, done.stdout) == (6, "")
    assert done.stderr == (
        f"leasehold: conflict: job {job_id} is queued; only dead or cancelled jobs are requeued\n"
    )


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        ("{to: 1}", "Expecting property name enclosed in double quotes"),
        ("NaN", "NaN is not allowed in JSON"),
        ("", "Expecting value"),
    ],
)
def test_a_payload_that_is_not_json_is_exit_2_and_sends_nothing(
    shared: Coordinator, client: SyncClient, payload: str, why: str
) -> None:
    result = cli(shared.url, "enqueue", "cli-bad-json", "--payload", payload, "--json")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith("leasehold: --payload is not valid JSON: ")
    assert why in result.stderr and result.stderr.count("\n") == 1
    assert client.list(kind="cli-bad-json").jobs == []


def test_payload_from_a_file_and_from_stdin(shared: Coordinator, tmp_path: Path) -> None:
    path = tmp_path / "payload.json"
    path.write_text('{"from": "file"}')
    from_file = cli_json(shared.url, "enqueue", "cli-payload", "--payload", f"@{path}")
    assert from_file["payload"] == {"from": "file"}
    result = CliRunner().invoke(
        app,
        ["enqueue", "cli-payload", "--payload", "-", "--json", "--url", shared.url],
        input='{"from": "stdin"}',
        env=RUNNER_ENV,
    )
    assert json.loads(result.stdout)["payload"] == {"from": "stdin"}


def test_run_after_without_an_offset_is_exit_2(shared: Coordinator) -> None:
    result = cli(shared.url, "enqueue", "cli-naive", "--run-after", "2030-01-01T09:00:00")
    assert result.exit_code == 2
    assert "has no UTC offset" in result.stderr


def test_an_unreachable_coordinator_is_exit_3() -> None:
    """Through the real entry point: one line on stderr, the client's retry warnings quiet."""
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    done = run_process("jobs", "--json", "--url", url)
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr.startswith(f"leasehold: cannot reach the coordinator at {url} (")
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("answer", "code", "message", "tries"),
    [
        (status(401, "unauthorized", "a token is required"), 5, "unauthorized: a token", 1),
        (status(403, "forbidden", "reader may not requeue"), 5, "forbidden: reader may not", 1),
        (status(422, "validation_error", "kind is too long"), 7, "refused: kind is too long", 1),
        (status(413, "payload_too_large", "too big"), 7, "refused: too big", 1),
        # Tried again, but only three times: a person is waiting, unlike a worker.
        (status(503, "unavailable", "database down"), 3, "cannot reach the coordinator", 3),
        (status(404), 1, "the coordinator answered 404", 1),  # not a leasehold coordinator
    ],
)
async def test_refusals_map_to_exit_codes(answer: Any, code: int, message: str, tries: int) -> None:
    async with serving(answer) as server:
        # In a thread: the scripted server answers on this test's event loop.
        result = await asyncio.to_thread(cli, server.url, "stats", "--json", env={})
    assert (result.exit_code, result.stdout) == (code, "")
    assert result.stderr.startswith(f"leasehold: {message}")
    assert result.stderr.count("\n") == 1
    assert len(server.requests) == tries


async def test_url_and_token_come_from_the_environment() -> None:
    async with serving(status(401, "unauthorized", "bad token")) as server:
        env = {"LEASEHOLD_URL": server.url, "LEASEHOLD_TOKEN": "s3cret"}
        result = await asyncio.to_thread(cli, "", "job", "1", env=env)
    assert result.exit_code == 5
    assert "Set LEASEHOLD_TOKEN or --token-file" in result.stderr
    assert server.requests[0].headers["Authorization"] == "Bearer s3cret"


def test_stats_watch_json_prints_a_line_each_time_until_ctrl_c(shared: Coordinator) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "leasehold", "stats", "--watch", "--every", "0.2", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **RUNNER_ENV, "LEASEHOLD_URL": shared.url},
        # Ctrl+C as at a terminal, even when these tests run in the background (where the
        # shell starts them with SIGINT ignored, and Python then keeps it ignored).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as proc:
        try:
            assert proc.stdout is not None
            lines = [json.loads(proc.stdout.readline()) for _ in range(2)]
            assert all("by_status" in line for line in lines)
            proc.send_signal(signal.SIGINT)
            assert proc.wait(10) == 0  # Ctrl+C is how a watch ends, not an error
        finally:
            proc.kill()


def test_tokens_and_roles_against_a_guarded_coordinator(tmp_path: Path) -> None:
    """No token is exit 5 (401), a token whose role may not is exit 5 too (403), and the
    admin token, from LEASEHOLD_TOKEN or --token-file, may do everything."""
    admin, reader = new_token(), new_token()
    env = {"LEASEHOLD_TOKENS": f"admin={admin},reader={reader}"}
    guarded = Coordinator(f"sqlite:///{tmp_path / 'guarded.db'}", tmp_path, env=env).start()
    try:
        anonymous = cli(guarded.url, "stats")
        assert anonymous.exit_code == 5
        assert anonymous.stderr.startswith("leasehold: unauthorized: ")
        assert anonymous.stderr.endswith("Set LEASEHOLD_TOKEN or --token-file.\n")
        assert cli(guarded.url, "stats", "--token", reader).exit_code == 0
        refused = cli(guarded.url, "requeue", "--all-dead", "--token", reader)
        assert refused.exit_code == 5
        warning, error = refused.stderr.splitlines()  # a token on the command line is warned
        assert warning.startswith("leasehold: warning: --token shows the token")
        assert error.startswith("leasehold: forbidden: ")
        token_file = tmp_path / "admin.token"
        token_file.write_text(f"{admin}\n")
        token_file.chmod(0o600)  # readable by its owner alone, as the help asks
        from_file = cli(guarded.url, "requeue", "--all-dead", "--token-file", str(token_file))
        assert (from_file.exit_code, from_file.stdout) == (0, "requeued 0 dead jobs\n")
        assert from_file.stderr == ""
        allowed = cli(guarded.url, "requeue", "--all-dead", env={"LEASEHOLD_TOKEN": admin})
        assert (allowed.exit_code, allowed.stdout) == (0, "requeued 0 dead jobs\n")
    finally:
        guarded.kill()


def on_a_terminal(*args: str, columns: int) -> str:
    """``python -m leasehold ARGS`` with its output on a terminal (a pseudo-terminal) of
    ``columns`` columns: what it shows, colours left out."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "leasehold", *args], stdout=terminal, stderr=terminal, env=env
    )
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal closed: the command has exited
            break
        if not chunk:
            break
        shown += chunk
    os.close(controller)
    assert proc.wait(30) == 0, shown
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.decode()).replace("\r", "")


def test_tables_wrap_at_80_columns_and_are_whole_when_piped(
    shared: Coordinator, client: SyncClient
) -> None:
    """On a terminal of 80 columns nothing is cut: long cells wrap and headers are whole.
    Piped, a table is one line per row with every cell in full, so grep finds a job by the
    end of its error; --json stays the coordinator's JSON."""
    kind = "cli-narrow-report-builder"
    error = "TimeoutError: database timeout while building the monthly report"
    dead_id = make_dead(client, kind, error)
    piped = run_process("jobs", "--kind", kind, "--url", shared.url, COLUMNS="80")  # a pipe
    assert piped.returncode == 0, piped.stderr
    (row,) = [line for line in piped.stdout.splitlines() if "monthly report" in line]
    assert row.split()[0] == str(dead_id) and row.endswith(error)
    assert "cli-test-worker" in row and "…" not in piped.stdout
    assert all(line == line.rstrip() for line in piped.stdout.splitlines())

    shown = on_a_terminal("jobs", "--kind", kind, "--url", shared.url, columns=80)
    assert max(len(line) for line in shown.splitlines()) <= 80
    assert "…" not in shown
    words = " ".join(shown.split())
    for word in [*error.split(), kind[:8], "cli-test"]:
        assert word in words
    queues = on_a_terminal("queues", "--url", shared.url, columns=80)
    assert max(len(line) for line in queues.splitlines()) <= 80
    assert "…" not in queues
    for header in ("QUEUE", "STATE", "QUEUED", "RUNNING", "COMPLETED", "CANCELLED", "DONE/MIN"):
        assert header in queues.split()
    assert "default" in queues and "active" in queues
    assert cli_json(shared.url, "jobs", "--kind", kind)["jobs"][0]["id"] == dead_id
