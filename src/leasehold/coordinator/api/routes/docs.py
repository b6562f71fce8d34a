"""The API's documentation pages, /docs (Swagger UI) and /redoc (ReDoc), served offline.

FastAPI's own pages load their scripts from a CDN: blank without internet, and a page where
operators paste admin tokens would run whatever that CDN serves. Here the assets come from
the fastapi-offline package (Swagger UI and ReDoc's release files, nothing else), our pages
hold no inline script, and a Content-Security-Policy like the dashboard's keeps them to this
origin. Styles are the exception: Swagger UI and ReDoc set inline styles as they render.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from leasehold.coordinator import dashboard

ASSETS_DIR = Path(str(files("fastapi_offline") / "static"))
INIT_DIR = Path(__file__).parent / "docs_static"

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",  # both UIs style elements as they render them
        "img-src 'self' data:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "worker-src 'self' blob:",  # ReDoc's search index runs in a worker
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
# The dashboard's headers, with the policy the two UIs need in place of the dashboard's.
HEADERS = {**dashboard.HEADERS, "Content-Security-Policy": CONTENT_SECURITY_POLICY}

_SWAGGER = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title} - API</title>
<link rel="icon" href="docs/assets/favicon.png">
<link rel="stylesheet" href="docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/assets/swagger-ui-bundle.js"></script>
<script src="docs/init/swagger-init.js"></script>
</body>
</html>
"""

_REDOC = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title} - API reference</title>
<link rel="icon" href="docs/assets/favicon.png">
</head>
<body>
<redoc spec-url="openapi.json"></redoc>
<script src="docs/assets/redoc.standalone.js"></script>
</body>
</html>
"""


class _DocsFiles(StaticFiles):
    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(HEADERS)
        return response


def mount_docs(app: FastAPI) -> None:
    """Serve /docs and /redoc, and their assets under /docs/ (create the app with
    ``docs_url=None, redoc_url=None``). Links are relative, as the dashboard's, so that the
    pages work behind a proxy that adds a path prefix."""
    app.mount("/docs/assets", _DocsFiles(directory=ASSETS_DIR), name="docs-assets")
    app.mount("/docs/init", _DocsFiles(directory=INIT_DIR), name="docs-init")
    swagger = _SWAGGER.format(title=app.title)
    redoc = _REDOC.format(title=app.title)

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return HTMLResponse(swagger, headers=HEADERS)

    @app.get("/redoc", include_in_schema=False)
    async def redoc_page() -> HTMLResponse:
        return HTMLResponse(redoc, headers=HEADERS)
