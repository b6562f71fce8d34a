"""The protocol's conformance kit: test vectors any coordinator must pass (PROTOCOL.md).

``leasehold conformance --url URL [--token T]`` runs them against a running coordinator and
prints one line per vector; ``leasehold certify-worker -- CMD ...`` runs a worker of any
language against a scripted workload with faults and checks the invariants.
"""

from typing import TYPE_CHECKING

from leasehold._lazy import exports

if TYPE_CHECKING:
    from leasehold.conformance.runner import Result, run_vectors

__all__ = ["Result", "run_vectors"]

# On first use: `leasehold` registers these commands at every start, and the runner
# imports aiohttp.
__getattr__, __dir__ = exports(
    __name__,
    {"Result": "leasehold.conformance.runner", "run_vectors": "leasehold.conformance.runner"},
)
