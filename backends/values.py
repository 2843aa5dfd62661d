"""Frozen value objects with the part of pydantic's model surface that dualmem uses
(``model_validate``, ``model_validate_json``, ``model_construct``, ``model_copy``, ``model_dump``,
``model_fields``), without pydantic.

Why not pydantic: importing it and building the models cost a short command ~130 ms of CPU, more
than half of a ``dualmem search`` or of a Claude Code hook. The model's few rules are written by
hand in each class's ``_checked``; a value that breaks them raises ``InvalidEpisode`` naming
each field and its problem (``field: problem; ...``), as pydantic's errors did.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from backends import json_read
from backends.errors import InvalidEpisode
from backends.lean_typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, ClassVar, Self

REQUIRED = object()
"""the default of a field that must be given"""


class Value:
    """A frozen record of the fields in ``model_fields`` (name -> default, ``REQUIRED`` or a
    factory in ``_factories``); equal when every field is."""

    __slots__ = ()
    model_fields: ClassVar[dict[str, object]] = {}
    _factories: ClassVar[dict[str, Callable[[], object]]] = {}

    def __init__(self, **fields: Any) -> None:
        unknown = [f"{name}: Extra inputs are not permitted"
                   for name in fields if name not in self.model_fields]
        errors: list[str] = []
        values = self._checked(self._complete(fields, errors), errors)
        if unknown or errors:
            raise InvalidEpisode("; ".join(errors + unknown))
        for name in self.model_fields:
            object.__setattr__(self, name, values[name])

    def _complete(self, fields: Mapping[str, Any], errors: list[str]) -> dict[str, Any]:
        values = {}
        for name, default in self.model_fields.items():
            if name in fields:
                values[name] = fields[name]
            elif name in self._factories:
                values[name] = self._factories[name]()
            elif default is REQUIRED:
                errors.append(f"{name}: Field required")
            else:
                values[name] = default
        return values

    def _checked(self, values: dict[str, Any], errors: list[str]) -> dict[str, Any]:
        """``values`` converted and checked; each problem appended to ``errors``."""
        return values

    @classmethod
    def model_validate(cls, data: Self | Mapping[str, Any]) -> Self:
        if isinstance(data, cls):
            return data
        if not isinstance(data, Mapping):
            raise InvalidEpisode(f"Input should be an object, not {type(data).__name__}")
        return cls(**data)

    @classmethod
    def model_validate_json(cls, data: str | bytes) -> Self:
        try:
            document = json_read.loads(data)
        except json_read.JSONDecodeError as exc:
            raise InvalidEpisode(f"Invalid JSON: {exc}") from None
        return cls.model_validate(document)

    @classmethod
    def model_construct(cls, **fields: Any) -> Self:
        """Built without any check (trusted values, or a test's deliberately bad one)."""
        made = object.__new__(cls)
        for name, default in cls.model_fields.items():
            if name in fields:
                value = fields[name]
            elif name in cls._factories:
                value = cls._factories[name]()
            else:
                value = None if default is REQUIRED else default
            object.__setattr__(made, name, value)
        return made

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> Self:
        """A copy with ``update``'s fields replaced, unchecked (as pydantic's)."""
        return self.model_construct(**(self._fields() | dict(update or {})))

    def model_dump(self, *, mode: str = "python", exclude_none: bool = False) -> dict[str, Any]:
        dumped = {}
        for name, value in self._fields().items():
            if value is None and exclude_none:
                continue
            if isinstance(value, Value):
                value = value.model_dump(mode=mode, exclude_none=exclude_none)
            elif mode == "json" and isinstance(value, datetime):
                value = iso(value)
            dumped[name] = value
        return dumped

    def model_dump_json(self) -> str:
        import orjson  # a write's: reads need not load it

        return orjson.dumps(self.model_dump(mode="json")).decode()

    def _fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.model_fields}

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: use model_copy(update=...)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(tuple(self._fields().values()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self._fields().items())
        return f"{type(self).__name__}({shown})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self._fields()))


def _rebuild(cls: type[Value], fields: dict[str, Any]) -> Value:
    return cls.model_construct(**fields)


def iso(value: datetime) -> str:
    """An instant as pydantic writes it: ISO 8601, UTC as ``Z``."""
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def check_text(values: dict[str, Any], name: str, errors: list[str]) -> bool:
    """Whether ``values[name]`` is text, made a plain ``str`` (an enum's member gives its
    value); a problem is appended to ``errors`` otherwise."""
    value = values.get(name)
    if type(value) is str:
        return True
    if isinstance(value, str):
        values[name] = str.__str__(value)
        return True
    if name in values:
        errors.append(f"{name}: Input should be a valid string")
    return False


def instant(value: object) -> datetime:
    """A datetime from a datetime, an ISO 8601 text or Unix seconds (milliseconds when the
    number is too large for seconds), as pydantic read them; ``ValueError`` otherwise."""
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError("Input should be a valid datetime") from None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = value / 1000 if abs(value) > 2e10 else value
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            raise ValueError("Input should be a valid datetime") from None
    raise ValueError("Input should be a valid datetime")
