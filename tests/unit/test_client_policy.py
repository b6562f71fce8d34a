"""The clients' one retry and failover policy, driven by hand: no network, no clock.

``exchange`` yields the steps of a call (send to a coordinator, sleep); a test plays the
network, answering each send as a script says, and sees where the call went and how long
it waited.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from leasehold.client import RetryPolicy
from leasehold.client._endpoints import Endpoints, parse_urls
from leasehold.client._exchange import NoAnswer, Reply, Request, Send, Shared, Sleep, exchange
from leasehold.errors import JobNotFound, LeaseholdError, Unavailable

A, B, C = "http://a:8080", "http://b:8080", "http://c:8080"
QUICK = RetryPolicy(attempts=3, base_seconds=1.0, max_seconds=4.0)
OK = Reply(200, "application/json", b'{"ok": true}')


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def play(
    shared: Shared,
    answer: Callable[[str], Reply | Exception],
    retry: RetryPolicy = QUICK,
    clock: Clock | None = None,
) -> tuple[Any, list[str]]:
    """Run one exchange: its result (or error) and the trace of its steps ("a", "sleep")."""
    flow = exchange(Request.of("GET", "/stats", None, None, None, 5.0), retry, shared)
    trace: list[str] = []
    outcome: Any = None
    try:
        step = flow.send(None)
        while True:
            if isinstance(step, Sleep):
                trace.append("sleep")
                if clock is not None:
                    clock.now += step.seconds
                step = flow.send(None)
                continue
            assert isinstance(step, Send)
            trace.append(step.endpoint.url.removeprefix("http://").removesuffix(":8080"))
            given = answer(step.endpoint.url)
            step = flow.throw(given) if isinstance(given, Exception) else flow.send(given)
    except StopIteration as done:
        outcome = done.value
    except LeaseholdError as exc:
        outcome = exc
    return outcome, trace


def shared_of(*urls: str, clock: Clock | None = None) -> Shared:
    return Shared(Endpoints(urls, clock or Clock()), random.Random(7))


def down(*dead: str) -> Callable[[str], Reply | Exception]:
    return lambda url: NoAnswer("refused") if url in dead else OK


def test_an_answer_comes_from_the_first_coordinator() -> None:
    assert play(shared_of(A, B), down()) == ({"ok": True}, ["a"])


def test_no_answer_moves_the_call_to_the_next_coordinator_at_once() -> None:
    """No wait and no round spent: the other coordinator is asked straight away, and
    stays the one asked afterwards."""
    shared = shared_of(A, B)
    assert play(shared, down(A)) == ({"ok": True}, ["a", "b"])
    assert play(shared, down()) == ({"ok": True}, ["b"])
    assert shared.endpoints.current.url == B


@pytest.mark.parametrize("status", [502, 503, 504])
def test_a_gateway_or_unavailable_answer_moves_on(status: int) -> None:
    reply = Reply(status, "text/html", b"<html>bad gateway</html>")
    answer = lambda url: reply if url == A else OK  # noqa: E731
    assert play(shared_of(A, B), answer) == ({"ok": True}, ["a", "b"])


def test_a_500_is_tried_again_where_it_was_after_a_wait() -> None:
    """An answering coordinator with a bug: no move, the backoff, and the same one."""
    replies = [Reply(500, "application/json", b'{"error": "internal"}'), OK]
    outcome, trace = play(shared_of(A, B), lambda url: replies.pop(0))
    assert (outcome, trace) == ({"ok": True}, ["a", "sleep", "a"])


def test_a_408_is_sent_again_where_it_was() -> None:
    """The request did not arrive whole in time (or met the close of an idle connection):
    nothing was applied, so it is sent again, like a 500."""
    replies = [Reply(408, "application/json", b'{"error": "request_timeout"}'), OK]
    outcome, trace = play(shared_of(A, B), lambda url: replies.pop(0))
    assert (outcome, trace) == ({"ok": True}, ["a", "sleep", "a"])


def test_an_answer_is_final_wherever_it_came_from() -> None:
    """A 404 from the second coordinator is the answer: not tried on a third."""
    missing = Reply(404, "application/json", b'{"error": "job_not_found", "message": "no"}')
    answer = lambda url: NoAnswer("refused") if url == A else missing  # noqa: E731
    outcome, trace = play(shared_of(A, B, C), answer)
    assert isinstance(outcome, JobNotFound)
    assert trace == ["a", "b"]


def test_a_round_tries_every_coordinator_then_waits() -> None:
    """All down: the first round tries each; later rounds, after their wait, try the one
    whose rest ends first (both rest now), as many rounds as the policy has attempts;
    then the last error."""
    clock = Clock()
    outcome, trace = play(shared_of(A, B, clock=clock), down(A, B), clock=clock)
    assert isinstance(outcome, Unavailable)
    assert trace == ["a", "b", "sleep", "a", "sleep", "b"]


def test_one_coordinator_retries_as_before() -> None:
    outcome, trace = play(shared_of(A), down(A), RetryPolicy(attempts=2, base_seconds=0.1))
    assert isinstance(outcome, Unavailable)
    assert trace == ["a", "sleep", "a"]


def test_a_call_that_may_not_retry_still_tries_each_coordinator_once() -> None:
    """``NO_RETRY`` (the worker's lease poll): one round, so a dead coordinator costs no
    wait when another answers."""
    assert play(shared_of(A, B), down(A), RetryPolicy(attempts=1)) == ({"ok": True}, ["a", "b"])


def test_a_coordinator_that_failed_rests_and_is_asked_last() -> None:
    """Once B answers, A is not asked first again while it rests, even by a new call that
    finds B gone too: B then A, and C first of all since it never failed."""
    clock = Clock()
    shared = shared_of(A, B, C, clock=clock)
    play(shared, down(A), clock=clock)  # A rests, B answers
    assert play(shared, down(B), clock=clock) == ({"ok": True}, ["b", "c"])
    assert shared.endpoints.current.url == C


def test_a_rest_ends_and_grows_with_failures_in_a_row() -> None:
    clock = Clock()
    endpoints = Endpoints([A, B], clock)
    a = endpoints.all[0]
    endpoints.failed(a)
    assert endpoints.resting(a)
    clock.now += 1.01
    assert not endpoints.resting(a)
    endpoints.failed(a)
    clock.now += 1.01
    assert endpoints.resting(a)  # two seconds now
    endpoints.answered(a)
    assert not endpoints.resting(a) and a.failures == 0


@pytest.mark.parametrize(
    ("given", "parsed"),
    [
        ("http://a:8080", ("http://a:8080",)),
        (" http://a:8080/ , https://b ", ("http://a:8080", "https://b")),
        (
            ["http://[::1]:8080", "http://lb/leasehold/"],
            ("http://[::1]:8080", "http://lb/leasehold"),
        ),
    ],
)
def test_url_lists_parse(given: Any, parsed: tuple[str, ...]) -> None:
    assert parse_urls(given) == parsed


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("127.0.0.1:8080", "write http://127.0.0.1:8080"),
        ("localhost", "write http://localhost"),
        ("http://a:8080,,http://b:8080", "empty coordinator URL"),
        ("http://a:8080,", "empty coordinator URL"),
        ("", "empty coordinator URL"),
        ("ftp://a", "not http:// or https://"),
        ("http://a:99999", "malformed"),
        ("http://a:port", "malformed"),
        ("http://:8080", "names no host"),
        ("http://user:secret@a:8080", "carries credentials"),
        ("http://a:8080?x=1", "query or fragment"),
        ("http://a:8080,http://a:8080/", "given twice"),
    ],
)
def test_a_malformed_url_list_names_the_fix(given: str, says: str) -> None:
    with pytest.raises(ValueError, match=says.replace("?", r"\?")):
        parse_urls(given)
