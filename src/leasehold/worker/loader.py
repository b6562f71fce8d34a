"""Loading ``module:attribute`` the way uvicorn loads its APP."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping

from leasehold.worker.errors import AppLoadError
from leasehold.worker.registry import Registry


def load_app(spec: str) -> Registry:
    """The Registry (or dict of handlers) named by ``spec``, e.g. ``myapp.jobs:registry``.

    The current directory is importable, as it is for ``python -m``.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise AppLoadError(
            f"APP must be 'module:attribute', e.g. 'myapp.jobs:registry', not {spec!r}"
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: object = importlib.import_module(module_name)
    except Exception as exc:  # whatever the module raised while importing: report it
        raise AppLoadError(
            f"could not import {module_name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    for name in attribute.split("."):
        try:
            target = getattr(target, name)
        except AttributeError:
            raise AppLoadError(f"{module_name!r} has no attribute {attribute!r}") from None
    if not isinstance(target, Mapping):
        raise AppLoadError(
            f"{spec} is a {type(target).__name__}; it must be a leasehold Registry or a dict"
            " of {kind: handler}"
        )
    try:
        registry = Registry.of(target)
    except (TypeError, ValueError) as exc:
        raise AppLoadError(f"{spec}: {exc}") from exc
    if not registry:
        raise AppLoadError(f"{spec} has no handlers")
    return registry
