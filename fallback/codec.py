"""An episode as one human-readable JSON document, and back."""

from __future__ import annotations

import json

from backends import json_read
from backends.errors import InvalidEpisode
from backends.lean_typing import TYPE_CHECKING
from backends.model import Episode

if TYPE_CHECKING:
    from typing import Any

FORMAT = "dualmem.episode/1"
# Fields in reading order: what a person looks for first comes first, the long body last.
_ORDER = (
    "id", "group_id", "kind", "name", "source", "created_at", "valid_at", "invalid_at", "body",
)


class UnreadableEpisode(ValueError):
    """A file that should hold an episode does not; the message says why."""


def encode(episode: Episode) -> bytes:
    """The episode's file: its fields are text (or null), for which the standard library
    writes the bytes orjson writes (``tests/test_json_read.py``) without orjson's import, a
    quarter of a later Stop's (``memory.capture.later``)."""
    fields = episode.to_json()
    document: dict[str, Any] = {"format": FORMAT}
    document.update((name, fields[name]) for name in _ORDER)
    return json.dumps(document, ensure_ascii=False, indent=2).encode() + b"\n"


def decode(data: bytes) -> Episode:
    try:
        document = json_read.loads(data)
    except json_read.JSONDecodeError as exc:
        raise UnreadableEpisode(f"not JSON ({exc})") from None
    if not isinstance(document, dict):
        raise UnreadableEpisode("not a JSON object")
    if document.pop("format", None) != FORMAT:
        raise UnreadableEpisode(f"not a {FORMAT} document")
    try:
        return Episode.parse(**document)
    except InvalidEpisode as exc:
        raise UnreadableEpisode(f"not a valid episode ({exc})") from None
