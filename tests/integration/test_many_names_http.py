"""A job of one kind too many is a clear 422 (DESIGN.md §10)."""

from __future__ import annotations

from tests.inproc import asgi_app


async def test_a_kind_past_the_cap_is_422_and_known_kinds_pass(sqlite_url: str) -> None:
    async with asgi_app(sqlite_url, max_kinds=3, max_queues=2) as api:
        for kind in ("a", "b", "c"):
            assert (await api.post("/jobs", {"kind": kind})).status == 201
        refused = await api.post("/jobs", {"kind": "d"})
        assert refused.status == 422, refused
        assert refused.body["error"] == "too_many_names"
        assert "--max-kinds" in refused.body["message"]
        assert (await api.post("/jobs", {"kind": "a"})).status == 201
        assert (await api.post("/jobs", {"kind": "a", "queue": "q1"})).status == 201
        queue = await api.post("/jobs", {"kind": "a", "queue": "q2"})
        assert queue.status == 422 and queue.body["error"] == "too_many_names"
        listed = await api.get("/jobs?fields=summary")
        assert [j["kind"] for j in listed.body["jobs"]] == ["a", "b", "c", "a", "a"]
