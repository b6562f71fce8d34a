"""Registering handlers, and loading them from an APP spec."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from leasehold.worker import AppLoadError, LeasedJob, Registry
from leasehold.worker.loader import load_app


def test_decorator_registers_and_returns_the_function() -> None:
    registry = Registry()

    @registry.handler("a")
    async def a(job: LeasedJob) -> int:
        return 1

    @registry.handler("b")
    def b(job: LeasedJob) -> int:
        return 2

    assert registry.kinds == ("a", "b")
    assert registry["a"] is a
    assert registry.get("missing") is None
    assert asyncio.iscoroutinefunction(a)  # the decorator hands back the same function


def test_a_kind_gets_one_handler_only() -> None:
    registry = Registry({"a": print})
    with pytest.raises(ValueError, match="already has a handler"):
        registry.add("a", print)


@pytest.mark.parametrize(("kind", "handler"), [("", print), ("  ", print), ("k", 42)])
def test_bad_kinds_and_handlers_are_refused(kind: str, handler: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        Registry({kind: handler})  # type: ignore[dict-item]


def test_a_dict_becomes_a_registry() -> None:
    registry = Registry.of({"a": print})
    assert isinstance(registry, Registry)
    assert Registry.of(registry) is registry


def test_load_app_finds_a_registry_or_a_dict() -> None:
    assert "work" in load_app("tests.fixtures.handlers:registry").kinds
    assert load_app("tests.fixtures.handlers:handlers").kinds == ("work", "work-sync")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("tests.fixtures.handlers", "module:attribute"),
        (":registry", "module:attribute"),
        ("no_such_module_here:registry", "could not import"),
        ("tests.fixtures.handlers:nothing", "no attribute"),
        ("tests.fixtures.handlers:not_handlers", "must be a leasehold Registry or a dict"),
    ],
)
def test_load_app_explains_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(AppLoadError, match=message):
        load_app(spec)


def test_load_app_imports_from_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_jobs_for_test.py").write_text(
        "def hello(job):\n    return 'hi'\n\nregistry = {'hello': hello}\n"
    )
    (tmp_path / "broken_jobs_for_test.py").write_text("raise RuntimeError('bad module')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert load_app("my_jobs_for_test:registry").kinds == ("hello",)
    with pytest.raises(AppLoadError, match="RuntimeError: bad module"):
        load_app("broken_jobs_for_test:registry")
    (tmp_path / "empty_jobs_for_test.py").write_text("registry = {}\n")
    with pytest.raises(AppLoadError, match="no handlers"):
        load_app("empty_jobs_for_test:registry")


def test_an_import_error_names_the_file_and_line_and_keeps_the_modules_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A syntax error shows Python's caret and its line; a module that is not there is one
    line, with no traceback (there is no code of its own to show)."""
    (tmp_path / "typo_jobs_for_test.py").write_text("def handler(job:\n    pass\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    with pytest.raises(AppLoadError) as typo:
        load_app("typo_jobs_for_test:registry")
    assert "(typo_jobs_for_test.py, line 1): SyntaxError: " in str(typo.value)
    assert typo.value.traceback is not None and "^" in typo.value.traceback
    assert "importlib" not in typo.value.traceback
    with pytest.raises(AppLoadError) as missing:
        load_app("no_such_jobs_for_test:registry")
    assert str(missing.value).endswith(
        "ModuleNotFoundError: No module named 'no_such_jobs_for_test'"
    )
    assert missing.value.traceback is None
