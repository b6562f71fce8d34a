"""The example's worker module: ``leasehold worker examples.django_app.tasks:registry``.

It needs no Django: a worker only imports what its tasks use.
"""

from __future__ import annotations

from leasehold import current_job, task
from leasehold.worker import Registry

registry = Registry()


@registry.register
@task(kind="example-welcome", idempotency_key=lambda email: f"welcome:{email}")
def send_welcome(email: str) -> str:
    """A plain function: the worker runs it on a thread of its own."""
    return f"welcome mail to {email} (job {current_job().id})"
