"""The web app: ``POST /reports`` enqueues, ``GET /reports/{job_id}`` waits for the result."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, HTTPException, Request
from pydantic import BaseModel, Field

from examples.fastapi_app.tasks import Report, build_report
from leasehold import Client, JobCancelled, JobFailed, JobNotFound, ResultTimeout


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    # One client (one connection pool) per process, closed at shutdown.
    async with Client.from_env() as client:
        app.state.leasehold = client
        yield


app = FastAPI(title="reports", lifespan=lifespan)


class ReportRequest(BaseModel):
    customer: str
    months: int = Field(ge=1, le=120)


class Enqueued(BaseModel):
    job_id: int


@app.post("/reports", status_code=202)
async def request_report(body: ReportRequest, request: Request) -> Enqueued:
    handle = await build_report.enqueue(request.app.state.leasehold, body.customer, body.months)
    return Enqueued(job_id=handle.id)


@app.get("/reports/{job_id}")
async def get_report(job_id: int, request: Request, wait: float = 10.0) -> Report:
    client: Client = request.app.state.leasehold
    try:
        # A job of another kind (any producer's) is no report: not found either.
        if (await client.get(job_id)).kind != build_report.kind:
            raise JobNotFound
        return build_report.decode(await client.result(job_id, timeout=min(wait, 30.0)))
    except JobNotFound:
        raise HTTPException(404, f"no report has id {job_id}") from None
    except ResultTimeout:
        raise HTTPException(504, "the report is not ready yet; ask again") from None
    except (JobFailed, JobCancelled) as exc:
        raise HTTPException(500, exc.message) from None
