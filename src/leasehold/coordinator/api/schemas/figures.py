"""Wire models of the figures (GET /stats) and of health."""

from __future__ import annotations

from pydantic import (
    BaseModel,
    Field,
)


class StatsOut(BaseModel):
    by_status: dict[str, int] = Field(description="jobs by status, every status present")
    by_kind: dict[str, dict[str, int]] = Field(description="jobs by kind, then status")
    by_queue: dict[str, dict[str, int]] = Field(description="jobs by queue, then status")
    totals: dict[str, int] = Field(description="events since the database began")
    totals_by_kind: dict[str, dict[str, int]]
    avg_wait_seconds: float | None = Field(
        description="mean time from available to leased, over the averaging window"
    )
    avg_run_seconds: float | None = Field(
        description="mean time from lease to completion, over the averaging window"
    )
    average_window_seconds: int
    lease_expirations: int
    stale_token_rejections: int
    oldest_queued_age_seconds: float | None = Field(
        description="how long the longest-waiting available job has waited, paused queues left out"
    )
    completed_last_minute: int
    failed_last_minute: int
    unserved: list[UnservedOut] = Field(
        default_factory=list,
        description="queued jobs of a kind in a queue that no live worker serves",
    )
    folded: FoldedRowsOut = Field(
        default_factory=lambda: FoldedRowsOut(),
        description="what by_kind, by_queue and totals_by_kind leave out past their 50"
        " largest names, added up apart from them (null where nothing is left out)",
    )


class FoldedOut(BaseModel):
    names: int = Field(description="how many names were added up")
    counts: dict[str, int] = Field(description="their counts summed, by status (or event)")


class FoldedRowsOut(BaseModel):
    by_kind: FoldedOut | None = None
    by_queue: FoldedOut | None = None
    totals_by_kind: FoldedOut | None = None


class UnservedOut(BaseModel):
    queue: str
    kind: str
    queued: int


class Health(BaseModel):
    status: str
    version: str = Field(description="leasehold's release (PEP 440), e.g. 0.2.0")
    build: str = Field(description="the commit it was built from, or `unknown`")
