"""GET /jobs pages within the answer budget, and `fields=summary` (DESIGN.md §9, §10)."""

from __future__ import annotations

import orjson

from tests.inproc import asgi_app

BIG = "x" * 100_000


async def test_a_page_over_the_budget_ends_early_with_a_cursor(sqlite_url: str) -> None:
    async with asgi_app(sqlite_url, max_answer_bytes=250_000) as api:
        made = await api.post("/jobs/batch", {"jobs": [{"kind": "b", "payload": BIG}] * 5})
        assert made.status == 200, made
        seen: list[int] = []
        cursor = ""
        for _ in range(5):
            page = await api.get(f"/jobs?limit=100{cursor}")
            assert page.status == 200
            assert len(orjson.dumps(page.body)) < 250_000 + 100_000  # one job past, at most
            seen += [j["id"] for j in page.body["jobs"]]
            if page.body["next_cursor"] is None:
                break
            cursor = f"&cursor={page.body['next_cursor']}"
        assert seen == [1, 2, 3, 4, 5]


async def test_fields_summary_leaves_payload_and_result_out(sqlite_url: str) -> None:
    async with asgi_app(sqlite_url, max_answer_bytes=250_000) as api:
        await api.post("/jobs/batch", {"jobs": [{"kind": "b", "payload": BIG}] * 5})
        page = await api.get("/jobs?fields=summary")
        assert page.status == 200
        assert len(page.body["jobs"]) == 5 and page.body["next_cursor"] is None
        assert all("payload" not in j and "result" not in j for j in page.body["jobs"])
        assert page.body["jobs"][0]["kind"] == "b"
        full = await api.get("/jobs?limit=1&fields=full")
        assert full.body["jobs"][0]["payload"] == BIG
        bad = await api.get("/jobs?fields=payload")
        assert bad.status == 422, bad
