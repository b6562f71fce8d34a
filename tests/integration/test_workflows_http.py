"""Workflows and flow control over HTTP, as PROTOCOL.md states them: the fields, the answers,
the refusals (each a 4xx naming the problem, nothing half-inserted)."""

from __future__ import annotations

from tests.http import Api


async def test_a_chain_and_a_fan_in_over_http(inproc_api: Api) -> None:
    api = inproc_api
    batch = await api.post(
        "/jobs/batch",
        {
            "jobs": [
                {"ref": "fetch", "kind": "fetch", "payload": {"url": "a"}},
                {"ref": "parse", "kind": "parse", "depends_on": [{"ref": "fetch"}]},
                {
                    "kind": "report",
                    "depends_on": [{"ref": "parse"}, {"ref": "fetch", "on_failure": "run"}],
                },
            ]
        },
    )
    assert batch.status == 200, batch
    fetch, parse, report = (item["job"] for item in batch.body["jobs"])
    assert [item["created"] for item in batch.body["jobs"]] == [True, True, True]
    assert (parse["status"], parse["waiting_for"], report["depth"]) == ("waiting", 1, 2)
    lease = await api.lease(kinds=["fetch"])
    assert lease is not None and "parents" not in lease  # a job without parents
    done = await api.post(
        f"/jobs/{fetch['id']}/complete", {"token": lease["token"], "result": {"html": "<p>"}}
    )
    assert done.status == 200
    lease = await api.lease(kinds=["parse"])
    assert lease is not None
    assert lease["parents"] == [
        {
            "id": fetch["id"],
            "kind": "fetch",
            "status": "completed",
            "result": {"html": "<p>"},
            "result_omitted": False,
            "spawn_key": None,
            "on_failure": "cancel",
        }
    ]
    parents = await api.get(f"/jobs/{report['id']}/parents")
    assert [p["id"] for p in parents.body["jobs"]] == [fetch["id"], parse["id"]]
    dependents = await api.get(f"/jobs/{fetch['id']}/dependents")
    assert [d["id"] for d in dependents.body["jobs"]] == [parse["id"], report["id"]]
    why = await api.get(f"/jobs/{report['id']}/explain")
    assert why.status == 200
    assert [r["code"] for r in why.body["reasons"]] == ["waiting_for_parents"]


async def test_bad_graphs_are_refused_whole(inproc_api: Api) -> None:
    api = inproc_api
    cycle = await api.post(
        "/jobs/batch",
        {
            "jobs": [
                {"ref": "a", "kind": "x", "depends_on": [{"ref": "b"}]},
                {"ref": "b", "kind": "x", "depends_on": [{"ref": "a"}]},
            ]
        },
    )
    assert cycle.status == 422
    assert cycle.body["error"] == "invalid_graph"
    assert cycle.body["detail"][0]["loc"][:2] == ["body", "jobs"]
    unknown = await api.post("/jobs", {"kind": "x", "depends_on": [99999]})
    assert (unknown.status, unknown.body["error"]) == (422, "invalid_graph")
    ref_alone = await api.post("/jobs", {"kind": "x", "depends_on": [{"ref": "a"}]})
    assert ref_alone.status == 422
    both = await api.post("/jobs", {"kind": "x", "depends_on": [{"id": 1, "ref": "a"}]})
    assert both.status == 422
    twice = await api.post(
        "/jobs/batch", {"jobs": [{"ref": "x", "kind": "x"}, {"ref": "x", "kind": "x"}]}
    )
    assert (twice.status, twice.body["detail"][0]["loc"]) == (422, ["body", "jobs", 1, "ref"])
    listed = await api.get("/jobs")
    assert listed.body["jobs"] == []


async def test_children_are_spawned_under_the_parents_token(inproc_api: Api) -> None:
    api = inproc_api
    parent = await api.enqueue("split")
    lease = await api.lease(kinds=["split"])
    assert lease is not None
    body = {
        "token": lease["token"],
        "jobs": [
            {"key": "part-1", "kind": "part", "payload": 1},
            {"key": "part-2", "kind": "part", "payload": 2},
            {"key": "join", "kind": "join", "depends_on": [{"ref": "part-1"}, {"ref": "part-2"}]},
        ],
    }
    first = await api.post(f"/jobs/{parent['id']}/children", body)
    assert first.status == 200, first
    again = await api.post(f"/jobs/{parent['id']}/children", body)
    assert [i["job"]["id"] for i in again.body["jobs"]] == [
        i["job"]["id"] for i in first.body["jobs"]
    ]
    assert [i["created"] for i in again.body["jobs"]] == [False, False, False]
    stale = await api.post(f"/jobs/{parent['id']}/children", {**body, "token": lease["token"] - 1})
    assert (stale.status, stale.body["error"]) == (409, "stale_token")


async def test_limits_duplicates_and_deadlines_over_http(inproc_api: Api) -> None:
    api = inproc_api
    put = await api.request(
        "PUT",
        "/limits/mail",
        json={"max_running_per_group": 2, "rate": {"limit": 100, "period_seconds": 1}},
    )
    assert put.status == 200, put
    assert put.body["fair"] is True and put.body["max_running"] is None
    assert put.body["rate"] == {"limit": 100, "period_seconds": 1.0, "per_group": False}
    empty = await api.request("PUT", "/limits/mail", json={})
    assert empty.status == 422
    zero = await api.request(
        "PUT", "/limits/mail", json={"rate": {"limit": 0, "period_seconds": 1}}
    )
    assert zero.status == 422
    unique = {"fields": ["user"], "period_seconds": 300}
    first = await api.post("/jobs", {"kind": "mail", "payload": {"user": 1}, "unique": unique})
    again = await api.post("/jobs", {"kind": "mail", "payload": {"user": 1}, "unique": unique})
    assert (first.status, again.status) == (201, 200)
    assert again.body["id"] == first.body["id"]
    missing = await api.post("/jobs", {"kind": "mail", "payload": {}, "unique": unique})
    assert missing.status == 422 and "user" in missing.body["message"]
    late = await api.post(
        "/jobs", {"kind": "mail", "group_key": "acme", "start_by": "2000-01-01T00:00:00Z"}
    )
    assert late.status == 201 and late.body["group_key"] == "acme"
