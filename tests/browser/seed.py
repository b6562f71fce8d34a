"""Jobs in every state, made through the HTTP API like any producer and worker would."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any


class Http:
    """Blocking JSON over HTTP (the browser tests are synchronous)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.base_url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                raw = answer.read()
                return answer.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as error:
            raw = error.read()
            return error.code, json.loads(raw) if raw else None

    def get(self, path: str) -> Any:
        status, body = self.call("GET", path)
        assert status == 200, (path, status, body)
        return body

    def post(self, path: str, body: Any = None) -> tuple[int, Any]:
        return self.call("POST", path, body if body is not None else {})

    def enqueue(self, kind: str, **fields: Any) -> dict[str, Any]:
        status, job = self.post("/jobs", {"kind": kind, **fields})
        assert status == 201, job
        result: dict[str, Any] = job
        return result

    def lease(self, worker: str, kinds: list[str], seconds: float = 30) -> dict[str, Any] | None:
        status, body = self.post(
            "/lease", {"worker_id": worker, "kinds": kinds, "lease_seconds": seconds}
        )
        assert status in (200, 204), body
        lease: dict[str, Any] | None = body if status == 200 else None
        return lease


# Payload and error text that would run script if the page ever rendered data as HTML.
HOSTILE_PAYLOAD = {
    "html": '<img src=x onerror="window.__xss=1">',
    "note": "</pre><script>window.__xss=2</script>",
}
HOSTILE_ERROR = '<b onmouseover="window.__xss=3">boom</b>'


@dataclass
class Seeded:
    completed: list[int] = field(default_factory=list)
    dead: list[int] = field(default_factory=list)
    queued: list[int] = field(default_factory=list)
    running: list[int] = field(default_factory=list)


def seed_small(http: Http) -> Seeded:
    """4 completed, 2 dead (each after two failed attempts), 3 queued, 1 running."""
    seeded = Seeded()
    for n in range(4):
        http.enqueue("email", payload={"to": f"user{n}@example.com"})
    for n in range(2):
        http.enqueue("report", payload=HOSTILE_PAYLOAD if n == 0 else {"n": n}, max_attempts=2)
    for n in range(3):
        seeded.queued.append(http.enqueue("thumbnail", payload={"image": n})["id"])
    while lease := http.lease("mailer-1", ["email"]):
        job_id = lease["job"]["id"]
        status, _ = http.post(
            f"/jobs/{job_id}/complete", {"token": lease["token"], "result": {"sent": True}}
        )
        assert status == 200
        seeded.completed.append(job_id)
    # Two rounds: each report job fails once (retried at once), then again (dead).
    for attempt in (1, 2):
        for _ in range(2):
            lease = http.lease(f"reporter-{attempt}", ["report"])
            assert lease is not None
            job_id = lease["job"]["id"]
            status, job = http.post(
                f"/jobs/{job_id}/fail",
                {"token": lease["token"], "error": HOSTILE_ERROR, "retry_after_seconds": 0},
            )
            assert status == 200, job
            if job["status"] == "dead":
                seeded.dead.append(job_id)
    running = http.lease("thumbnailer-1", ["thumbnail"], seconds=600)
    assert running is not None
    seeded.running.append(running["job"]["id"])
    seeded.queued.remove(running["job"]["id"])
    return seeded
