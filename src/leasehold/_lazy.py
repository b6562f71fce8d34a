"""Public names of a package imported on first use (PEP 562).

A package's ``__init__`` that imports every part makes each process pay for all of them:
the coordinator and the command line would import the HTTP client (aiohttp, a third of a
second) that they never use. With ``exports``, ``from package import Name`` and
``package.Name`` still work, and import ``Name``'s home module only then.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def exports(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose public names live in the
    modules ``homes`` maps them to."""

    def getattr_(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def dir_() -> list[str]:
        return sorted(homes)

    return getattr_, dir_
