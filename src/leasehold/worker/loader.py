"""Loading ``module:attribute`` the way uvicorn loads its APP."""

from __future__ import annotations

import importlib
import os
import sys
import sysconfig
import traceback
from collections.abc import Mapping
from pathlib import Path

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
        raise _import_failed(module_name, exc) from exc
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


def _import_failed(module_name: str, exc: Exception) -> AppLoadError:
    """The error for an exception raised while importing ``module_name``: its message
    names the file and line it was raised at, and its traceback keeps the frames of the
    code that ran (the module's, and what it imported), not those of importlib."""
    failure = traceback.TracebackException.from_exception(exc)
    frames = [f for f in failure.stack if not _machinery(f.filename)]
    failure.stack = traceback.StackSummary.from_list(frames)
    where, what = "", str(exc)
    if isinstance(exc, SyntaxError) and exc.filename:  # raised by the compiler: no frame
        where, what = f" ({_shown(exc.filename)}, line {exc.lineno})", str(exc.msg)
    elif frames:
        # The innermost line of the application's code; a library's, else.
        own = [f for f in frames if not _installed(f.filename)] or frames
        where = f" ({_shown(own[-1].filename)}, line {own[-1].lineno})"
    message = f"could not import {module_name!r}{where}: {type(exc).__name__}: {what}"
    # A module that is not there has no code of its own to show.
    shown = bool(frames) or isinstance(exc, SyntaxError)
    return AppLoadError(message, traceback="".join(failure.format()) if shown else None)


_IMPORTLIB = str(Path(importlib.__file__ or "").parent)
# Where the standard library and installed packages live: code that is not the application's.
_INSTALLED = tuple({sysconfig.get_path(name) for name in ("stdlib", "purelib", "platlib")})


def _machinery(filename: str) -> bool:
    return filename.startswith(("<frozen importlib", _IMPORTLIB)) or filename == __file__


def _installed(filename: str) -> bool:
    return filename.startswith("<") or filename.startswith(_INSTALLED)


def _shown(filename: str) -> str:
    """A file as the user would name it: relative to the current directory when in it."""
    path = Path(filename)
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return filename
