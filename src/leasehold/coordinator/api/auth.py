"""Who may call what. Every route declares one guard, a FastAPI dependency; this module is
the only place that decides.

- ``PUBLIC``: anyone, no token needed (``/health``).
- ``PRODUCER``, ``WORKER``, ``JOB_READERS``, ``HISTORY_READERS``, ``READERS``, ``FIGURES``,
  ``ADMIN``: a
  bearer token carrying one of the guard's roles; an admin token passes every guard.

A route that declares no guard gets ``ADMIN`` (``StrictJSONRoute`` sees to it): forgetting
to declare one closes a route, never opens it.

A guard runs once per request: the route handler (``api.handler``) calls ``check`` before
the body is read, so nobody's bytes are parsed (nor a 415/422 answered) before we know who
sent them. It is declared as a dependency as well: that gives the OpenAPI schema its
security scheme, and keeps a route protected under a route class that solves dependencies
(FastAPI's own). The roles a token carries are kept in the request's scope, so a second
call would not check the token again.

No token is written to a log, and a refusal names the route's template, never the raw path.
"""

from __future__ import annotations

from typing import Annotated, Final

import structlog
from fastapi import Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from leasehold.coordinator.api.request_headers import headers_of
from leasehold.coordinator.auth_tokens import Authenticator, Role
from leasehold.errors import Forbidden, Unauthorized

log = structlog.get_logger("leasehold")

_ROLES_KEY: Final = "leasehold.roles"
# Declared so the OpenAPI schema shows the scheme; the header is read by authenticate().
_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="bearer",
    description="A token configured with --tokens-file or LEASEHOLD_TOKENS.",
)


def _presented_token(request: Request) -> str | None:
    header = headers_of(request).get("authorization")
    if header is None:
        return None
    scheme, _, value = header.partition(" ")
    token = value.strip()
    return token if scheme.lower() == "bearer" and token else None


def authenticate(request: Request) -> frozenset[Role]:
    """The roles the request's bearer token carries (none: no token, or a wrong one)."""
    cached: frozenset[Role] | None = request.scope.get(_ROLES_KEY)
    if cached is not None:
        return cached
    authenticator: Authenticator | None = getattr(request.app.state, "authenticator", None)
    # An app without an authenticator is a wiring mistake: it lets no one in.
    roles = authenticator.roles_of(_presented_token(request)) if authenticator else frozenset()
    request.scope[_ROLES_KEY] = roles
    return roles


def _route_name(request: Request) -> str:
    route = request.scope.get("route")
    return f"{request.method} {getattr(route, 'path', '?')}"


class Allow:
    """A guard: the request needs a token carrying one of ``roles`` (or admin)."""

    def __init__(self, *roles: Role) -> None:
        self.roles = frozenset({*roles, Role.ADMIN})

    def check(self, request: Request) -> frozenset[Role]:
        roles = authenticate(request)
        if not roles:
            if _presented_token(request) is not None:
                # A wrong token is worth a warning (a leaked or guessed one, a stale config);
                # no token at all is routine (a dashboard before its user typed one in).
                log.warning("auth.unauthorized", route=_route_name(request), reason="wrong_token")
                raise Unauthorized("the bearer token is not valid")
            log.info("auth.unauthorized", route=_route_name(request), reason="no_token")
            raise Unauthorized()
        if not roles & self.roles:
            log.warning("auth.forbidden", route=_route_name(request), roles=sorted(roles))
            allowed = " or ".join(sorted(self.roles))
            raise Forbidden(f"{_route_name(request)} needs the {allowed} role")
        return roles

    async def __call__(
        self,
        request: Request,
        _credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
    ) -> frozenset[Role]:
        return self.check(request)


class Public:
    """A guard that lets everyone through (and declares no security in the schema)."""

    def check(self, request: Request) -> frozenset[Role]:
        return frozenset()

    async def __call__(self) -> None:
        return None


Guard = Allow | Public

PUBLIC: Final = Public()
PRODUCER: Final = Allow(Role.PRODUCER)
WORKER: Final = Allow(Role.WORKER)
# One job: its producer waits for the result, its worker may look it up, readers read.
JOB_READERS: Final = Allow(Role.PRODUCER, Role.WORKER, Role.READER)
# A job's attempt history: for whoever wants to know what became of it, not for workers.
HISTORY_READERS: Final = Allow(Role.PRODUCER, Role.READER)
# Everyone's jobs, and the figures: operators' views.
READERS: Final = Allow(Role.READER)
# The figures alone (/stats, /metrics): readers, and the scrapers' metrics-only role.
FIGURES: Final = Allow(Role.READER, Role.METRICS)
ADMIN: Final = Allow()
