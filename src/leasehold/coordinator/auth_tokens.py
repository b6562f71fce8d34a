"""Bearer tokens and the roles they carry, configured when the coordinator starts.

The coordinator keeps only the SHA-256 digest of each token, and a tokens file holds only
digests, so neither a memory dump nor a leaked file hands out a usable token. A plain
(unsalted, fast) hash is enough because tokens are random strings of at least 128 bits
(``leasehold new-token`` makes 256): there is nothing to guess from a digest, and a slow
password hash would cost every request.

Two sources, combined:

- a tokens file (``--tokens-file``): one ``role:sha256hex`` per line, ``#`` starts a comment;
- ``LEASEHOLD_TOKENS`` in the environment: ``role=token,role=token`` with the tokens in
  clear (hashed as they are read). There is no command-line flag for it on purpose: a
  command line is visible to every user of the machine.

A token listed under several roles has all of them.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Final

# Below this a token is guessable in practice; ``new-token`` makes 43 characters.
MIN_TOKEN_LENGTH: Final = 16
_TOKEN_CHARS: Final = re.compile(r"[\x21-\x7e]+")  # printable ASCII, no space
_HEX_DIGEST: Final = re.compile(r"[0-9a-fA-F]{64}")


class Role(StrEnum):
    PRODUCER = "producer"  # enqueues jobs and reads them
    WORKER = "worker"  # leases jobs and reports on them
    READER = "reader"  # reads everything, changes nothing: dashboards
    # /metrics, /stats and /health only: a scraper's token sits in a monitoring system's
    # configuration, so it must not read payloads, results or lease tokens.
    METRICS = "metrics"
    ADMIN = "admin"  # everything: requeueing too


class TokenConfigError(ValueError):
    """The token configuration is unusable. Messages name where, never the text found there
    (it may be a secret pasted in the wrong place)."""


@dataclass(frozen=True, slots=True)
class HashedToken:
    role: Role
    digest: bytes  # SHA-256 of the token's UTF-8 bytes


def hash_token(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def new_token() -> str:
    """A fresh random token (256 bits, URL-safe base64)."""
    return secrets.token_urlsafe(32)


def _role(name: str, where: str) -> Role:
    try:
        return Role(name.strip().lower())
    except ValueError:
        roles = ", ".join(r.value for r in Role)
        raise TokenConfigError(f"{where}: unknown role (expected one of: {roles})") from None


def parse_tokens_file(text: str, source: str = "tokens file") -> list[HashedToken]:
    """Lines ``role:sha256hex``; blank lines and ``#`` comments are skipped."""
    tokens: list[HashedToken] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{source}, line {number}"
        role, sep, digest = line.partition(":")
        if not sep or not _HEX_DIGEST.fullmatch(digest.strip()):
            raise TokenConfigError(f"{where}: expected role:sha256hex (64 hex digits)")
        tokens.append(HashedToken(_role(role, where), bytes.fromhex(digest.strip())))
    return tokens


def load_tokens_file(path: Path) -> list[HashedToken]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenConfigError(f"cannot read the tokens file {str(path)!r}: {exc}") from None
    tokens = parse_tokens_file(text, f"tokens file {str(path)!r}")
    if not tokens:
        # An empty file must not silently mean "no authentication".
        raise TokenConfigError(f"the tokens file {str(path)!r} lists no token")
    return tokens


def parse_tokens_env(value: str, source: str = "LEASEHOLD_TOKENS") -> list[HashedToken]:
    """``role=token,role=token``, tokens in clear; they are hashed here and not kept."""
    tokens: list[HashedToken] = []
    for number, item in enumerate(value.split(","), start=1):
        if not item.strip():
            continue
        where = f"{source}, entry {number}"
        role, sep, token = item.strip().partition("=")
        if not sep:
            raise TokenConfigError(f"{where}: expected role=token")
        if not _TOKEN_CHARS.fullmatch(token):
            raise TokenConfigError(f"{where}: a token is printable ASCII without spaces")
        if len(token) < MIN_TOKEN_LENGTH:
            raise TokenConfigError(
                f"{where}: the token is shorter than {MIN_TOKEN_LENGTH} characters"
                " (make one with `leasehold new-token`)"
            )
        tokens.append(HashedToken(_role(role, where), hash_token(token)))
    if not tokens:
        raise TokenConfigError(f"{source} is set but lists no token")
    return tokens


@dataclass(frozen=True, slots=True)
class TokenSource:
    """Where a coordinator's tokens come from: the tokens file, read again on SIGHUP (a
    rotation without a restart), and ``LEASEHOLD_TOKENS``, read once at start (a running
    process's environment does not change)."""

    file: Path | None
    from_env: tuple[HashedToken, ...] = ()

    def load(self) -> tuple[HashedToken, ...]:
        """Every token, the file read now; ``TokenConfigError`` if it is unusable."""
        from_file = load_tokens_file(self.file) if self.file is not None else []
        return (*from_file, *self.from_env)


class Authenticator:
    """Tells which roles a presented token carries. With no token configured, access is
    open: every caller has every role (the coordinator then only listens on loopback)."""

    def __init__(self, tokens: Iterable[HashedToken]) -> None:
        self._tokens = tuple(tokens)

    @property
    def open(self) -> bool:
        return not self._tokens

    def replace(self, tokens: Iterable[HashedToken]) -> None:
        """Check presented tokens against ``tokens`` from now on (requests being checked
        finish against the old ones). Open access is decided at start: it is never turned
        on or off here."""
        new = tuple(tokens)
        if not new or self.open:
            raise TokenConfigError("open access is decided at start: a reload cannot change it")
        self._tokens = new

    def roles_of(self, token: str | None) -> frozenset[Role]:
        if self.open:
            return frozenset(Role)
        if token is None:
            return frozenset()
        digest = hash_token(token)
        roles: set[Role] = set()
        # Every configured digest is compared, match or not, in constant time each: how long
        # this takes says nothing about which token (or how much of one) was right.
        for known in self._tokens:
            if hmac.compare_digest(digest, known.digest):
                roles.add(known.role)
        return frozenset(roles)

    def counts(self) -> dict[Role, int]:
        """How many tokens carry each role (for the start-up log line)."""
        return {role: sum(1 for t in self._tokens if t.role is role) for role in Role}


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the coordinator reachable from this machine only."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # any other name may resolve to a public address
