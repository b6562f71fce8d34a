"""What every route module shares: the guards, the documented errors, replies, ids."""

from __future__ import annotations

import re
from collections.abc import Mapping

from fastapi import Depends, Request, Response
from pydantic import BaseModel

from leasehold.coordinator.api.auth import (
    ADMIN,
    FIGURES,
    HISTORY_READERS,
    JOB_READERS,
    PRODUCER,
    PUBLIC,
    READERS,
    WORKER,
)
from leasehold.coordinator.api.schemas.fields import ErrorOut
from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.service.presence import Presence
from leasehold.errors import (
    InvalidRequest,
    JobNotFound,
)

_JSON = "application/json"
_ID = re.compile(r"[0-9]{1,18}")
_WHY = {
    404: "no job has that id",
    409: "the job's state or the token forbids it",
    503: "the database is unavailable; retry",
}

# Who may call what: one guard per route (see api/auth.py; undeclared means admin only).
FOR_PUBLIC = [Depends(PUBLIC)]
FOR_PRODUCERS = [Depends(PRODUCER)]
FOR_WORKERS = [Depends(WORKER)]
FOR_JOB_READERS = [Depends(JOB_READERS)]
FOR_HISTORY_READERS = [Depends(HISTORY_READERS)]
FOR_READERS = [Depends(READERS)]
FOR_FIGURES = [Depends(FIGURES)]
FOR_ADMINS = [Depends(ADMIN)]


def error_responses(why: Mapping[int, str], *codes: int) -> dict[int | str, dict[str, object]]:
    """The domain errors a route answers with, described by ``why`` (the guard's and the
    input's are added by StrictJSONRoute), so the OpenAPI schema lists every status a route
    can send; 503 always."""
    return {code: {"model": ErrorOut, "description": why[code]} for code in (*codes, 503)}


def errors(*codes: int) -> dict[int | str, dict[str, object]]:
    """The job routes' domain errors (``error_responses``)."""
    return error_responses(_WHY, *codes)


def reply(model: BaseModel, status_code: int = 200) -> Response:
    """Serialise a response model straight to JSON bytes: the models are built from trusted
    data, so FastAPI's re-validation of every response is skipped (it is the hot path)."""
    return Response(model.__pydantic_serializer__.to_json(model), status_code, media_type=_JSON)


def service_of(request: Request) -> JobService:
    service: JobService = request.app.state.service
    return service


def presence_of(request: Request) -> Presence:
    presence: Presence = request.app.state.presence
    return presence


def parse_job_id(raw: str) -> int:
    """Ids are opaque to clients; anything that is not one of ours is simply not found."""
    if not _ID.fullmatch(raw):
        raise JobNotFound("no job has that id")  # the raw id is not echoed: it is input
    return int(raw)


def cursor_of(cursor: str | None) -> int | None:
    """A page cursor as this server issued it (an id or a token), or 422."""
    if cursor is None:
        return None
    if not _ID.fullmatch(cursor):
        raise InvalidRequest("cursor is not one this server issued")
    return int(cursor)
