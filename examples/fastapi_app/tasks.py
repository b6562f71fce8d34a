"""The example's worker module: ``leasehold worker examples.fastapi_app.tasks:registry``."""

from __future__ import annotations

from pydantic import BaseModel

from leasehold import WorkerContext, current_context, task
from leasehold.worker import Registry

registry = Registry()


class Report(BaseModel):
    customer: str
    months: int
    total_cents: int


@registry.on_startup
async def open_prices(ctx: WorkerContext) -> None:
    """Once per worker: what a real app would open here is a database pool."""
    ctx.state["cents_per_month"] = 1250


@registry.register
@task(kind="example-build-report", max_attempts=3)
async def build_report(customer: str, months: int) -> Report:
    price = current_context().state["cents_per_month"]
    return Report(customer=customer, months=months, total_cents=months * price)
