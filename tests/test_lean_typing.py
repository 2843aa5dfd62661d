"""``backends.lean_typing.NamedTuple`` makes what ``typing.NamedTuple`` makes, without
importing typing (a lean hook's modules use it)."""

from __future__ import annotations

import pickle
import typing
from typing import Any

import pytest

from backends.lean_typing import NamedTuple


def run_class(base: Any) -> Any:
    """The same class body on ``base``: typing's NamedTuple or the lean one."""

    class Run(base):  # type: ignore[misc]
        """a run"""

        kind: str
        tool: str = "x"
        seen: int = 0

        def both(self) -> str:
            return self.kind + self.tool

        @property
        def twice(self) -> int:
            return self.seen * 2

    return Run


Lean, Typed = run_class(NamedTuple), run_class(typing.NamedTuple)


class Pair(NamedTuple):
    """a lean one at a module's top level, as pickle finds classes"""

    left: int
    right: str = ""


def test_a_lean_named_tuple_behaves_as_typings() -> None:
    for made in (Lean, Typed):
        run: Any = made("test", seen=2)
        assert run == ("test", "x", 2) and issubclass(made, tuple)
        assert (run.kind, run.both(), run.twice) == ("test", "testx", 4)
        assert run._replace(tool="y") == ("test", "y", 2)
        assert run._asdict() == {"kind": "test", "tool": "x", "seen": 2}
        assert made._fields == ("kind", "tool", "seen")
        assert made._field_defaults == {"tool": "x", "seen": 0}
        assert made.__match_args__ == ("kind", "tool", "seen")
        assert made.__doc__ == "a run" and made.__module__ == __name__
        with pytest.raises(TypeError):
            made()
    assert repr(Lean("test")) == repr(Typed("test")) == "Run(kind='test', tool='x', seen=0)"
    assert Lean.__qualname__ == Typed.__qualname__
    assert Lean.__annotations__ == {"kind": "str", "tool": "str", "seen": "int"}  # unevaluated
    assert pickle.loads(pickle.dumps(Pair(1))) == Pair(1, "")


def test_a_lean_named_tuple_refuses_what_typings_refuses() -> None:
    with pytest.raises(TypeError, match="Non-default namedtuple field tool cannot follow"):
        class Late(NamedTuple):
            kind: str = "x"
            tool: str  # type: ignore[misc]

    with pytest.raises(AttributeError, match="Cannot overwrite NamedTuple attribute _replace"):
        class Replacing(NamedTuple):
            kind: str

            def _replace(self) -> None:  # type: ignore[misc]
                pass
