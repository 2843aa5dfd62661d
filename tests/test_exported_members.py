"""``memory`` (and ``backends``, the ground floor it re-exports from) declares its public
surface: ``__all__`` is exactly what it exports, each name loaded on first use."""

from __future__ import annotations

import types

import pytest

import backends
import memory

SURFACES = pytest.mark.parametrize("module", [memory, backends], ids=["memory", "backends"])


@SURFACES
def test_all_lists_exactly_the_public_names(module: types.ModuleType) -> None:
    public = {
        name
        for name in dir(module)
        if not name.startswith("_") and not isinstance(getattr(module, name), types.ModuleType)
    }
    assert set(module.__all__) == public
    assert len(module.__all__) == len(set(module.__all__))
    assert module.__all__ == sorted(module.__all__)


@SURFACES
def test_each_exported_name_imports(module: types.ModuleType) -> None:
    for name in module.__all__:
        namespace: dict[str, object] = {}
        exec(f"from {module.__name__} import {name}", namespace)
        assert namespace[name] is getattr(module, name)


def test_the_refusal_of_a_hostile_file_is_public() -> None:
    from backends.errors import FileRefused

    assert backends.FileRefused is memory.FileRefused is FileRefused


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        memory.nothing_here  # type: ignore[attr-defined]  # noqa: B018  (what is tested)
    with pytest.raises(ImportError):
        exec("from memory import nothing_here", {})
