"""The OpenAPI schema lists every answer each operation can give (the fuzz test then checks
the real answers against it)."""

from __future__ import annotations

from typing import Any

import pytest

from leasehold.coordinator.app import create_app
from leasehold.coordinator.settings import CoordinatorSettings

ERROR = {"$ref": "#/components/schemas/ErrorOut"}


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    openapi: dict[str, Any] = create_app(
        CoordinatorSettings(database_url="sqlite:///:memory:")
    ).openapi()
    return openapi


def operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, op)
        for path, ops in schema["paths"].items()
        for method, op in ops.items()
    ]


def error_model(op: dict[str, Any], status: str) -> Any:
    return op["responses"][status]["content"]["application/json"]["schema"]


def test_every_error_answer_is_documented_with_our_error_body(schema: dict[str, Any]) -> None:
    for method, path, op in operations(schema):
        responses = op["responses"]
        for status in responses:
            if status.startswith(("4", "5")):
                assert error_model(op, status) == ERROR, (method, path, status)
        if path in ("/health", "/protocol"):  # open: they hold no data
            assert "security" not in op and set(responses) == {"200"}
            continue
        if path == "/health/ready":
            assert "security" not in op and set(responses) == {"200", "503"}
            continue
        assert op["security"] == [{"bearer": []}], (method, path)
        assert {"401", "403", "503"} <= set(responses), (method, path)
        assert "WWW-Authenticate" in responses["401"]["headers"]
        if "requestBody" in op:
            assert {"413", "415", "422"} <= set(responses), (method, path)
        if "{job_id}" in path:
            assert "404" in responses, (method, path)
        if path.startswith("/jobs/{job_id}/") and method == "POST":
            assert "409" in responses, (method, path)


def test_the_answers_that_are_not_errors(schema: dict[str, Any]) -> None:
    paths = schema["paths"]
    assert {"200", "201"} <= set(paths["/jobs"]["post"]["responses"])  # existing key / new
    lease = paths["/lease"]["post"]["responses"]
    assert "content" not in lease["204"]  # no job: no body at all
    assert "text/plain" in next(iter(paths["/metrics"]["get"]["responses"]["200"]["content"]))
    # FastAPI's own validation error body is not ours, and must not be offered instead.
    assert "HTTPValidationError" not in schema["components"]["schemas"]


def test_ids_and_tokens_are_integers_with_integer_bounds(schema: dict[str, Any]) -> None:
    """Code generators get ``job_id`` as an integer and 2^63 - 1 exactly, not as a float."""
    for _method, path, op in operations(schema):
        for parameter in op.get("parameters", []):
            if parameter["name"] == "job_id":
                assert parameter["schema"]["type"] == "integer", path
    token = schema["components"]["schemas"]["RenewRequest"]["properties"]["token"]
    assert token["maximum"] == 2**63 - 1 and isinstance(token["maximum"], int)
    assert isinstance(token["minimum"], int)


def test_leases_has_one_answer_shape(schema: dict[str, Any]) -> None:
    """POST /leases answers one shape (code generators); POST /lease keeps its two."""
    leases = schema["paths"]["/leases"]["post"]["responses"]["200"]
    assert leases["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/LeaseBatchOut"
    }
    lease = schema["components"]["schemas"]["LeaseOut"]
    assert "lease_seconds" in lease["required"]
