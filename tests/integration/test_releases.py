"""A job cannot be leased and released forever, and its history comes a page at a time
(issue 15, item 12)."""

from __future__ import annotations

from leasehold.coordinator.rules.transitions import FREE_RELEASES
from tests.http import Api


async def test_releases_past_the_free_ones_use_up_attempts(inproc_api: Api) -> None:
    """A max_attempts=2 job: 3 releases are free, the 4th keeps its attempt, the 5th (on
    its last attempt) makes it dead; every lease is in its history, a page at a time."""
    api = inproc_api
    job_id = (await api.post("/jobs", {"kind": "k", "max_attempts": 2})).body["id"]
    tokens = []
    statuses = []
    for _ in range(FREE_RELEASES + 2):
        lease = await api.post("/lease", {"worker_id": "w"})
        assert lease.status == 200, lease
        tokens.append(lease.body["token"])
        released = await api.post(f"/jobs/{job_id}/release", {"token": lease.body["token"]})
        assert released.status == 200, released
        statuses.append((released.body["status"], released.body["attempts"]))
    assert statuses == [("queued", 0)] * FREE_RELEASES + [("queued", 1), ("dead", 2)]
    assert "released 5 times" in (await api.get(f"/jobs/{job_id}")).body["last_error"]
    assert (await api.post("/lease", {"worker_id": "w"})).status == 204

    pages, cursor = [], None
    while True:
        query = f"?limit=2&cursor={cursor}" if cursor else "?limit=2"
        page = await api.get(f"/jobs/{job_id}/attempts{query}")
        assert page.status == 200, page
        pages.append([a["token"] for a in page.body["attempts"]])
        cursor = page.body["next_cursor"]
        if cursor is None:
            break
    assert pages == [tokens[0:2], tokens[2:4], tokens[4:5]]
    whole = await api.get(f"/jobs/{job_id}/attempts")
    assert [a["token"] for a in whole.body["attempts"]] == tokens
    assert whole.body["next_cursor"] is None
    for bad in ("limit=0", "limit=1001", "cursor=x1", "cursor=-1"):
        assert (await api.get(f"/jobs/{job_id}/attempts?{bad}")).status == 422, bad
