"""A property-based fuzz of a real coordinator process, generated from its own OpenAPI schema.

Every operation gets valid input (positive) and invalid input (negative), a bounded number
of examples each. It fails on any 5xx, any answer the schema does not describe (status,
content type, body, headers), invalid input that is accepted, an operation that does not
enforce its declared authentication, and a server that stops answering.
"""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Flaky, Unsatisfiable
from schemathesis import Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from leasehold.coordinator.auth_tokens import hash_token
from tests.process import Coordinator

# Examples per operation and mode: 19 operations x 2 modes x 25 take ~10-20 s here.
# LEASEHOLD_FUZZ_EXAMPLES=500 makes a deeper run by hand.
EXAMPLES = int(os.environ.get("LEASEHOLD_FUZZ_EXAMPLES", "25"))
ADMIN_TOKEN = "fuzz-admin-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
REQUEST_TIMEOUT = 15.0  # a request unanswered this long counts as a server that stopped

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]
# Refusing invalid input with 413 (over a cap) is a refusal too.
CONFIG = schemathesis.Config.from_dict(
    {
        "checks": {
            "negative_data_rejection": {
                "expected-statuses": [400, 401, 403, 404, 405, 409, 413, 415, 422]
            }
        }
    }
)
EXTRA_CHECKS: dict[GenerationMode, list[Any]] = {
    GenerationMode.POSITIVE: [ignored_auth],
    GenerationMode.NEGATIVE: [negative_data_rejection],
}


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Coordinator]:
    tmp = tmp_path_factory.mktemp("fuzz")
    tokens = tmp / "tokens"
    tokens.write_text(f"admin:{hash_token(ADMIN_TOKEN).hex()}\n")
    c = Coordinator(
        f"sqlite:///{tmp / 'fuzz.db'}",
        tmp,
        ["--tokens-file", str(tokens), "--reap-interval-seconds", "0.1"],
    )
    c.start()
    yield c
    c.kill()


def _no_wait(values: Any) -> None:
    """In a body or a query: a valid ``wait_seconds`` becomes 0."""
    if not isinstance(values, dict):
        return
    wait = values.get("wait_seconds")
    if isinstance(wait, str):  # a query parameter, as generated
        try:
            wait = float(wait)
        except ValueError:
            return
    if isinstance(wait, int | float) and not isinstance(wait, bool) and 0 <= wait <= 30:
        values["wait_seconds"] = 0


def without_long_polls(case: Case[Any]) -> Case[Any]:
    """A valid wait_seconds becomes 0, on a lease (body) and on reading a job (query): a
    long poll on an empty queue or an unfinished job would spend the whole time budget
    waiting, and waiting is tested elsewhere."""
    _no_wait(case.body)
    _no_wait(case.query)
    return case


def fuzz_operation(operation: Any, mode: GenerationMode, base_url: str) -> None:
    # The token is fixed, not generated: negative cases must be wrong in their data, not
    # in their credentials (the role matrix in test_auth covers those).
    strategy = operation.as_strategy(generation_mode=mode, headers=AUTH)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=bool(os.environ.get("CI")),  # CI: the same examples every run
        database=None,
        print_blob=True,
    )
    @given(case=strategy)
    def run(case: Case[Any]) -> None:
        # A new connection per request (no session): a kept-alive connection that the
        # server closes after its idle timeout, just as the next request goes out on it,
        # would fail that request for a reason that is no fault of the server.
        without_long_polls(case).call_and_validate(
            base_url=base_url,
            headers=AUTH,
            checks=CHECKS,
            additional_checks=EXTRA_CHECKS[mode],
            timeout=REQUEST_TIMEOUT,
        )

    run()


def describe(exc: BaseException, limit: int = 4000) -> str:
    """The failures inside a (nested) exception group, each cut to a readable length."""
    if isinstance(exc, BaseExceptionGroup):
        inner = "\n".join(describe(e, limit) for e in exc.exceptions)
        return f"{exc.message}\n{inner}"
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= limit else text[:limit] + " [...]"


@pytest.mark.slow(30)
def test_fuzz_the_api_from_its_schema(target: Coordinator, tmp_path: Path) -> None:
    schema = schemathesis.openapi.from_url(target.url + "/openapi.json", config=CONFIG)
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()  # type: ignore[union-attr]  # an unreadable operation fails here
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                try:
                    fuzz_operation(operation, mode, target.url)
                except Flaky as flaky:
                    # An example failed once and passed when replayed: on a machine busy
                    # with the rest of the suite, a request can meet a transient fault
                    # (a reset connection, a timeout). Once more, from the start; a fault
                    # that is really there fails this run as well.
                    print(f"{operation.label} ({mode.value}): flaky once:\n{describe(flaky)}")
                    fuzz_operation(operation, mode, target.url)
            except Unsatisfiable:
                # Nothing to get wrong: no input (/health), or only a free-form path id.
                assert mode is GenerationMode.NEGATIVE
            except (Exception, BaseExceptionGroup) as exc:
                failures.append(f"--- {operation.label} ({mode.value}) ---\n{describe(exc)}")
    with urllib.request.urlopen(target.url + "/health", timeout=REQUEST_TIMEOUT) as health:
        assert health.status == 200
    assert target.proc is not None and target.proc.poll() is None, "the coordinator died"
    assert not failures, "\n\n".join(failures)
