"""The coordinator's HTTP API."""

from leasehold.api.app import create_app

__all__ = ["create_app"]
