"""Lazy re-exports (PEP 562) for a package's ``__init__``: each public name is imported from
its module on first use, so importing the package costs nothing it does not use.

    __getattr__, __dir__ = lazy_exports(__name__, {"package.module": ("Name", ...), ...})

Kept out of a type checker's sight (``if not TYPE_CHECKING``), so that it checks the names
against the package's ``TYPE_CHECKING`` imports rather than accepting any name at all.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping


def lazy_exports(
    package: str, sources: Mapping[str, Iterable[str]]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` for ``package``, whose names live in
    ``sources`` (module -> names)."""
    module_of = {name: module for module, names in sources.items() for name in names}

    def getattr_(name: str) -> object:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # importlib.import_module, without importing importlib (with warnings): ~1.5M
        # instructions of a lean hook
        __import__(module)
        value = getattr(sys.modules[module], name)
        setattr(sys.modules[package], name, value)  # the next look-up is an ordinary one
        return value

    def dir_() -> list[str]:
        return sorted({*vars(sys.modules[package]), *module_of})

    return getattr_, dir_
