"""Wire models of the per-kind limit routes: running jobs, running jobs per group, a rate
of starts, and turns between groups (DESIGN.md §19)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, StrictBool, StrictFloat, StrictInt, model_validator

from leasehold.coordinator.api.schemas.fields import MAX_RUNNING_LIMIT, Strict
from leasehold.coordinator.store.contract import Flow, KindLimit, RateLimit

MAX_RATE = 1_000_000_000
MAX_RATE_PERIOD_SECONDS = 31 * 86_400.0

Running = Annotated[StrictInt, Field(ge=1, le=MAX_RUNNING_LIMIT)]


class RateIn(Strict):
    limit: Annotated[StrictInt, Field(ge=1, le=MAX_RATE)] = Field(
        description="units started in any window of the period, at most (a job takes its"
        " weight, 1 by default)"
    )
    period_seconds: Annotated[
        StrictFloat, Field(gt=0, le=MAX_RATE_PERIOD_SECONDS, allow_inf_nan=False)
    ] = Field(description="the window's length")
    per_group: StrictBool = Field(
        default=False, description="each group key has this rate of its own"
    )


class LimitRequest(Strict):
    """Every limit of the kind: those left out are lifted. At least one is given."""

    max_running: Running | None = Field(
        default=None, description="at most this many jobs of the kind running at once"
    )
    max_running_per_group: Running | None = Field(
        default=None,
        description="at most this many running at once per group key (groups take turns)",
    )
    rate: RateIn | None = Field(default=None, description="at most this many starts per period")
    fair: StrictBool = Field(
        default=False,
        description="groups take turns at the kind's leases (also implied by a limit per group)",
    )

    @model_validator(mode="after")
    def _some_limit(self) -> LimitRequest:
        given = (self.max_running, self.max_running_per_group, self.rate)
        if all(value is None for value in given) and not self.fair:
            raise ValueError("give at least one of max_running, max_running_per_group, rate, fair")
        return self

    def flow(self) -> Flow:
        rate = None
        if self.rate is not None:
            rate = RateLimit(self.rate.limit, self.rate.period_seconds, self.rate.per_group)
        return Flow(self.max_running, self.max_running_per_group, rate, self.fair)


class RateOut(BaseModel):
    limit: int
    period_seconds: float
    per_group: bool


class LimitOut(BaseModel):
    kind: str
    max_running: int | None = Field(description="null: the kind's running jobs are not capped")
    running: int = Field(description="jobs of the kind running when this was read")
    max_running_per_group: int | None = None
    rate: RateOut | None = None
    fair: bool = Field(default=False, description="groups take turns at the kind's leases")

    @classmethod
    def of(cls, limit: KindLimit) -> LimitOut:
        flow = limit.flow
        rate = flow.rate
        return cls.model_construct(
            kind=limit.kind,
            max_running=limit.max_running,
            running=limit.running,
            max_running_per_group=flow.max_running_per_group,
            rate=(
                RateOut.model_construct(
                    limit=rate.limit, period_seconds=rate.period_seconds, per_group=rate.per_group
                )
                if rate is not None
                else None
            ),
            fair=flow.turns,
        )


class LimitList(BaseModel):
    limits: list[LimitOut]
