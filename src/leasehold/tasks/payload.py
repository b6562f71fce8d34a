"""A function's signature as a payload schema: arguments to JSON and JSON back to arguments.

A typed task's payload is the JSON object of its arguments by parameter name
(``{"to": "ada@example.com", "subject": "hi"}``), or, for a function whose only parameter is
a Pydantic model, that model's JSON. Producers in other languages enqueue the same shape
with the string-kind API. The same Pydantic schema checks the arguments at enqueue and
validates the payload in the worker, so the handler gets the types its signature declares.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, get_type_hints

import pydantic
from pydantic import BaseModel, ConfigDict, TypeAdapter

from leasehold.model import JSON

_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


class PayloadError(ValueError):
    """Arguments or a payload that do not fit the function's signature."""


class PayloadSchema:
    """The schema of ``fn``'s arguments, built once when the task is declared."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.name = getattr(fn, "__qualname__", repr(fn))
        # eval_str: annotations written under ``from __future__ import annotations`` are
        # strings until resolved, and error messages show the signature.
        self.signature = inspect.signature(fn, eval_str=True)
        params = list(self.signature.parameters.values())
        hints = {p.name: p.annotation for p in params if p.annotation is not p.empty}
        for p in params:
            if p.kind not in _NAMED:
                raise TypeError(
                    f"{self.name}: a task's parameters must be named (not {p}), so that"
                    " its payload is a JSON object"
                )
        self.names = tuple(p.name for p in params)
        only = hints.get(params[0].name) if len(params) == 1 else None
        self.model_param: str | None = None
        self._adapter: TypeAdapter[Any]
        if isinstance(only, type) and issubclass(only, BaseModel):
            self.model_param = params[0].name
            self._adapter = TypeAdapter(only)
        else:
            fields: dict[str, Any] = {
                p.name: (hints.get(p.name, Any), ... if p.default is p.empty else p.default)
                for p in params
            }
            model = pydantic.create_model(  # extra keys are refused: a typo must not pass
                f"{getattr(fn, '__name__', 'task')}_payload",
                __config__=ConfigDict(extra="forbid", protected_namespaces=()),
                **fields,
            )
            self._adapter = TypeAdapter(model)

    def describe(self) -> str:
        return f"{self.name}{self.signature}"

    def bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Every argument of a call by name, defaults included (``PayloadError`` if the
        call does not fit the signature)."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise PayloadError(f"{self.describe()}: {exc}") from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def dump(self, arguments: Mapping[str, Any]) -> JSON:
        """The payload for these arguments (from ``bind``); ``PayloadError`` if they do
        not fit the types."""
        value: Any = (
            arguments[self.model_param] if self.model_param is not None else dict(arguments)
        )
        try:
            validated = self._adapter.validate_python(value)
        except pydantic.ValidationError as exc:
            raise PayloadError(f"{self.describe()}: {_errors(exc)}") from None
        return self._adapter.dump_python(validated, mode="json")

    def load(self, payload: JSON) -> dict[str, Any]:
        """The keyword arguments a payload stands for; ``PayloadError`` if it does not fit."""
        try:
            validated = self._adapter.validate_python(payload)
        except pydantic.ValidationError as exc:
            raise PayloadError(
                f"the payload does not fit {self.describe()}: {_errors(exc)}"
            ) from None
        if self.model_param is not None:
            return {self.model_param: validated}
        return {name: getattr(validated, name) for name in self.names}


def _errors(exc: pydantic.ValidationError) -> str:
    """Pydantic's errors on one line: ``to: Field required; subject: Input should be...``."""
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(x) for x in error["loc"]) or "payload"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def result_adapter(fn: Callable[..., Any]) -> TypeAdapter[Any] | None:
    """A validator for the function's declared return type (None when it declares none).
    An ``async def`` function's annotation is already the awaited type."""
    hint = get_type_hints(fn).get("return")
    if hint is None or hint is type(None):
        return None
    return TypeAdapter(hint)
