"""``backends.lean_typing.NamedTuple`` makes what ``typing.NamedTuple`` makes, without
importing typing (a lean hook's modules use it)."""

from __future__ import annotations

import pickle
import typing

import pytest

from backends.lean_typing import NamedTuple


class Lean(NamedTuple):
    """a run"""

    kind: str
    tool: str = "x"
    seen: int = 0

    def both(self) -> str:
        return self.kind + self.tool

    @property
    def twice(self) -> int:
        return self.seen * 2


class Typed(typing.NamedTuple):
    """a run"""

    kind: str
    tool: str = "x"
    seen: int = 0

    def both(self) -> str:
        return self.kind + self.tool

    @property
    def twice(self) -> int:
        return self.seen * 2


def test_a_lean_named_tuple_behaves_as_typings() -> None:
    for made in (Lean, Typed):
        run = made("test", seen=2)
        assert run == ("test", "x", 2) and isinstance(run, tuple)
        assert (run.kind, run.both(), run.twice) == ("test", "testx", 4)
        assert run._replace(tool="y") == ("test", "y", 2)
        assert run._asdict() == {"kind": "test", "tool": "x", "seen": 2}
        assert made._fields == ("kind", "tool", "seen")
        assert made._field_defaults == {"tool": "x", "seen": 0}
        assert made.__match_args__ == ("kind", "tool", "seen")
        assert made.__doc__ == "a run" and made.__module__ == __name__
        assert pickle.loads(pickle.dumps(run)) == run
        with pytest.raises(TypeError):
            made()  # type: ignore[call-arg]
    assert repr(Lean("test")) == "Lean(kind='test', tool='x', seen=0)"
    assert Lean.__qualname__ == "Lean" and Lean.__annotations__ == {
        "kind": "str", "tool": "str", "seen": "int"}  # as written: never evaluated


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
