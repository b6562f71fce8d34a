"""The coordinator application: create_app wires settings, store, service and reaper."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import random
from collections.abc import AsyncIterator
from typing import Any, Final

import structlog
from fastapi import FastAPI

from leasehold._version import __version__
from leasehold.coordinator.api.dispatch import ProtocolRoutes
from leasehold.coordinator.api.errors import install_error_handlers
from leasehold.coordinator.api.middleware.bodysize import route_caps
from leasehold.coordinator.api.middleware.forwarded import ProxySettings
from leasehold.coordinator.api.middleware.pipeline import RequestPipeline
from leasehold.coordinator.api.openapi import install_openapi
from leasehold.coordinator.api.routes.docs import mount_docs
from leasehold.coordinator.api.routes.figures import router as figures_router
from leasehold.coordinator.api.routes.health import router as health_router
from leasehold.coordinator.api.routes.jobs import router as jobs_router
from leasehold.coordinator.api.routes.leases import router as leases_router
from leasehold.coordinator.api.routes.limits import router as kind_limits_router
from leasehold.coordinator.api.routes.operations import router as operations_router
from leasehold.coordinator.api.routes.protocol import router as protocol_router
from leasehold.coordinator.api.routes.schedules import router as schedules_router
from leasehold.coordinator.auth_tokens import Authenticator
from leasehold.coordinator.clock import Clock
from leasehold.coordinator.dashboard import mount_dashboard
from leasehold.coordinator.maintenance.reaper import Reaper
from leasehold.coordinator.maintenance.retention import Pruner, Retention
from leasehold.coordinator.maintenance.scheduler import Scheduler
from leasehold.coordinator.maintenance.schema_watch import SchemaWatch
from leasehold.coordinator.rules.backoff import BackoffPolicy
from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.service.operations import Operations
from leasehold.coordinator.service.presence import Presence
from leasehold.coordinator.service.schedules import Schedules
from leasehold.coordinator.settings import CoordinatorSettings
from leasehold.coordinator.store.contract import Store
from leasehold.coordinator.store.open import open_store
from leasehold.tracing import server_telemetry

log = structlog.get_logger("leasehold")

# Every route of the protocol, in the order they are matched.
PROTOCOL_ROUTERS: Final = (
    jobs_router,
    leases_router,
    figures_router,
    health_router,
    schedules_router,
    kind_limits_router,
    protocol_router,
    operations_router,
)


def create_app(
    settings: CoordinatorSettings,
    *,
    store: Store | None = None,
    clock: Clock | None = None,
    rng: random.Random | None = None,
) -> FastAPI:
    """A coordinator app. The store is opened and the reaper started by its lifespan."""
    store = store or open_store(
        settings.database_url, clock=clock, synchronous=settings.sqlite_synchronous
    )
    service = JobService(
        store,
        backoff=BackoffPolicy(settings.retry_base_seconds, settings.retry_max_seconds),
        rng=rng,
        max_payload_bytes=settings.max_payload_bytes,
        max_waiting_polls=settings.max_waiting_polls,
        max_answer_bytes=settings.max_answer_bytes,
        max_kinds=settings.max_kinds,
        max_queues=settings.max_queues,
        max_groups=settings.max_groups,
        max_workers=settings.max_workers,
        max_waiting_results=settings.max_waiting_results,
    )
    authenticator = Authenticator(settings.tokens)
    proxy = ProxySettings.from_text(settings.public_origin, settings.trusted_proxies)
    reaper = Reaper(service, settings.reap_interval_seconds)
    operations = Operations(service)
    retention = Retention(
        settings.retain_completed_seconds,
        settings.retain_cancelled_seconds,
        settings.retain_dead_seconds,
    )
    pruner = Pruner(store, retention, settings.prune_interval_seconds, settings.max_workers)
    scheduler = Scheduler(
        service, settings.schedule_interval_seconds, settings.schedule_grace_seconds
    )
    schema_watch = SchemaWatch(store)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await store.open()
        await operations.load()
        if authenticator.open:
            log.warning("auth.open", detail="no token configured: every caller is admin")
        else:
            log.info("auth.tokens", **{role.value: n for role, n in authenticator.counts().items()})
        tasks = [
            asyncio.create_task(reaper.run(), name="leasehold-reaper"),
            asyncio.create_task(scheduler.run(), name="leasehold-scheduler"),
            asyncio.create_task(pruner.run(), name="leasehold-pruner"),
            asyncio.create_task(schema_watch.run(), name="leasehold-schema-watch"),
        ]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await service.close()
            await store.close()

    protocol_routes = [route for router in PROTOCOL_ROUTERS for route in router.routes]
    app = FastAPI(
        # The protocol's routes themselves, not an inclusion of each module's router: recent
        # FastAPI releases match an included router's routes once to choose the router and
        # again inside it, on every request (17 of GET /health's 58 us in the process); and
        # each route's handler (api/handler.py) is made from the route's own declaration,
        # to which an inclusion could add dependencies or a prefix.
        routes=list(protocol_routes),
        title="leasehold",
        summary="A distributed job queue with fenced leases",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,  # served offline by mount_docs
        redoc_url=None,
        **_telemetry_option(),
    )
    install_error_handlers(app)
    caps = route_caps(settings.max_body_bytes, settings.max_payload_bytes)
    # Our one layer (api/middleware/pipeline.py): it answers the protocol's routes itself,
    # through each route's handler (api/dispatch.py, api/handler.py).
    protocol = ProtocolRoutes(protocol_routes, app.exception_handlers)
    app.add_middleware(
        RequestPipeline,
        max_bytes=settings.max_body_bytes,
        routes=caps,
        protocol=protocol,
        proxy=proxy,
        metrics=service.metrics,
    )
    app.state.settings = settings
    app.state.service = service
    app.state.authenticator = authenticator
    app.state.proxy = proxy
    app.state.reaper = reaper
    app.state.scheduler = scheduler
    app.state.schedules = Schedules(service)
    app.state.operations = operations
    app.state.pruner = pruner
    app.state.schema_watch = schema_watch
    app.state.presence = Presence(store, settings.max_workers)
    mount_dashboard(app)
    mount_docs(app)
    install_openapi(app)
    return app


def _telemetry_option() -> dict[str, Any]:
    """FastAPI's ``telemetry`` argument (tracing.server_telemetry), on the FastAPI releases
    that have it (0.165 and later); earlier ones make no per-request telemetry check."""
    if "telemetry" not in inspect.signature(FastAPI).parameters:
        return {}
    return {"telemetry": server_telemetry()}
