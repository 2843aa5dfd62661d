"""The model without pydantic (``backends.values``): the same rules, the same JSON, the same
errors' shape (``field: problem; ...`` in one ``InvalidEpisode``), frozen and hashable."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends.errors import InvalidEpisode
from backends.model import Episode, Hit, Receipt

VALID: dict[str, Any] = {"id": "ep-1", "group_id": "g", "kind": "gotcha", "name": "a name",
                         "body": "a body", "created_at": datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)}

instants = st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9000, 1, 1),
                        timezones=st.sampled_from([UTC, timezone(timedelta(hours=-7))]))
episodes = st.builds(
    Episode.create,
    group_id=st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True),
    kind=st.from_regex(r"[a-z0-9][a-z0-9_.-]{0,10}", fullmatch=True),
    name=st.text(st.characters(min_codepoint=32, exclude_categories=["Cs"]), min_size=1,
                 max_size=40).filter(str.strip),
    body=st.text(st.characters(min_codepoint=1, exclude_categories=["Cs"])),
    created_at=instants,
    valid_at=st.none() | instants,
)


@given(episodes)
def test_an_episode_survives_its_json_and_equals_its_copy(episode: Episode) -> None:
    assert Episode.model_validate_json(episode.model_dump_json()) == episode
    assert Episode.model_validate(episode.model_dump(mode="json")) == episode
    assert episode.model_copy() == episode and hash(episode.model_copy()) == hash(episode)
    assert pickle.loads(pickle.dumps(episode)) == episode
    assert episode.created_at.tzinfo is UTC


def test_the_json_is_the_one_pydantic_wrote() -> None:
    # Files written before keep their bytes, and so their content hashes.
    episode = Episode.parse(**VALID, valid_at="2025-01-02T05:04:05.25+02:00")
    assert episode.to_json() == {
        "id": "ep-1", "group_id": "g", "kind": "gotcha", "name": "a name", "body": "a body",
        "source": "api", "created_at": "2025-01-02T03:04:05Z",
        "valid_at": "2025-01-02T03:04:05.250000Z", "invalid_at": None,
    }
    hit = Hit(episode=episode, score=1, layer="file")
    assert hit.model_dump(mode="json") == {"episode": episode.to_json(), "score": 1.0,
                                           "layer": "file"}
    assert orjson.loads(Receipt(id="ep-1", layer="file", location="x").model_dump_json()) == {
        "id": "ep-1", "layer": "file", "location": "x", "pending": False}


@pytest.mark.parametrize(("change", "message"), [
    ({"id": 5}, "id: Input should be a valid string"),
    ({"id": "-x"}, "id: use 1-128 characters"),
    ({"group_id": "a b"}, "group_id: use 1-128 characters"),
    ({"kind": "Gotcha"}, "kind: use 1-64 characters"),
    ({"name": "two\nlines"}, "name: must be one line"),
    ({"body": "nul \x00"}, "body: contains a NUL character"),
    ({"body": "lone \udc80"}, "body: is not valid UTF-8"),
    ({"created_at": "yesterday"}, "created_at: Input should be a valid datetime"),
    ({"created_at": None}, "created_at: Input should be a valid datetime"),
    ({"valid_at": [2025]}, "valid_at: Input should be a valid datetime"),
    ({"colour": "red"}, "colour: Extra inputs are not permitted"),
])
def test_each_broken_rule_is_named(change: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidEpisode, match=message.replace("\\", "\\\\")):
        Episode.parse(**(VALID | change))


def test_every_problem_is_named_at_once() -> None:
    fields = {k: v for k, v in VALID.items() if k != "body"} | {"kind": "", "extra": 1}
    with pytest.raises(InvalidEpisode) as caught:
        Episode.parse(**fields)
    assert str(caught.value).split("; ") == [
        "body: Field required", "kind: use 1-64 characters of a-z 0-9 _ . - starting with a "
        "letter or digit", "extra: Extra inputs are not permitted"]


@pytest.mark.parametrize("score", [-0.1, 1.5, float("nan"), "high", True])
def test_a_hit_scores_within_zero_and_one(score: object) -> None:
    with pytest.raises(InvalidEpisode, match="score"):
        Hit(episode=Episode.parse(**VALID), score=score, layer="file")  # type: ignore[arg-type]


def test_a_value_is_frozen() -> None:
    episode = Episode.parse(**VALID)
    with pytest.raises(AttributeError, match="frozen"):
        episode.body = "changed"
    assert episode.model_copy(update={"body": "changed"}).body == "changed"
    assert episode.body == "a body"
