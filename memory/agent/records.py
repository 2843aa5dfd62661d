"""Structured memories as typed records: each is a pydantic model stored as an episode's JSON
body under a natural key, so writing it again updates it instead of adding a duplicate."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence

from backends import json_read
from backends.errors import InvalidEpisode
from backends.lean_typing import TYPE_CHECKING
from backends.model import Episode, stable_id

if TYPE_CHECKING:  # pydantic loads with the first record parsed: a prompt hook parses none
    from typing import Any, TypeVar

    from pydantic import BaseModel

    from backends.protocol import MemoryBackend  # annotations only: a lean Stop imports none

    Record = TypeVar("Record", bound=BaseModel)  # a bound named in a string costs a compile()


class ReadsAsMapping:
    """Lets a record be read the way the design documents read results, as a dict
    (``adr["id"]``, ``warning.get("related_adrs", [])``): by the name of a field or property.
    Attribute access stays the typed way; this only adds a second spelling."""

    __slots__ = ()

    def _readable(self, key: object) -> bool:
        if not isinstance(key, str) or key.startswith("_"):
            return False
        fields = getattr(type(self), "model_fields", None) or getattr(
            type(self), "__dataclass_fields__", {})
        return key in fields or isinstance(getattr(type(self), key, None), property)

    def __getitem__(self, key: str) -> Any:
        if not self._readable(key):
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if self._readable(key) else default

    def __contains__(self, key: object) -> bool:
        return self._readable(key)


def json_object(text: str | bytes, where: str) -> dict[str, Any]:
    """``text`` parsed as one JSON object; ``InvalidEpisode`` naming ``where`` otherwise."""
    try:
        value = json_read.loads(text)
    except json_read.JSONDecodeError as exc:
        raise InvalidEpisode(f"{where}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise InvalidEpisode(f"{where}: not a JSON object")
    return value


OUTCOME_PREFIX = "OUT-"


def outcome_id(episode_id: str) -> str:
    """A task outcome's ``OUT-XXXXXXXX``, from the id of its memory (a uuid): the same outcome
    always has the same one, whichever process or layer wrote it."""
    return OUTCOME_PREFIX + episode_id.replace("-", "")[:8].upper()


def title(text: str, limit: int = 120) -> str:
    """One line of at most ``limit`` characters for an episode's name."""
    line = " ".join(text.split()) or "(empty)"
    return line if len(line) <= limit else line[: limit - 1] + "…"


def body(record: BaseModel, always: Collection[str]) -> dict[str, Any]:
    """``record`` as a JSON body: the fields in ``always``, and the others only where they
    differ from their defaults. The design documents' records have many optional fields; left
    empty, they would only lengthen the text search ranks (and so lower its score)."""
    given = record.model_dump(mode="json", exclude_defaults=True)
    return {
        name: value for name, value in record.model_dump(mode="json").items()
        if name in always or name in given
    }


def parse(episode: Episode, model: type[Record]) -> Record | None:
    """The record an episode holds, or None when its body is not one (edited by hand, say)."""
    data = episode.data
    if not isinstance(data, dict):
        return None
    from pydantic import ValidationError

    try:
        return model.model_validate(data)
    except ValidationError:
        return None


async def fetch(
    store: MemoryBackend, group_id: str, kind: str, key: str, model: type[Record]
) -> tuple[Episode, Record] | None:
    episode = await store.get(stable_id(group_id, kind, key))
    if episode is None:
        return None
    record = parse(episode, model)
    return None if record is None else (episode, record)


async def scan_records(
    store: MemoryBackend, group_ids: Sequence[str], kind: str, model: type[Record]
) -> list[tuple[Episode, Record]]:
    """Every record of ``kind`` in the groups, exactly (a scan, not a search)."""
    found = []
    async for episode in store.scan(group_ids=group_ids, kinds=[kind]):
        record = parse(episode, model)
        if record is not None:
            found.append((episode, record))
    return found


def next_id(prefix: str, taken: Iterable[str], width: int) -> str:
    """``PREFIX-NNN``: one past the highest number among the ``taken`` ids of that shape."""
    shape = re.compile(rf"{re.escape(prefix)}-(\d+)")
    numbers = [int(m.group(1)) for text in taken if (m := shape.fullmatch(text))]
    return f"{prefix}-{max(numbers, default=0) + 1:0{width}d}"


def folded(value: Any) -> Any:
    """An enumeration's value as the design documents store it (``ADRStatus.ACCEPTED`` is
    ``accepted``), read from its value or its name (``ACCEPTED``, ``TASK_REVIEW``)."""
    return value.strip().casefold() if isinstance(value, str) else value


def without_entity_type(data: Any, kind: str) -> Any:
    """A design document's body without its ``entity_type`` (the episode's kind says it): an
    error when it names another kind."""
    if isinstance(data, dict) and "entity_type" in data:
        data = dict(data)
        if (entity_type := data.pop("entity_type")) != kind:
            raise ValueError(f"entity_type {entity_type!r} is not {kind!r}")
    return data
