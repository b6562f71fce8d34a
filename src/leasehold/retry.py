"""The old name of ``leasehold.http_retry``, kept for compatibility."""

from leasehold.http_retry import NO_RETRY, RetryPolicy, call_with_retry

__all__ = ["NO_RETRY", "RetryPolicy", "call_with_retry"]
