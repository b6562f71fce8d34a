"""Wire models of the schedule routes.

A schedule's fields are the model's ``ScheduleSpec`` (its name is the request's path): the
wire models give each its wire type and documentation, in the wire's order, and carry
them over by name; a request that leaves one out gets the spec's default. ``check``
refuses, at import, wire models that stop following the spec.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

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
    DEFAULT_CATCH_UP,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
    DEFAULT_QUEUE,
    DEFAULT_TIMEZONE,
    MAX_ATTEMPTS_LIMIT,
    SCHEDULE_NAME_PATTERN,
    CatchUp,
    Schedule,
    ScheduleSpec,
)

__all__ = ["SCHEDULE_NAME_PATTERN", "ScheduleList", "ScheduleOut", "ScheduleRequest"]


class ScheduleRequest(Strict):
    cron: Annotated[str, Field(min_length=1, max_length=200)] = Field(
        description="5 fields (minute hour day month weekday) or 6 with seconds first"
    )
    timezone: Annotated[str, Field(min_length=1, max_length=64)] = Field(
        default=DEFAULT_TIMEZONE, description="IANA time zone the cron expression is read in"
    )
    kind: Kind
    payload: UserJSON = None
    queue: QueueName = DEFAULT_QUEUE
    priority: Priority = DEFAULT_PRIORITY
    max_attempts: Annotated[StrictInt, Field(ge=1, le=MAX_ATTEMPTS_LIMIT)] = DEFAULT_MAX_ATTEMPTS
    catch_up: CatchUp = Field(
        default=DEFAULT_CATCH_UP,
        description="fire times missed while no coordinator ran: skip them, or run the"
        " latest of them once",
    )
    enabled: StrictBool = True

    def spec(self, name: str) -> ScheduleSpec:
        """The schedule ``name`` (the path's) as this request sets it."""
        return ScheduleSpec(name=name, **{f: getattr(self, f) for f in type(self).model_fields})


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
        """The stored schedule: its spec's fields, and where it stands."""
        return cls.model_construct(**_fields(schedule.spec), **_fields(schedule, but="spec"))


class ScheduleList(BaseModel):
    schedules: list[ScheduleOut]


def _fields(value: Any, *, but: str = "") -> dict[str, Any]:
    """A dataclass's fields by name, ``but`` one."""
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.name != but}


def check(request_model: type[BaseModel], out_model: type[BaseModel]) -> None:
    """Refuse wire models of a schedule that do not follow ``ScheduleSpec``: the request
    has its fields but the name, with its defaults; the answer has a stored schedule's."""
    spec = {f.name: f.default for f in dataclasses.fields(ScheduleSpec)}
    request = request_model.model_fields
    if request.keys() != spec.keys() - {"name"}:
        raise TypeError(
            f"{request_model.__name__}'s fields {sorted(request)} are not ScheduleSpec's"
        )
    for name, field in request.items():
        required = spec[name] is dataclasses.MISSING
        if field.is_required() != required or not (required or field.default == spec[name]):
            raise TypeError(f"{request_model.__name__}'s default for {name} is not ScheduleSpec's")
    stored = spec.keys() | ({f.name for f in dataclasses.fields(Schedule)} - {"spec"})
    if out_model.model_fields.keys() != stored:
        raise TypeError(f"{out_model.__name__}'s fields are not a stored Schedule's")


check(ScheduleRequest, ScheduleOut)
