"""The unit of memory: an ``Episode``, the same in every layer; a search ``Hit``; a write
``Receipt``.

Times are timezone-aware UTC. A naive datetime is taken to be UTC already (documented in
FORMAT.md); an aware one in another zone is converted, so both layers store the same instant.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime

from backends.builtin_hashes import uuid5
from backends.errors import InvalidEpisode
from backends.lean_typing import TYPE_CHECKING
from backends.patterns import lazy
from backends.texts import json_body
from backends.values import REQUIRED, Value, check_text, instant

if TYPE_CHECKING:  # pydantic is no import of ours at run time: see backends.values
    from typing import Any, ClassVar

    from pydantic import ValidationError

GROUP_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")  # graphiti's own rule
EPISODE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
KIND = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
MAX_NAME_CHARS = 300
DEFAULT_MAX_BODY_BYTES = 1 << 20
_CONTROL = re.compile(r"[\x00-\x1f]")
NOT_UTF8 = "is not valid UTF-8 text (it holds a lone surrogate)"
_WORD = lazy(r"\w+")

# Fixed forever: stable ids of keyed memories are derived from it
# (uuid.UUID("5f0c3a8e-6f43-4d0e-9a57-3c1d0c4d6a11").bytes).
_ID_NAMESPACE = bytes.fromhex("5f0c3a8e6f434d0e9a573c1d0c4d6a11")


def stable_id(group_id: str, kind: str, key: str) -> str:
    """The id of the memory with natural key ``key``: re-writing it updates, never duplicates.
    Raises ``InvalidEpisode`` for text that is not UTF-8 (a lone surrogate)."""
    name = f"{group_id}\x1f{kind}\x1f{key}"
    if not is_utf8(name):
        raise InvalidEpisode(f"key {key!r} of group {group_id!r}, kind {kind!r}: {NOT_UTF8}")
    return uuid5(_ID_NAMESPACE, name.encode())


def _dumped(body: dict[str, Any] | list[Any]) -> str:
    import orjson  # a write's: reads (and a body given as text) need not load it

    try:
        return orjson.dumps(body).decode()
    except orjson.JSONEncodeError as exc:  # nested too deep, or not JSON data (a set...)
        raise InvalidEpisode(f"body: cannot be written as JSON ({exc})") from None


def is_utf8(text: str) -> bool:
    """False for text holding a lone surrogate: what Python makes of a byte that is not UTF-8
    (on a command line, in a file name), which can be neither stored nor printed as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_filters(group_ids: Iterable[str] | None, kinds: Iterable[str] | None) -> None:
    """``InvalidEpisode`` for a group or kind to filter by that is not UTF-8 text (a lone
    surrogate): no memory can have it, and the engines cannot take it (Kùzu's binding refused
    it with an error that read as a damaged database)."""
    for field, values in (("group_ids", group_ids), ("kinds", kinds)):
        for value in values or ():
            if not is_utf8(value):
                raise InvalidEpisode(f"{field}: {value!r} {NOT_UTF8}")


def natural_key(text: str) -> str:
    """The key of a free-text memory (a pattern, a gotcha): case, spacing and punctuation do not
    make a new memory. Every writer of such memories keys them with it (the API, the Auto-Claude
    importer, a bullet typed into patterns.md), so the same text is one memory whoever wrote it."""
    return " ".join(_WORD().findall(text.casefold()))


def utc(value: datetime) -> datetime:
    """The same instant as an aware UTC datetime; a naive value is read as UTC. Raises
    ``InvalidEpisode`` when that instant is outside the calendar (year 1 at +14:00)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise InvalidEpisode(f"{value.isoformat()} is out of range once converted to UTC") from None


def now() -> datetime:
    return datetime.now(UTC)


def check_group_id(group_id: str) -> str:
    if not isinstance(group_id, str) or not GROUP_ID.fullmatch(group_id):
        raise InvalidEpisode(
            f"invalid group id {group_id!r}: use 1-128 characters of A-Z a-z 0-9 _ -"
        )
    return group_id


def problems(exc: ValidationError) -> str:
    """pydantic's error as one line: ``field: problem`` per problem (just the problem when it
    is with the value as a whole), joined by ``; ``."""
    return "; ".join(
        f"{'.'.join(map(str, error['loc']))}: {error['msg']}" if error["loc"] else error["msg"]
        for error in exc.errors()
    )


class Episode(Value):
    """One memory. Structured memories carry JSON text in ``body``; ``data`` parses it."""

    __slots__ = (
        "body",
        "created_at",
        "group_id",
        "id",
        "invalid_at",
        "kind",
        "name",
        "source",
        "valid_at",
    )
    model_fields: ClassVar[dict[str, object]] = {
        "id": REQUIRED, "group_id": REQUIRED, "kind": REQUIRED, "name": REQUIRED,
        "body": REQUIRED, "source": "api", "created_at": REQUIRED, "valid_at": None,
        "invalid_at": None,
    }
    _factories: ClassVar[dict[str, Callable[[], object]]] = {"created_at": now}

    id: str
    group_id: str
    kind: str
    name: str
    body: str
    source: str
    created_at: datetime
    valid_at: datetime | None
    invalid_at: datetime | None

    if TYPE_CHECKING:  # the fields, for the type checker (``Value`` takes them as keywords)
        def __init__(self, *, id: str, group_id: str, kind: str, name: str, body: str,
                     source: str = "api", created_at: datetime | None = None,
                     valid_at: datetime | None = None,
                     invalid_at: datetime | None = None) -> None: ...

    def _checked(self, values: dict[str, Any], errors: list[str]) -> dict[str, Any]:
        rules = (("id", EPISODE_ID, "use 1-128 characters of A-Z a-z 0-9 _ . : -, the first "
                  "alphanumeric"),
                 ("group_id", GROUP_ID, "use 1-128 characters of A-Z a-z 0-9 _ -"),
                 ("kind", KIND, "use 1-64 characters of a-z 0-9 _ . - starting with a letter "
                  "or digit"),
                 ("source", KIND, "use 1-64 characters of a-z 0-9 _ . - starting with a letter "
                  "or digit"))
        for name, pattern, rule in rules:
            if check_text(values, name, errors) and not pattern.fullmatch(values[name]):
                errors.append(f"{name}: {rule}")
        if check_text(values, "name", errors):
            value = values["name"]
            # A name is one Markdown line and one JSON field: control characters would break
            # both.
            if not value.strip() or len(value) > MAX_NAME_CHARS or _CONTROL.search(value):
                errors.append(f"name: must be one line of 1-{MAX_NAME_CHARS} characters")
            elif not is_utf8(value):
                errors.append(f"name: {NOT_UTF8}")
        if check_text(values, "body", errors):
            if not is_utf8(values["body"]):
                errors.append(f"body: {NOT_UTF8}")
            elif "\x00" in values["body"]:
                errors.append("body: contains a NUL character")
        for name in ("created_at", "valid_at", "invalid_at"):
            value = values.get(name)
            if value is None and name != "created_at":
                continue
            try:
                values[name] = utc(instant(value))
            except ValueError as exc:  # InvalidEpisode is one too
                errors.append(f"{name}: {exc}")
        return values

    @classmethod
    def parse(cls, **fields: Any) -> Episode:
        """Build an episode, turning pydantic's error into ``InvalidEpisode``."""
        return cls(**fields)

    @classmethod
    def create(
        cls,
        *,
        group_id: str,
        kind: str,
        name: str,
        body: str | dict[str, Any] | list[Any],
        key: str | None = None,
        **fields: Any,
    ) -> Episode:
        """A new episode; with ``key`` its id is stable (uuid5 of group, kind and key)."""
        check_group_id(group_id)
        text = body if isinstance(body, str) else _dumped(body)
        if key is not None:
            episode_id = stable_id(group_id, kind, key)
        else:
            import uuid  # loads platform: only a memory without a key mints a random id

            episode_id = str(uuid.uuid4())
        return cls.parse(
            id=episode_id, group_id=group_id, kind=kind, name=name, body=text, **fields
        )

    @property
    def data(self) -> Any:
        """The parsed JSON body of a structured memory, or None for plain text."""
        return json_body(self.body)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def content_hash(self) -> str:
        """A digest of every field: equal hashes mean equal memories, in any layer."""
        import hashlib  # loads OpenSSL (~5 ms): only migration and checks hash

        import orjson

        return hashlib.sha256(orjson.dumps(self.to_json(), option=orjson.OPT_SORT_KEYS)).hexdigest()


def ensure_body_fits(episode: Episode, max_body_bytes: int) -> None:
    """Raise ``InvalidEpisode`` unless the body is within the limit and every text field is UTF-8
    (an episode built with ``model_construct`` skipped the model's own rules)."""
    texts = (episode.id, episode.group_id, episode.kind, episode.name, episode.source)
    if not all(is_utf8(text) for text in texts):
        raise InvalidEpisode(f"episode {episode.id!r}: a text field {NOT_UTF8}")
    try:
        size = len(episode.body.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidEpisode(f"episode {episode.id!r}: body {NOT_UTF8}") from None
    if size > max_body_bytes:
        raise InvalidEpisode(f"body of {size} bytes is over the limit of {max_body_bytes} bytes")


class Hit(Value):
    """A search result: the episode, its relevance ``score`` in [0, 1], the layer that answered."""

    __slots__ = ("episode", "layer", "score")
    model_fields: ClassVar[dict[str, object]] = {
        "episode": REQUIRED, "score": REQUIRED, "layer": REQUIRED}

    episode: Episode
    score: float
    layer: str

    if TYPE_CHECKING:
        def __init__(self, *, episode: Episode, score: float, layer: str) -> None: ...

    def _checked(self, values: dict[str, Any], errors: list[str]) -> dict[str, Any]:
        episode = values.get("episode")
        if isinstance(episode, Mapping):
            values["episode"] = Episode.model_validate(episode)
        elif "episode" in values and not isinstance(episode, Episode):
            errors.append("episode: Input should be an Episode")
        score = values.get("score")
        if isinstance(score, int | float) and not isinstance(score, bool):
            values["score"] = float(score)
            if not 0.0 <= score <= 1.0:
                errors.append("score: Input should be between 0 and 1")
        elif "score" in values:
            errors.append("score: Input should be a valid number")
        check_text(values, "layer", errors)
        return values


class Receipt(Value):
    """Proof that a write is durable: which layer took it, and where it lies."""

    __slots__ = ("id", "layer", "location", "pending")
    model_fields: ClassVar[dict[str, object]] = {
        "id": REQUIRED, "layer": REQUIRED, "location": REQUIRED, "pending": False}

    id: str
    layer: str
    location: str
    pending: bool

    if TYPE_CHECKING:
        def __init__(self, *, id: str, layer: str, location: str,
                     pending: bool = False) -> None: ...

    def _checked(self, values: dict[str, Any], errors: list[str]) -> dict[str, Any]:
        for name in ("id", "layer", "location"):
            check_text(values, name, errors)
        if not isinstance(values.get("pending"), bool):
            errors.append("pending: Input should be a valid boolean")
        return values
