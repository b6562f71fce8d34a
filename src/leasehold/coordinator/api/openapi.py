"""The OpenAPI schema as clients' code generators need it.

FastAPI writes every bound as a float (a token's maximum comes out as 9.223372036854776e18,
which is not 2^63 - 1), and job ids in paths are read as text so that anything that is not
one of ours is a plain 404; the published schema says what the protocol means instead:
integer bounds stay integers, and ``job_id`` is an integer.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

_JOB_ID = {"type": "integer", "format": "int64", "minimum": 1, "title": "Job Id"}


def _integral(node: Any) -> None:
    if isinstance(node, dict):
        if node.get("type") == "integer":
            for bound in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                if isinstance(node.get(bound), float) and node[bound].is_integer():
                    node[bound] = _exact(node[bound])
        for value in node.values():
            _integral(value)
    elif isinstance(node, list):
        for value in node:
            _integral(value)


def _exact(bound: float) -> int:
    # 2^63 - 1 does not survive a float; the only bound that large is the token's maximum.
    return 2**63 - 1 if bound >= 2**63 - 1 else int(bound)


def _job_ids(schema: dict[str, Any]) -> None:
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter.get("name") == "job_id" and parameter.get("in") == "path":
                    parameter["schema"] = dict(_JOB_ID)


def install_openapi(app: FastAPI) -> None:
    """Publish the corrected schema at /openapi.json (made once, on first request)."""
    plain = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = plain()
            _integral(schema)
            _job_ids(schema)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to customise the schema
