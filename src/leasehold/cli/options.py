"""Command-line options made from settings declared with ``coordinator.settings.setting``.

Each declared field becomes one typer option: ``--<name>`` (underscores as dashes), with
the environment fallback ``LEASEHOLD_<NAME>``, the field's default, and the declaration's
bounds and help. A command takes them through its signature, which typer reads, and
builds its settings from what was parsed with ``settings_from``.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, get_type_hints

import typer
from typer.models import OptionInfo

from leasehold.coordinator.settings import OPTION, OptionSpec

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")
F = TypeVar("F", bound=Callable[..., Any])


def envvar(name: str) -> str:
    """The environment variable an option falls back to."""
    return f"LEASEHOLD_{name.upper()}"


def _option(field: dataclasses.Field[Any], spec: OptionSpec, annotation: Any) -> OptionInfo:
    # A bool is a switch: its flag alone, with no --no- form (typer's default makes both).
    flags = (f"--{field.name.replace('_', '-')}",) if annotation is bool else ()
    info: OptionInfo = typer.Option(
        field.default,
        *flags,
        envvar=envvar(field.name),
        min=spec.min,
        max=spec.max,
        help=spec.help,
        case_sensitive=spec.choices is None,
    )
    return info


def declared(settings: type) -> list[inspect.Parameter]:
    """The options of the fields of ``settings`` declared with ``setting``, in their order."""
    hints = get_type_hints(settings)
    parameters = []
    for field in dataclasses.fields(settings):
        spec = field.metadata.get(OPTION)
        if spec is None:
            continue
        annotation = hints[field.name] if spec.choices is None else spec.choices
        parameters.append(
            inspect.Parameter(
                field.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=_option(field, spec, annotation),
                annotation=annotation,
            )
        )
    return parameters


def option(name: str, annotation: Any, info: OptionInfo) -> inspect.Parameter:
    """An option declared as typer declares one (``typer.Option(...)``), to add to those."""
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation
    )


def takes(parameters: Iterable[inspect.Parameter]) -> Callable[[F], F]:
    """Give a command that takes ``**given`` these options: typer reads a function's
    signature for its parameters, and calls it with each by name."""

    def decorate(command: F) -> F:
        command.__signature__ = inspect.Signature(list(parameters))  # type: ignore[attr-defined]
        return command

    return decorate


def settings_from(settings: type[T], given: Mapping[str, Any], **rest: Any) -> T:
    """``settings`` made in one call from the parsed options its declared fields have, and
    ``rest`` for the fields the command line gives some other way."""
    values = {f.name: given[f.name] for f in dataclasses.fields(settings) if OPTION in f.metadata}
    return settings(**values, **rest)
