"""``memory`` declares its public surface: ``__all__`` is exactly what it exports, each name
loaded on first use."""

from __future__ import annotations

import types

import pytest

import memory


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name in dir(memory)
        if not name.startswith("_") and not isinstance(getattr(memory, name), types.ModuleType)
    }
    assert set(memory.__all__) == public
    assert len(memory.__all__) == len(set(memory.__all__))
    assert memory.__all__ == sorted(memory.__all__)


def test_each_exported_name_imports() -> None:
    for name in memory.__all__:
        namespace: dict[str, object] = {}
        exec(f"from memory import {name}", namespace)
        assert namespace[name] is getattr(memory, name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        memory.nothing_here  # noqa: B018
    with pytest.raises(ImportError):
        exec("from memory import nothing_here", {})
