"""The protocol's conformance kit: test vectors any coordinator must pass (PROTOCOL.md).

``leasehold conformance --url URL [--token T]`` runs them against a running coordinator and
prints one line per vector; ``leasehold certify-worker -- CMD ...`` runs a worker of any
language against a scripted workload with faults and checks the invariants.
"""

from leasehold.conformance.runner import Result, run_vectors

__all__ = ["Result", "run_vectors"]
