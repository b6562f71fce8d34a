"""Plain HTTP calls for the parts of the chaos run that speak the protocol themselves (a
handler spawning children, the continuation worker, the graph producer): the standard
library only, so that a handler thread needs no event loop."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any


class Refused(Exception):
    """A 4xx: the coordinator said no (a stale token, a lease that ran out)."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"{status}: {body}")
        self.status, self.body = status, body


def call(url: str, method: str, path: str, body: Any = None, timeout: float = 10.0) -> Any:
    """One request; the parsed answer (None for a 204). A 4xx raises ``Refused``; a
    connection error or a 5xx raises ``OSError`` (the caller may try again)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url + path, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            raw = answer.read()
            return json.loads(raw) if raw else None
    except urllib.error.HTTPError as error:
        raw = error.read()
        parsed = json.loads(raw) if raw else None
        if 400 <= error.code < 500:
            raise Refused(error.code, parsed) from None
        raise OSError(f"{error.code}: {parsed}") from None


def call_until(url: str, method: str, path: str, body: Any, within: float) -> Any:
    """``call`` again on connection errors (the coordinator restarting, the proxy cutting)
    until it answers or ``within`` seconds have passed; a request sent again must be safe
    to repeat (a key, a token)."""
    deadline = time.monotonic() + within
    while True:
        try:
            return call(url, method, path, body)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
