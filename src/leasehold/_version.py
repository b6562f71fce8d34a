"""leasehold's version: one home, the installed distribution's metadata (pyproject.toml).

The app's OpenAPI document, ``leasehold --version``, the client's User-Agent and the
worker's start-up line all read it from here.
"""

from __future__ import annotations

from importlib import metadata

# The name on the package index ("leasehold" there is another project); the import name
# and the command stay ``leasehold``.
DISTRIBUTION = "leasehold-queue"

try:
    __version__ = metadata.version(DISTRIBUTION)
except metadata.PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"
