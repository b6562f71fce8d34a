"""Every call of the client, once: ``Calls``.

Each call is a flow (``_exchange.py``) that yields the requests it needs and decides what
the answers mean; ``Client`` awaits these flows and ``SyncClient`` runs them on blocking
sockets. The methods of both clients are made from the functions of ``Calls``, with their
arguments and docstrings (``_client.py``, ``_sync.py``): there is no second
implementation to keep in step.
"""

from __future__ import annotations

from leasehold.client._operator_calls import OperatorCalls
from leasehold.client._worker_calls import WorkerCalls


class Calls(WorkerCalls, OperatorCalls):
    """Every call of the client, as flows, with the options of one client or view."""
