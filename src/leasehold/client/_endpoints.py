"""The coordinators a client knows, and which one it asks.

A client takes one coordinator URL or several (``"http://a:8080,http://b:8080"``, or a
list): coordinators on one PostgreSQL database serve the same jobs, so any of them may
answer any call. The client keeps asking the one that answered last; when it gets no
answer from it (no connection, a timeout, a 502, 503 or 504), that one rests for a
while and the call moves on to the next, in the order given (DESIGN.md §14,
"Several coordinators"). Which calls are safe to send again, and so to move, is the
protocol's business (PROTOCOL.md §8): every call this client makes is.

The choice is advice, not a lock: two threads of a ``SyncClient`` that race on it at
worst ask different coordinators, which is as right as asking one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from typing import Final
from urllib.parse import SplitResult, urlsplit

# A coordinator that gave no answer is not asked first again for this long, doubled with
# each failure in a row up to the cap: long enough that calls do not keep paying for a dead
# one's timeouts, short enough that a restarted one is back in the rotation within a minute.
REST_SECONDS: Final = 1.0
MAX_REST_SECONDS: Final = 30.0
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


class Endpoint:
    """One coordinator: where it is, and how it has answered lately."""

    __slots__ = (
        "base_path",
        "failures",
        "host",
        "host_header",
        "port",
        "resting_until",
        "tls",
        "url",
    )

    def __init__(self, url: str) -> None:
        parts = _split(url)
        self.url = url
        self.tls = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or _DEFAULT_PORTS[parts.scheme]
        self.host_header = parts.netloc  # as written: "[::1]:8080", "example.com"
        self.base_path = parts.path
        self.failures = 0
        self.resting_until = 0.0

    def __repr__(self) -> str:
        return f"Endpoint({self.url!r})"


def parse_urls(urls: str | Sequence[str]) -> tuple[str, ...]:
    """The coordinator URLs of ``urls`` (a comma-separated string, or a list), each
    checked and without a trailing slash; ``ValueError`` naming the fix for a malformed
    one, an empty list or a URL given twice."""
    items = urls.split(",") if isinstance(urls, str) else list(urls)
    parsed: list[str] = []
    for item in items:
        url = item.strip().rstrip("/")
        if not url:
            raise ValueError(
                f"an empty coordinator URL in {_shown(urls)!r}: separate URLs with one comma"
            )
        _split(url)
        if url in parsed:
            raise ValueError(f"the coordinator URL {url} is given twice")
        parsed.append(url)
    return tuple(parsed)


def _shown(urls: str | Sequence[str]) -> str:
    return urls if isinstance(urls, str) else ",".join(urls)


def _split(url: str) -> SplitResult:
    """``url`` taken apart, or ``ValueError`` saying what to write instead."""
    if "://" not in url:
        raise ValueError(
            f"the coordinator URL {url!r} has no scheme: write http://{url} (or https://)"
        )
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError for a port that is not a number in range
    except ValueError as exc:
        raise ValueError(f"the coordinator URL {url!r} is malformed: {exc}") from exc
    if parts.scheme not in _DEFAULT_PORTS:
        raise ValueError(
            f"the coordinator URL {url!r} is not http:// or https:// (it is {parts.scheme}://)"
        )
    if not parts.hostname:
        raise ValueError(f"the coordinator URL {url!r} names no host: write http://HOST:PORT")
    if parts.username is not None or parts.password is not None:
        raise ValueError(
            f"the coordinator URL {url!r} carries credentials: give the token with"
            " LEASEHOLD_TOKEN or --token-file instead"
        )
    if parts.query or parts.fragment:
        raise ValueError(f"the coordinator URL {url!r} has a query or fragment: leave it out")
    if port == 0:
        raise ValueError(f"the coordinator URL {url!r} has port 0")
    return parts


class Endpoints:
    """The coordinators in the order given, the one in use, and which ones rest."""

    def __init__(self, urls: Sequence[str], clock: Callable[[], float] = time.monotonic) -> None:
        self.all: Final = tuple(Endpoint(url) for url in parse_urls(urls))
        self.current = self.all[0]
        self._clock = clock

    @property
    def urls(self) -> tuple[str, ...]:
        return tuple(e.url for e in self.all)

    def resting(self, endpoint: Endpoint) -> bool:
        return endpoint.resting_until > self._clock()

    def pick(self, tried: Collection[Endpoint] = ()) -> Endpoint:
        """The coordinator to ask next: the one in use unless it was tried (in this round
        of a call) or rests; else the first untried one that does not rest, in the order
        given; else the one whose rest ends first."""
        current = self.current
        if current not in tried and not self.resting(current):
            return current
        fresh = self.fresh(tried)
        if fresh is not None:
            return fresh
        untried = [e for e in self.all if e not in tried] or list(self.all)
        return min(untried, key=lambda e: e.resting_until)

    def fresh(self, tried: Collection[Endpoint]) -> Endpoint | None:
        """A coordinator not yet tried in this round that does not rest, if any: where a
        call that got no answer goes next, at once."""
        return next((e for e in self.all if e not in tried and not self.resting(e)), None)

    def answered(self, endpoint: Endpoint) -> None:
        """It answered: it is the one to ask from now on."""
        endpoint.failures = 0
        endpoint.resting_until = 0.0
        self.current = endpoint

    def failed(self, endpoint: Endpoint) -> None:
        """It gave no answer: it rests, longer with each failure in a row."""
        endpoint.failures += 1
        rest = min(MAX_REST_SECONDS, REST_SECONDS * 2.0 ** min(endpoint.failures - 1, 16))
        endpoint.resting_until = self._clock() + rest
