"""The web dashboard: static files the coordinator serves at /ui/ (no build step, no CDN).

The page is plain HTML, CSS and JavaScript modules that call the same HTTP API as every other
client, with the user's bearer token. So it adds no routes that read data, keeps no state on
the server, and can show nothing that the token could not fetch itself.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from starlette.responses import RedirectResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

STATIC_DIR = Path(__file__).parent / "static"

# The page shows other people's data (payloads, results, error messages). It never turns data
# into markup, and this policy is the second line: even a rendering bug could not run an inline
# script, load anything from another origin, or send data anywhere but this coordinator.
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # Revalidate (cheaply, by ETag) on every load, so that after an upgrade of the coordinator
    # the browser never runs the old page against the new API.
    "Cache-Control": "no-cache",
}


class DashboardFiles(StaticFiles):
    """StaticFiles with the headers above on every answer (404s are the app's JSON errors)."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(HEADERS)
        return response


def mount_dashboard(app: FastAPI) -> None:
    """Serve the dashboard at /ui/ and send / there."""
    app.mount("/ui", DashboardFiles(directory=STATIC_DIR, html=True), name="dashboard")

    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        # Relative, so it still lands on the dashboard behind a proxy that adds a path prefix.
        return RedirectResponse("ui/", status_code=307)
