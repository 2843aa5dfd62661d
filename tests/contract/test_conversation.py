"""Conversation order in search (``backends.threads``), on every layer: a turn's neighbours join
a search that matches it, even when they share no word with the question; memories that are
not turns of a conversation rank as before."""

from __future__ import annotations

from datetime import timedelta

from backends.model import Episode
from backends.protocol import MemoryBackend, upsert_all
from contract.episodes import BASE_TIME, make

QUESTION = "What did Priya bake?"
# One session: every turn has the session's time (as an imported conversation has), so the
# turn number in the id orders them; turn 10 follows turn 9, not turn 1.
LINES = [
    "I went hiking on Saturday with my cousins",
    "Sounds lovely, was the weather kind?",
    "Sunny all day. How about your weekend?",
    "Quiet, I stayed home",
    "Did you finish anything?",
    "Yes, one thing I am proud of",
    "Tell me!",
    "Guess",
    "A scarf?",
    "Oh wait, what did you bake, Priya? You mentioned an oven",
    "A lemon tart with berries, my first one",
    "Beautiful. Send me a photo",
]
REPLY = "conv:D1:10"


def turns(kind: str = "dialog_turn", session: str = "D1") -> list[Episode]:
    return [make(0, id=f"conv:{session}:{n}", kind=kind, group_id="talks",
                 name=f"session {session} turn {n}", body=line, created_at=BASE_TIME)
            for n, line in enumerate(LINES)]


def other_session() -> list[Episode]:
    later = BASE_TIME + timedelta(days=3)
    return [make(0, id=f"conv:D2:{n}", kind="dialog_turn", group_id="talks", name=f"D2 {n}",
                 body=body, created_at=later)
            for n, body in enumerate(["I bake every morning now",
                                      "Lucky you, my garden takes all my time"])]


async def ranked(store: MemoryBackend, query: str = QUESTION) -> list[str]:
    return [hit.episode.id for hit in await store.search(query, group_ids=["talks"], limit=10)]


async def test_the_reply_to_a_matching_turn_is_found(store: MemoryBackend) -> None:
    await upsert_all(store, turns())
    found = await ranked(store)
    assert found[0] == "conv:D1:9"
    # The reply shares no word with the question; the turns up to two before and after the
    # match come along, nearer ones first, and no further one.
    assert found[1:] == [REPLY, "conv:D1:8", "conv:D1:11", "conv:D1:7"]


async def test_the_turn_after_a_question_counts_more_than_the_one_before(
        store: MemoryBackend) -> None:
    await upsert_all(store, turns())
    found = await ranked(store, "finish anything")
    # The match asks ("Did you finish anything?"): its reply, then the turn before it, then
    # the turns two away (the reply's own next turn at the reply's share times the usual one).
    assert found[:5] == ["conv:D1:4", "conv:D1:5", "conv:D1:3", "conv:D1:6", "conv:D1:2"]


async def test_neighbours_stay_within_their_session(store: MemoryBackend) -> None:
    await upsert_all(store, [*turns(), *other_session()])
    # Not the last turns of the session before (D1:11, D1:10): they are another thread.
    assert await ranked(store, "every morning") == ["conv:D2:0", "conv:D2:1"]


async def test_memories_that_are_not_turns_rank_as_before(store: MemoryBackend) -> None:
    # turn_state is a coding memory (a task's state), not a turn of a conversation.
    await upsert_all(store, turns(kind="turn_state") + turns(kind="note", session="N"))
    found = await ranked(store)
    assert "conv:D1:10" not in found and "conv:N:10" not in found


async def test_a_deleted_turn_leaves_its_neighbours_adjacent(store: MemoryBackend) -> None:
    await upsert_all(store, turns())
    await store.delete(REPLY)
    found = await ranked(store)
    assert REPLY not in found
    assert "conv:D1:11" in found  # now the turn after the match
