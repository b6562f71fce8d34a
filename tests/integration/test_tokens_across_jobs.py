"""A lease's token speaks for its own job only (issue 15, item 11)."""

from __future__ import annotations

from tests.http import Api


async def test_another_jobs_token_is_refused(inproc_api: Api) -> None:
    """Every job's first token used to be 1, so a worker that mixed up ids completed
    another worker's job; now the token of job A is refused on job B with 409."""
    api = inproc_api
    await api.post("/jobs/batch", {"jobs": [{"kind": "k"}, {"kind": "k"}]})
    a = (await api.post("/lease", {"worker_id": "wa"})).body
    b = (await api.post("/lease", {"worker_id": "wb"})).body
    assert a["token"] != b["token"]
    wrong = await api.post(f"/jobs/{b['job']['id']}/complete", {"token": a["token"]})
    assert wrong.status == 409 and wrong.body["error"] == "stale_token", wrong
    items = [{"id": b["job"]["id"], "token": a["token"]}]
    batch = await api.post("/batch/complete", {"items": items})
    assert batch.body["results"][0]["outcome"] == "stale"
    assert (await api.get(f"/jobs/{b['job']['id']}")).body["status"] == "running"
    right = await api.post(f"/jobs/{a['job']['id']}/complete", {"token": a["token"]})
    assert right.status == 200 and right.body["status"] == "completed"
