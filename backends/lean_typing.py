"""What dualmem uses of ``typing`` at run time, without importing ``typing``: its import alone
(~12M instructions) was a tenth of a later Stop's (``memory.capture.later``), and each
``typing.NamedTuple`` class cost another ~0.3M over ``collections.namedtuple``'s own.

A type checker sees ``typing``'s own names (it takes any name ``TYPE_CHECKING`` for true).
Modules on a hook's lean path import ``typing``'s names for annotations only, under ``if
TYPE_CHECKING:``, and these for the rest:

- ``NamedTuple``: ``class Run(NamedTuple)`` with annotated fields (defaults last) and methods
  makes what ``typing`` makes: ``collections.namedtuple`` of those fields, the defaults and
  the class's other attributes set on it. The annotations are kept as written and never
  evaluated (its modules have ``from __future__ import annotations``: typing compiles each
  string, and a process's first ``compile()`` costs ~10M instructions);
- ``overload``: the implementation that follows replaces the overloads, as with typing's."""

from __future__ import annotations

import collections

TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any
    from typing import NamedTuple as NamedTuple
    from typing import overload as overload
else:
    _PROHIBITED = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__", "_fields",
                             "_field_defaults", "_make", "_replace", "_asdict", "_source"})
    _SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})

    class _Maker(type):
        """Makes each class of ``NamedTuple`` a ``collections.namedtuple``, as typing's
        ``NamedTupleMeta`` does."""

        def __new__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> type:
            if not bases:  # NamedTuple itself
                return super().__new__(cls, name, bases, namespace)
            if bases != (NamedTuple,):
                raise TypeError("can only inherit from a NamedTuple type")
            fields = namespace.get("__annotations__", {})
            defaults: list[str] = []
            for field in fields:
                if field in namespace:
                    defaults.append(field)
                elif defaults:
                    raise TypeError(f"Non-default namedtuple field {field} cannot follow "
                                    f"default field(s) {', '.join(defaults)}")
            made = collections.namedtuple(name, list(fields),
                                          defaults=[namespace[n] for n in defaults],
                                          module=namespace["__module__"])
            made.__annotations__ = made.__new__.__annotations__ = dict(fields)
            for key, value in namespace.items():
                if key in _PROHIBITED:
                    raise AttributeError(f"Cannot overwrite NamedTuple attribute {key}")
                if key not in _SPECIAL and key not in made._fields:
                    setattr(made, key, value)
            return made

    class NamedTuple(metaclass=_Maker):
        pass

    def overload(function: Any) -> Any:
        return function
