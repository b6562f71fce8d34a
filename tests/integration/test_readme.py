"""README's examples, run: the commands work as printed and the outputs shown are real.

A block marked ``<!-- readme-test: NAME -->`` on the line before it is used here by NAME:
python blocks are written to files and run, console blocks (``$ command`` then its output)
are run with bash, JSON blocks are compared with what a real coordinator answers. Addresses
(``127.0.0.1:8080``, ``localhost:8080``) become the test coordinator's; times, host names
and measured figures may differ, everything else must match.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.process import Coordinator, wait_until

README = Path(__file__).resolve().parents[2] / "README.md"
MARKER = re.compile(r"<!-- readme-test: ([\w.-]+) -->\n```(\w*)\n(.*?)```", re.S)
# README's commands find `leasehold` and `python` on the PATH, as in an activated venv.
ENV = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
# Fields whose values depend on when and where the example ran.
VOLATILE = {
    "run_after",
    "created_at",
    "leased_at",
    "finished_at",
    "lease_expires_at",
    "lease_owner",
    "timestamp",
    "avg_wait_seconds",
    "avg_run_seconds",
    "oldest_queued_age_seconds",
    "request_id",
    "instance",
    # Tokens start above the time in microseconds at the coordinator's start (DESIGN.md §4).
    "token",
    "lease_token",
}
# A token quoted in an error message, volatile too.
QUOTED_TOKEN = re.compile(r"\btoken \d+")


def blocks() -> dict[str, str]:
    return {name: text for name, _, text in MARKER.findall(README.read_text())}


@dataclass
class Step:
    command: str
    output: list[str]


def console(text: str) -> list[Step]:
    """``$ command`` lines (continued by a trailing backslash) and the output after each."""
    steps: list[Step] = []
    continued = False
    for line in text.splitlines():
        if continued:
            steps[-1].command += "\n" + line
        elif line.startswith("$ "):
            steps.append(Step(line[2:], []))
        else:
            steps[-1].output.append(line)
        continued = line.endswith("\\")
    return steps


def localised(text: str, url: str) -> str:
    host = url.removeprefix("http://")
    return text.replace("127.0.0.1:8080", host).replace("localhost:8080", host)


def run(command: str, cwd: Path, url: str) -> list[str]:
    done = subprocess.run(
        ["bash", "-c", localised(command, url)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def tokens_hidden(lines: list[str]) -> list[str]:
    return [QUOTED_TOKEN.sub("token N", line) for line in lines]


def same_shape(shown: Any, real: Any, where: str = "") -> None:
    """The same keys all the way down, and the same values but for the volatile ones."""
    if isinstance(shown, dict) and isinstance(real, dict):
        assert sorted(shown) == sorted(real), f"{where}: README {sorted(shown)} != {sorted(real)}"
        for key in shown:
            if key not in VOLATILE:
                same_shape(shown[key], real[key], f"{where}.{key}")
    elif isinstance(shown, list) and isinstance(real, list):
        assert len(shown) == len(real), where
        for n, (a, b) in enumerate(zip(shown, real, strict=True)):
            same_shape(a, b, f"{where}[{n}]")
    elif isinstance(shown, str) and isinstance(real, str):
        same = QUOTED_TOKEN.sub("token N", shown) == QUOTED_TOKEN.sub("token N", real)
        assert same, f"{where}: README {shown!r}, real {real!r}"
    else:
        assert shown == real, f"{where}: README {shown!r}, real {real!r}"


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        body = answer.read()
    return json.loads(body) if answer.headers.get_content_type() == "application/json" else body


def post(url: str, body: Any) -> tuple[int, Any]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


@pytest.fixture
def coordinator(tmp_path: Path) -> Iterator[Coordinator]:
    """A real coordinator, as README's examples start one, logging JSON at debug."""
    c = Coordinator(
        f"sqlite:///{tmp_path / 'demo.db'}",
        tmp_path,
        ["--log-level", "debug", "--reap-interval-seconds", "0.1"],
    ).start()
    yield c
    c.kill()


def json_values(text: str) -> list[Any]:
    """The JSON values ``text`` holds one after the other (``curl -s`` adds no newline)."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while at < len(text):
        value, at = decoder.raw_decode(text, at)
        values.append(value)
        while at < len(text) and text[at].isspace():
            at += 1
    return values


def test_the_protocol_in_four_requests(coordinator: Coordinator, tmp_path: Path) -> None:
    """Run after other jobs, as when README's sections are followed in order: the block
    works on the job it enqueued, under the token its lease got."""
    earlier = post(coordinator.url + "/jobs", {"kind": "resize-image"})[1]
    lease = post(coordinator.url + "/lease", {"worker_id": "w0"})[1]
    done = post(f"{coordinator.url}/jobs/{earlier['id']}/complete", {"token": lease["token"]})
    assert done[0] == 200
    output = "\n".join(run(blocks()["protocol"], tmp_path, coordinator.url))
    enqueued, leased, renewed, completed = json_values(output)
    assert enqueued["id"] == leased["job"]["id"] == completed["id"] != earlier["id"]
    assert (enqueued["status"], renewed["lease_token"]) == ("queued", leased["token"])
    assert (completed["status"], completed["result"]) == ("completed", {"charge_id": "ch_1"})


def test_workflows_over_http(coordinator: Coordinator, tmp_path: Path) -> None:
    batch, merge = json_values("\n".join(run(blocks()["workflows"], tmp_path, coordinator.url)))
    statuses = [item["job"]["status"] for item in batch["jobs"]]
    assert statuses == ["queued", "queued", "waiting"]
    assert merge["job"]["kind"] == "merge"
    assert [(p["status"], p["result"]) for p in merge["parents"]] == [
        ("completed", {"bytes": 1000}),
        ("completed", {"bytes": 2000}),
    ]


def test_flow_control_over_http(coordinator: Coordinator, tmp_path: Path) -> None:
    output = run(blocks()["flow"], tmp_path, coordinator.url)
    status_line = next(line for line in output if line.startswith("HTTP/"))
    assert status_line.split()[1] == "200"  # a duplicate: the job already there
    limit, job, explained = json_values("\n".join(line for line in output if line != status_line))
    assert (limit["fair"], limit["rate"]["limit"], limit["max_running_per_group"]) == (True, 100, 5)
    assert (job["group_key"], job["status"]) == ("acme", "queued")
    assert [r["code"] for r in explained["reasons"]] == ["no_worker"]


def test_the_worker_session(coordinator: Coordinator, tmp_path: Path) -> None:
    """jobs.py, a worker, a curl enqueue, enqueue.py and show.py, with the outputs shown."""
    found = blocks()
    for name in ("jobs.py", "enqueue.py", "show.py"):
        (tmp_path / name).write_text(localised(found[name], coordinator.url))
    (start,) = [
        s for s in console(found["worker-start"]) if s.command.startswith("leasehold worker")
    ]
    with (tmp_path / "worker.log").open("wb") as log:
        worker = subprocess.Popen(
            shlex.split(localised(start.command, coordinator.url)),
            cwd=tmp_path,
            stderr=log,
            env=ENV,
        )
    try:
        for block in ("curl-enqueue", "enqueue-run"):
            for step in console(found[block]):
                real = run(step.command, tmp_path, coordinator.url)
                if step.output and step.output[0].startswith("{"):
                    same_shape(json.loads(step.output[0]), json.loads(real[0]))
                else:
                    assert real == step.output

        def finished() -> bool:
            jobs = get(coordinator.url + "/jobs")["jobs"]
            return len(jobs) == 3 and all(j["status"] in ("completed", "dead") for j in jobs)

        wait_until(finished, 30, what="the three jobs to finish")
        for step in console(found["see-them-finish"]):
            real = run(step.command, tmp_path, coordinator.url)
            if step.output[0].startswith("{"):
                same_shape(json.loads(step.output[0]), json.loads(real[0]))
                continue
            assert tokens_hidden(real) == tokens_hidden(step.output)
    finally:
        worker.send_signal(signal.SIGINT)  # README: Ctrl+C stops it and it exits 0
        code = worker.wait(30)
    assert code == 0, (tmp_path / "worker.log").read_text()


def test_the_observability_session(coordinator: Coordinator) -> None:
    """The session README tells, replayed: /stats, the attempts, /metrics and the log lines
    it shows are what a coordinator answers and logs."""
    url = coordinator.url
    for kind in ("send-email", "send-email", "send-email", "build-report"):
        assert post(url + "/jobs", {"kind": kind})[0] == 201

    def lease(worker: str, kind: str, seconds: float = 30) -> Any:
        status, body = post(
            url + "/lease", {"worker_id": worker, "kinds": [kind], "lease_seconds": seconds}
        )
        assert status == 200
        return body

    first = lease("w1", "send-email")
    assert post(f"{url}/jobs/{first['job']['id']}/complete", {"token": first["token"]})[0] == 200
    second = lease("w1", "send-email")
    failed = {"token": second["token"], "error": "smtp", "retry_after_seconds": 3600}
    assert post(f"{url}/jobs/{second['job']['id']}/fail", failed)[0] == 200
    vanished = lease("w2", "build-report", 0.3)  # w2 vanishes
    assert vanished["job"]["id"] == 4

    def taken_back() -> bool:
        return bool(get(url + "/jobs/4")["status"] == "queued")

    wait_until(taken_back, 30, what="the reaper to take job 4 back")
    rescued = lease("w3", "build-report")
    late = {"token": vanished["token"]}
    assert post(f"{url}/jobs/4/complete", late)[0] == 409  # from w2's lease
    assert post(f"{url}/jobs/4/complete", {"token": rescued["token"]})[0] == 200
    lease("w1", "send-email")  # job 3, still running at the end

    found = blocks()
    stats = get(url + "/stats")
    for abridged in ("by_kind", "by_queue", "totals_by_kind"):  # README leaves these out
        del stats[abridged]
    same_shape(json.loads(found["stats"]), stats)
    same_shape(json.loads(found["attempts"]), get(url + "/jobs/4/attempts"))
    metrics = get(url + "/metrics").decode().splitlines()
    for line in found["metrics"].splitlines():
        assert line in metrics, line
    logged = [json.loads(line) for line in coordinator.logs().splitlines() if line[:1] == "{"]
    for line in found["logs"].splitlines():
        shown = {k: v for k, v in json.loads(line).items() if k not in VOLATILE}
        assert any(shown.items() <= real.items() for real in logged), line
