"""Wire models of the per-kind concurrency limit routes."""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    BaseModel,
    Field,
    StrictInt,
)

from leasehold.coordinator.api.schemas.fields import (
    MAX_RUNNING_LIMIT,
    Strict,
)
from leasehold.coordinator.store.contract import KindLimit


class LimitRequest(Strict):
    max_running: Annotated[StrictInt, Field(ge=1, le=MAX_RUNNING_LIMIT)] = Field(
        description="at most this many jobs of the kind running at once"
    )


class LimitOut(BaseModel):
    kind: str
    max_running: int
    running: int = Field(description="jobs of the kind running when this was read")

    @classmethod
    def of(cls, limit: KindLimit) -> LimitOut:
        return cls.model_construct(
            kind=limit.kind, max_running=limit.max_running, running=limit.running
        )


class LimitList(BaseModel):
    limits: list[LimitOut]
