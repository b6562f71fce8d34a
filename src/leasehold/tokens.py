"""The old name of ``leasehold.bearer_tokens``, kept for compatibility."""

from leasehold.bearer_tokens import (
    MIN_TOKEN_LENGTH,
    Authenticator,
    HashedToken,
    Role,
    TokenConfigError,
    hash_token,
    is_loopback,
    load_tokens_file,
    new_token,
    parse_tokens_env,
    parse_tokens_file,
)

__all__ = [
    "MIN_TOKEN_LENGTH",
    "Authenticator",
    "HashedToken",
    "Role",
    "TokenConfigError",
    "hash_token",
    "is_loopback",
    "load_tokens_file",
    "new_token",
    "parse_tokens_env",
    "parse_tokens_file",
]
