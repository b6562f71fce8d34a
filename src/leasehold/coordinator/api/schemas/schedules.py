"""Wire models of the schedule routes."""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    BaseModel,
    Field,
    JsonValue,
    StrictBool,
    StrictInt,
)

from leasehold.coordinator.api.schemas.fields import (
    Kind,
    Priority,
    QueueName,
    Strict,
    UserJSON,
    UtcTime,
)
from leasehold.model import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
    DEFAULT_QUEUE,
    MAX_ATTEMPTS_LIMIT,
    CatchUp,
    Schedule,
    ScheduleSpec,
)

SCHEDULE_NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"


class ScheduleRequest(Strict):
    cron: Annotated[str, Field(min_length=1, max_length=200)] = Field(
        description="5 fields (minute hour day month weekday) or 6 with seconds first"
    )
    timezone: Annotated[str, Field(min_length=1, max_length=64)] = Field(
        default="UTC", description="IANA time zone the cron expression is read in"
    )
    kind: Kind
    payload: UserJSON = None
    queue: QueueName = DEFAULT_QUEUE
    priority: Priority = DEFAULT_PRIORITY
    max_attempts: Annotated[StrictInt, Field(ge=1, le=MAX_ATTEMPTS_LIMIT)] = DEFAULT_MAX_ATTEMPTS
    catch_up: CatchUp = Field(
        default=CatchUp.SKIP,
        description="fire times missed while no coordinator ran: skip them, or run the"
        " latest of them once",
    )
    enabled: StrictBool = True

    def spec(self, name: str) -> ScheduleSpec:
        return ScheduleSpec(
            name=name,
            cron=self.cron,
            kind=self.kind,
            timezone=self.timezone,
            payload=self.payload,
            queue=self.queue,
            priority=self.priority,
            max_attempts=self.max_attempts,
            catch_up=self.catch_up,
            enabled=self.enabled,
        )


class ScheduleOut(BaseModel):
    name: str
    cron: str
    timezone: str
    kind: str
    payload: JsonValue
    queue: str
    priority: int
    max_attempts: int
    catch_up: CatchUp
    enabled: bool
    next_fire_at: UtcTime = Field(description="the next fire time not yet handled")
    last_fire_at: UtcTime | None = Field(description="the latest fire time that got a job")
    created_at: UtcTime
    updated_at: UtcTime

    @classmethod
    def of(cls, schedule: Schedule) -> ScheduleOut:
        spec = schedule.spec
        return cls.model_construct(
            name=spec.name,
            cron=spec.cron,
            timezone=spec.timezone,
            kind=spec.kind,
            payload=spec.payload,
            queue=spec.queue,
            priority=spec.priority,
            max_attempts=spec.max_attempts,
            catch_up=spec.catch_up,
            enabled=spec.enabled,
            next_fire_at=schedule.next_fire_at,
            last_fire_at=schedule.last_fire_at,
            created_at=schedule.created_at,
            updated_at=schedule.updated_at,
        )


class ScheduleList(BaseModel):
    schedules: list[ScheduleOut]
