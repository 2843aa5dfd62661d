"""A derived memory laid over the same memory derived earlier (by another session, or by
another failure of the same key in this one): list fields united, the richer description
kept, the earlier time kept."""

from __future__ import annotations

from collections.abc import Sequence

from backends import json_read
from backends.lean_typing import TYPE_CHECKING
from backends.model import Episode

if TYPE_CHECKING:
    from typing import Any

_UNITED = ("notes", "files", "sessions")
_MAX_UNITED = 12


def described(notes: Sequence[str]) -> str:
    """A file's description: its first notes, in one line."""
    return "; ".join(note.rstrip(".;") for note in notes[:3])


def united(stored: Episode, new: Episode) -> Episode:
    """``new`` laid over ``stored`` (the same derived memory): list fields united, the richer
    description kept, the earlier time kept."""
    old, fresh = stored.data, new.data
    if not isinstance(old, dict) or not isinstance(fresh, dict):
        return new
    body: dict[str, Any] = {**old, **fresh}
    for name in _UNITED:
        if isinstance(old.get(name), list) and isinstance(fresh.get(name), list):
            body[name] = _union(old[name], fresh[name], newest=name == "sessions")
    if isinstance(old.get("description"), str) and isinstance(fresh.get("description"), str):
        # What was said of a file is richer than a description made up without it, and the
        # union of what two sessions said is richer than either.
        notes = body.get("notes")
        said = [n for n in notes if isinstance(n, str)] if isinstance(notes, list) else []
        body["description"] = described(said) if said else max(
            fresh["description"], old["description"], key=len)
    if isinstance(old.get("changed"), bool):
        body["changed"] = old["changed"] or bool(fresh.get("changed"))
    return new.model_copy(update={"body": json_read.dumps(body),
                                  "created_at": min(stored.created_at, new.created_at)})


def _union(first: list[Any], second: list[Any], *, newest: bool) -> list[Any]:
    """Both lists' items once each, at most ``_MAX_UNITED``: the first ones (what was learned
    first is kept), or with ``newest`` the latest (the sessions that met it last)."""
    out = list(first)
    for item in second:
        if item not in out:
            out.append(item)
    return out[-_MAX_UNITED:] if newest else out[:_MAX_UNITED]
