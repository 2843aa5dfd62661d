"""Which memories are turns of a conversation, and where each stands in its thread."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from backends.model import Episode
from backends.threads import conversational, place


@pytest.mark.parametrize("kind", ["dialog_turn", "turn", "message", "chat_message",
                                  "slack.message", "utterance"])
def test_kinds_that_name_a_turn_or_a_message_are_conversational(kind: str) -> None:
    assert conversational(kind)


@pytest.mark.parametrize("kind", ["turn_state", "session_insight", "pattern", "gotcha",
                                  "task_outcome", "messages_digest", "return"])
def test_other_kinds_are_not(kind: str) -> None:
    assert not conversational(kind)


def turn(episode_id: str, kind: str = "dialog_turn", body: str = "b") -> Episode:
    return Episode.parse(id=episode_id, group_id="g", kind=kind, name="n", body=body,
                         created_at=datetime(2026, 1, 1, tzinfo=UTC))


def where(episode_id: str, kind: str = "dialog_turn") -> tuple[str, int, int, bool]:
    found = place(turn(episode_id, kind))
    assert found is not None
    return found


def test_a_final_number_in_the_id_is_the_turn_and_the_rest_its_thread() -> None:
    thread, _, number, _ = where("chat-7:s1:12")
    assert thread.endswith("chat-7:s1") and number == 12
    assert where("chat-7:s1:3")[0] == thread
    assert where("chat-7:s2:3")[0] != thread


def test_an_id_without_a_turn_number_joins_its_group_s_one_thread_of_the_kind() -> None:
    assert where("a1b2")[0] == where("x:y")[0] == where("x:" + "9" * 30)[0]  # too long a number
    assert where("a1b2")[0] != where("a1b2", kind="message")[0]
    assert where("a1b2")[2] == 0
    assert place(turn("a1b2", kind="note")) is None


@pytest.mark.parametrize(("body", "asks"), [("Did you go?", True), ("Did you go? \n", True),
                                            ("Why? I wondered", False), ("Yes.", False)])
def test_a_turn_that_ends_in_a_question_mark_asks(body: str, asks: bool) -> None:
    found = place(turn("c:1", body=body))
    assert found is not None and found[3] is asks
