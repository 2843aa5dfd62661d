"""An episode as one human-readable JSON document, and back."""

from __future__ import annotations

from typing import Any

from backends import json_read
from backends.errors import InvalidEpisode
from backends.model import Episode

FORMAT = "dualmem.episode/1"
# Fields in reading order: what a person looks for first comes first, the long body last.
_ORDER = (
    "id", "group_id", "kind", "name", "source", "created_at", "valid_at", "invalid_at", "body",
)


class UnreadableEpisode(ValueError):
    """A file that should hold an episode does not; the message says why."""


def encode(episode: Episode) -> bytes:
    import orjson  # a write's: reads need not load it

    fields = episode.to_json()
    document: dict[str, Any] = {"format": FORMAT}
    document.update((name, fields[name]) for name in _ORDER)
    return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


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
