"""Token configuration, the constant-time check, and who may serve without tokens."""

from __future__ import annotations

import hmac
from pathlib import Path

import pytest
from structlog.testing import capture_logs
from typer.testing import CliRunner

from leasehold import cli
from leasehold.coordinator import startup
from leasehold.coordinator.app import create_app
from leasehold.coordinator.auth_tokens import (
    Authenticator,
    HashedToken,
    Role,
    TokenConfigError,
    hash_token,
    is_loopback,
    load_tokens_file,
    parse_tokens_env,
    parse_tokens_file,
)
from leasehold.coordinator.server import run as server
from leasehold.coordinator.settings import CoordinatorSettings

SECRET = "sk_live_0123456789abcdefghij"


def test_tokens_file_lines_comments_and_case() -> None:
    digest = hash_token(SECRET).hex()
    text = f"# comment\n\n  Worker:{digest.upper()}  # trailing comment\nadmin:{digest}\n"
    assert parse_tokens_file(text) == [
        HashedToken(Role.WORKER, hash_token(SECRET)),
        HashedToken(Role.ADMIN, hash_token(SECRET)),
    ]


@pytest.mark.parametrize(
    "line",
    [SECRET, f"admin:{SECRET}", f"root:{hash_token(SECRET).hex()}", "admin:abc", f"{SECRET}:"],
)
def test_a_bad_tokens_file_line_is_named_but_not_quoted(line: str) -> None:
    with pytest.raises(TokenConfigError) as caught:
        parse_tokens_file(f"# first\n{line}\n")
    assert "line 2" in str(caught.value)
    assert SECRET not in str(caught.value)
    assert "sk_live" not in str(caught.value)


def test_an_empty_or_missing_tokens_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty").write_text("# none\n")
    with pytest.raises(TokenConfigError, match="lists no token"):
        load_tokens_file(tmp_path / "empty")
    with pytest.raises(TokenConfigError, match="cannot read"):
        load_tokens_file(tmp_path / "missing")


def test_tokens_from_the_environment() -> None:
    padded = SECRET + "=="
    parsed = parse_tokens_env(f" producer={SECRET}, worker={padded},,admin={SECRET}")
    assert parsed == [
        HashedToken(Role.PRODUCER, hash_token(SECRET)),
        HashedToken(Role.WORKER, hash_token(padded)),
        HashedToken(Role.ADMIN, hash_token(SECRET)),
    ]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("", "lists no token"),
        (SECRET, "expected role=token"),
        ("admin=short", "shorter than 16"),
        (f"admin=has space{SECRET}", "printable ASCII"),
        (f"boss={SECRET}", "unknown role"),
    ],
)
def test_bad_environment_tokens(value: str, problem: str) -> None:
    with pytest.raises(TokenConfigError, match=problem) as caught:
        parse_tokens_env(value)
    assert SECRET not in str(caught.value)


def test_roles_of_a_token() -> None:
    other = "another-token-0123456789"
    auth = Authenticator(
        [
            HashedToken(Role.PRODUCER, hash_token(SECRET)),
            HashedToken(Role.WORKER, hash_token(SECRET)),
            HashedToken(Role.ADMIN, hash_token(other)),
        ]
    )
    assert not auth.open
    assert auth.roles_of(SECRET) == {Role.PRODUCER, Role.WORKER}
    assert auth.roles_of(other) == {Role.ADMIN}
    assert auth.roles_of(SECRET[:-1]) == frozenset()
    assert auth.roles_of("") == frozenset()
    assert auth.roles_of(None) == frozenset()
    assert Authenticator([]).roles_of(None) == set(Role)  # open access


def test_every_configured_digest_is_compared_whatever_matches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No early exit: the time taken does not tell which entry (if any) matched."""
    tokens = [HashedToken(Role.WORKER, hash_token(f"token-{i:020d}")) for i in range(5)]
    auth = Authenticator(tokens)
    calls: list[bytes] = []
    real = hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        calls.append(b)
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", counting)
    for presented in (f"token-{0:020d}", f"token-{4:020d}", "nope-0000000000000000"):
        calls.clear()
        auth.roles_of(presented)
        assert calls == [t.digest for t in tokens]


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.5", False),
        ("example.com", False),
        ("", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_new_token_prints_a_token_and_its_tokens_file_line() -> None:
    done = CliRunner().invoke(cli.app, ["new-token", "worker"])
    assert done.exit_code == 0, done.output
    token, line = done.output.splitlines()
    assert len(token) >= 40
    assert parse_tokens_file(line) == [HashedToken(Role.WORKER, hash_token(token))]


def started(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Stands in for uvicorn: records that the server would have run, binds nothing."""
    runs: list[bool] = []

    def fake_run(self: server._Server, sockets: object = None) -> None:
        runs.append(True)
        self.started = True

    monkeypatch.setattr(server._Server, "run", fake_run)
    return runs


def test_open_access_off_loopback_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = started(monkeypatch)
    settings = CoordinatorSettings(host="0.0.0.0", database_url="sqlite:///:memory:")
    with pytest.raises(SystemExit) as caught:
        server.serve(create_app(settings), settings)
    assert caught.value.code == startup.EXIT_REFUSED
    assert "refusing to start" in capsys.readouterr().err
    assert runs == []


def test_open_access_off_loopback_when_allowed_starts_with_a_loud_warning(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = started(monkeypatch)
    settings = CoordinatorSettings(
        host="0.0.0.0", database_url="sqlite:///:memory:", allow_open_access=True
    )
    with capture_logs() as logs:
        server.serve(create_app(settings), settings)
    assert runs == [True]
    assert "OPEN ACCESS" in capsys.readouterr().err
    assert any(e["event"] == "auth.open_on_network" for e in logs)


@pytest.mark.parametrize(
    ("origin", "proxies"), [("https://jobs.example.com", ""), ("", "127.0.0.1")]
)
def test_open_access_behind_a_proxy_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], origin: str, proxies: str
) -> None:
    """Told that clients come through a proxy, a coordinator without tokens would make
    every caller of the proxy an admin, even bound to loopback."""
    runs = started(monkeypatch)
    settings = CoordinatorSettings(
        database_url="sqlite:///:memory:", public_origin=origin, trusted_proxies=proxies
    )
    with pytest.raises(SystemExit) as caught:
        server.serve(create_app(settings), settings)
    assert caught.value.code == startup.EXIT_REFUSED
    assert "reverse proxy" in capsys.readouterr().err
    assert runs == []


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_with_tokens_or_on_loopback_no_warning(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], host: str
) -> None:
    runs = started(monkeypatch)
    tokens = (HashedToken(Role.ADMIN, hash_token(SECRET)),) if host != "127.0.0.1" else ()
    settings = CoordinatorSettings(host=host, database_url="sqlite:///:memory:", tokens=tokens)
    server.serve(create_app(settings), settings)
    assert runs == [True]
    assert capsys.readouterr().err == ""
