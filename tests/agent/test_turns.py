"""Turn states: deterministic ids, exact loading by turn number and time, retention."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from backends.model import stable_id
from backends.protocol import MemoryBackend, upsert_all
from memory.agent.scopes import TURN_STATE, turn_states_group
from memory.agent.turns import (
    Retention,
    TurnState,
    feature_turns,
    latest_turn,
    previous_turn,
    prune_turns,
    record_turn,
    retention_status,
    turn_id,
)

PROJECT = "proj-1"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def state(feature: str, task: str, turn: int, minute: int, **fields: object) -> TurnState:
    # By the aliases (``turn``, ``recorded_at``), which only validation knows.
    return TurnState.model_validate({
        "feature_id": feature, "task_id": task, "turn": turn,
        "recorded_at": T0 + timedelta(minutes=minute), **fields,
    })


def test_turn_id_is_deterministic() -> None:
    assert turn_id("FEAT-1", "TASK-3", 2) == "TURN-FEAT-1-TASK-3-T2"
    first = state("FEAT-1", "TASK-3", 2, 0).to_episode(PROJECT)
    again = state("FEAT-1", "TASK-3", 2, 9, coach_decision="approve").to_episode(PROJECT)
    assert first.id == again.id == stable_id(
        turn_states_group(PROJECT), TURN_STATE, "TURN-FEAT-1-TASK-3-T2"
    )
    assert first.group_id == "proj-1__turn_states"


async def test_turn_2_gets_turn_1_and_turn_1_gets_none(store: MemoryBackend) -> None:
    assert await previous_turn(store, PROJECT, "FEAT-1", "TASK-1", 1) is None
    one = state(
        "FEAT-1", "TASK-1", 1, 0, player_decision="implemented the parser",
        coach_decision="revise", coach_feedback="missing tests for empty input",
        blockers=("flaky fixture",), acceptance_criteria={"parses empty input": "unmet"},
        mode="autobuild", gate_results={"coverage": 61.5, "tests_passed": False},
    )
    await record_turn(store, PROJECT, one)
    assert await previous_turn(store, PROJECT, "FEAT-1", "TASK-1", 1) is None
    assert await previous_turn(store, PROJECT, "FEAT-1", "TASK-1", 2) == one
    assert await latest_turn(store, PROJECT, "FEAT-1") == one
    two = state("FEAT-1", "TASK-1", 2, 5, coach_decision="approve")
    await record_turn(store, PROJECT, two)
    assert await latest_turn(store, PROJECT, "FEAT-1", "TASK-1") == two
    assert await previous_turn(store, PROJECT, "FEAT-1", "TASK-1", 3) == two
    assert await latest_turn(store, PROJECT, "FEAT-2") is None


async def test_latest_is_exact_by_turn_number_then_time(store: MemoryBackend) -> None:
    # Turn 3 of TASK-1 carries an earlier time than its turn 2 (a clock step back): within a
    # task the turn number decides. Across tasks, the newer record is the latest.
    for item in [
        state("F", "TASK-1", 2, 10), state("F", "TASK-1", 3, 5), state("F", "TASK-1", 1, 1),
        state("F", "TASK-2", 1, 20), state("G", "TASK-9", 7, 30),
    ]:
        await record_turn(store, PROJECT, item)
    assert [s.turn for s in await feature_turns(store, PROJECT, "F", "TASK-1")] == [1, 2, 3]
    assert (await latest_turn(store, PROJECT, "F", "TASK-1")).turn == 3  # type: ignore[union-attr]
    latest = await latest_turn(store, PROJECT, "F")
    assert latest is not None and (latest.task_id, latest.turn) == ("TASK-2", 1)
    # Recording a turn again replaces it.
    await record_turn(store, PROJECT, state("F", "TASK-2", 1, 21, coach_decision="escalate"))
    assert await store.count(group_ids=[turn_states_group(PROJECT)]) == 5
    assert (await latest_turn(store, PROJECT, "F")).coach_decision == "escalate"  # type: ignore[union-attr]


async def test_default_retention_is_50_per_feature_and_200_per_project(
    store: MemoryBackend,
) -> None:
    minute = 0
    turns = []
    for feature, count in [("A", 52), ("B", 50), ("C", 50), ("D", 52), ("E", 10)]:
        for n in range(1, count + 1):
            minute += 1
            status = "completed" if n == count and feature in "ABC" else "in_progress"
            turns.append(state(feature, "T", n, minute, feature_status=status))
    # One batch: what is pruned depends on the turns held, not on how they were written.
    await upsert_all(store, [turn.to_episode(PROJECT) for turn in turns])
    # A, completed, loses its two oldest to the feature cap; D is running and keeps its 52
    # (FEAT-GE-001: in-progress features are never pruned); then 212 > 200 takes A's next twelve.
    pruned = await prune_turns(store, PROJECT, Retention())
    assert pruned == [f"TURN-A-T-T{n}" for n in range(1, 15)]
    assert len(await feature_turns(store, PROJECT, "D")) == 52
    assert await store.count(group_ids=[turn_states_group(PROJECT)]) == 200


async def test_retention_never_prunes_a_running_feature(store: MemoryBackend) -> None:
    limits = Retention(per_feature=4, per_project=9)
    minute = 0

    async def turns(feature: str, count: int, *, completed: bool = False) -> None:
        nonlocal minute
        for n in range(1, count + 1):
            minute += 1
            status = "completed" if completed and n == count else "in_progress"
            await record_turn(store, PROJECT, state(feature, "T", n, minute, feature_status=status),
                              limits)

    await turns("DONE-OLD", 6, completed=True)  # completed: the feature cap keeps turns 3-6
    assert [s.turn for s in await feature_turns(store, PROJECT, "DONE-OLD")] == [3, 4, 5, 6]
    await turns("RUNNING", 6)  # in progress: over the feature cap, and keeps all six
    assert [s.turn for s in await feature_turns(store, PROJECT, "RUNNING")] == [1, 2, 3, 4, 5, 6]
    # 10 turns > 9: the oldest turn of the completed feature went, never the running one's.
    assert [s.turn for s in await feature_turns(store, PROJECT, "DONE-OLD")] == [4, 5, 6]
    await turns("DONE-NEW", 3, completed=True)
    assert await feature_turns(store, PROJECT, "DONE-OLD") == []
    assert [s.turn for s in await feature_turns(store, PROJECT, "DONE-NEW")] == [1, 2, 3]
    assert [s.turn for s in await feature_turns(store, PROJECT, "RUNNING")] == [1, 2, 3, 4, 5, 6]
    assert await store.count(group_ids=[turn_states_group(PROJECT)]) == 9


async def test_running_features_over_the_limits_are_kept_and_reported(
    store: MemoryBackend,
) -> None:
    limits = Retention(per_feature=2, per_project=4)
    for feature in ("A", "B"):
        for n in (1, 2, 3):
            await record_turn(store, PROJECT, state(feature, "T", n, n), limits)
    assert await store.count(group_ids=[turn_states_group(PROJECT)]) == 6
    found = await retention_status(store, PROJECT, limits)
    assert (found.turns, found.running_turns, found.running_over) == (6, 6, {"A": 3, "B": 3})
    assert found.over and found.over_project
    assert "over the limits" in found.describe() and "A: 3 turns, running" in found.describe()
    await record_turn(store, PROJECT, state("A", "T", 4, 9, feature_status="completed"), limits)
    # A completed: its cap keeps two, then the project (5 > 4) takes A's oldest remaining.
    assert [s.turn for s in await feature_turns(store, PROJECT, "A")] == [4]
    found = await retention_status(store, PROJECT, limits)
    assert (found.turns, found.running_over) == (4, {"B": 3})


async def test_the_project_limit_never_takes_running_features(store: MemoryBackend) -> None:
    for feature in ("A", "B", "C"):
        for n in (1, 2, 3):
            await store.upsert(state(feature, "T", n, n).to_episode(PROJECT))
    assert await prune_turns(store, PROJECT, Retention(per_feature=3, per_project=5)) == []
    await store.upsert(state("C", "T", 4, 9, feature_status="completed").to_episode(PROJECT))
    # C is over its own cap by one, then the project (9 > 5) takes C's remaining turns, oldest
    # first, and stops there: A and B are still running, so the project stays over its limit.
    pruned = await prune_turns(store, PROJECT, Retention(per_feature=3, per_project=5))
    assert pruned == ["TURN-C-T-T1", "TURN-C-T-T2", "TURN-C-T-T3", "TURN-C-T-T4"]
    assert await latest_turn(store, PROJECT, "C") is None
    for running in ("A", "B"):
        assert len(await feature_turns(store, PROJECT, running)) == 3
