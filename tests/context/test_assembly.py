"""Assembly behaviour on every layer: the budget is never exceeded (a property over random
tasks and stores), overrides, deduplication, validity, spec groups, shared searches, clipping,
and the coach's prompt."""

from __future__ import annotations

import asyncio
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from context_corpus import MEMORIES, PROJECT
from every_layer import examples, open_layer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.model import Episode, Hit, now
from backends.protocol import MemoryBackend
from memory.agent.decisions import Adr, record_adr, supersede_adr
from memory.agent.memories import AgentMemory
from memory.agent.scopes import GOTCHA, PATTERN, TASK_OUTCOME
from memory.agent.turns import TurnState, record_turn
from memory.context import Category, Phase, Task, build_coach_prompt, build_context
from memory.context.retrieval import KINDS
from memory.context.tokens import estimate_tokens
from seeds import Overrides

from .conftest import fill

C = Category
WORDS = ["auth", "session", "middleware", "tool", "server", "ping", "cache", "retry",
         "implement", "fix", "数据库", "naïve", "x" * 40, "{json}", "ADR-7", "2026"]
KINDS_WRITTEN = [k for kinds in KINDS.values() for k in kinds] + [TASK_OUTCOME]

text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
long_text = st.one_of(text, st.text(
    st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=3000
).filter(str.strip))


@st.composite
def episodes(draw: st.DrawFn) -> Episode:
    kind = draw(st.sampled_from(KINDS_WRITTEN))
    body: str | dict[str, object] = draw(long_text)
    if kind == TASK_OUTCOME:
        body = {"task_id": draw(text), "success": draw(st.booleans()), "outcome": body,
                "description": draw(text), "turns": draw(st.integers(1, 9))}
    return Episode.create(group_id=PROJECT, kind=kind, name=draw(text), body=body)


tasks = st.builds(
    Task,
    id=st.sampled_from(["TASK-1", "TASK-2"]),
    description=text,
    task_type=st.sampled_from(["implementation", "review", "planning", "refine", "docs", "x"]),
    complexity=st.integers(1, 10),
    feature_id=st.sampled_from([None, "FEAT-1"]),
    refinement_attempt=st.integers(0, 2),
    last_failure_type=st.sampled_from([None, "tests_failed"]),
    is_autobuild=st.booleans(),
    current_actor=st.sampled_from(["player", "coach"]),
    turn_number=st.integers(0, 4),
)


def test_context_never_exceeds_its_budget(layer: str) -> None:
    # One store per example: the profile's examples on the files, fewer where an open costs a
    # database's (the budget's arithmetic is the same; only the hits differ by layer).
    @settings(max_examples=examples(layer), suppress_health_check=[HealthCheck.too_slow])
    @given(
        task=tasks,
        phase=st.sampled_from(Phase),
        stored=st.lists(episodes(), max_size=8),
        turns=st.integers(0, 3),
        tokens=st.one_of(st.none(), st.integers(0, 400)),
    )
    def holds(
        task: Task, phase: Phase, stored: list[Episode], turns: int, tokens: int | None
    ) -> None:
        asyncio.run(scenario(layer, task, phase, stored, turns, tokens))

    holds()


async def scenario(
    layer: str, task: Task, phase: Phase, stored: list[Episode], turns: int, tokens: int | None
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with open_layer(layer, Path(folder)) as store:
            await fill(store, stored)
            for n in range(1, turns + 1):
                await record_turn(store, PROJECT, TurnState.model_validate({
                    "feature_id": "FEAT-1", "task_id": "TASK-1", "turn": n,
                    "coach_decision": "revise", "coach_feedback": " ".join(WORDS * n),
                    "progress_summary": "x" * 500,
                }))
            result = await build_context(
                store, task, phase=phase, project_id=PROJECT, tokens=tokens
            )
    assert estimate_tokens(result.markdown) == result.tokens_used <= result.budget
    if tokens is not None:
        assert result.budget == tokens
    for stats in result.categories.values():
        assert stats.used <= stats.allocated + stats.borrowed
        assert (stats.kept > 0) == (stats.used > 0)
    # The memories it names are the ones its blocks show: one per kept block, each once.
    for category, shown in result.memories.items():
        assert len(shown) == result.categories[category].kept
    named = [episode.id for shown in result.memories.values() for episode in shown]
    assert len(named) == len(set(named)) and set(named) <= {e.id for e in stored}
    every = result.categories.values()
    assert sum(s.allocated for s in every) <= result.budget
    # What a category borrows, others left unused: the sum stays within the allocations.
    assert sum(s.used for s in every) <= sum(s.allocated for s in every)


async def test_tiny_budgets_give_an_empty_context(store: MemoryBackend) -> None:
    await fill(store, MEMORIES.values())
    task = Task(description="Fix authentication middleware")
    for tokens in (0, 1, 30):
        result = await build_context(store, task, project_id=PROJECT, tokens=tokens)
        assert result.markdown == "" and result.tokens_used == 0
    # 120 tokens split six ways leave no category room for its title and a memory on its own;
    # what they leave unused goes to the largest share with more to show (patterns here).
    split = await build_context(store, task, project_id=PROJECT, tokens=120)
    patterns = split.categories[C.PATTERNS]
    assert patterns.allocated < 40 and patterns.kept == 1 and patterns.borrowed > 0
    assert "### Recommended patterns" in split.markdown and 0 < split.tokens_used <= 120
    # ... given to one category, they hold a memory, clipped to fit.
    one = await build_context(store, task, project_id=PROJECT, tokens=120, shares={C.WARNINGS: 1})
    assert "### Warnings from past experience" in one.markdown
    assert 0 < one.tokens_used <= 120


async def test_empty_store_gives_system_knowledge_only(store: MemoryBackend) -> None:
    plain = await build_context(store, Task(description="Add a ping tool"), project_id=PROJECT)
    assert plain.markdown == "" and plain.tokens_used == 0 and plain.budget == 5200
    player = await build_context(
        store, Task(description="Add a ping tool", is_autobuild=True), project_id=PROJECT
    )
    assert "### Role constraints: player" in player.markdown
    assert "### Quality-gate thresholds" in player.markdown
    assert "### Implementation mode" in player.markdown
    assert "### Previous turns" not in player.markdown


async def test_shares_override_the_split(store: MemoryBackend) -> None:
    await fill(store, MEMORIES.values())
    task = Task(description="Fix authentication middleware")
    result = await build_context(store, task, project_id=PROJECT, shares={C.WARNINGS: 1})
    assert set(result.categories) == {C.WARNINGS}
    assert "### Warnings from past experience" in result.markdown
    assert "### Recommended patterns" not in result.markdown


async def test_a_memory_appears_once(store: MemoryBackend) -> None:
    same = "Close the session store before the event loop shuts down"
    await fill(store, [
        Episode.create(group_id=PROJECT, kind=PATTERN, name="Session store", body=same),
        Episode.create(group_id=PROJECT, kind=GOTCHA, name="Session store", body=same),
    ])
    # The same pattern recorded in two specs: two memories, one text.
    for spec in ("001-sessions", "002-shutdown"):
        await AgentMemory(store, PROJECT, spec).add_pattern(same)
    task = Task(description="Close the session store", feature_id="FEAT-9")
    result = await build_context(store, task, project_id=PROJECT)
    assert result.markdown.count(same) == 1
    # The pattern went to the larger allocation (patterns 30% beat warnings 20% here).
    assert "### Recommended patterns" in result.markdown
    [shown] = result.memories.values()  # and the result names the one it showed
    assert [same in episode.body for episode in shown] == [True]
    assert "### Warnings from past experience" not in result.markdown


async def test_every_spec_is_read_from_the_project_group(store: MemoryBackend) -> None:
    # Specs' memories live in the project's group (the importer's rule), told apart by "spec";
    # a task names its feature, but no spec group is searched.
    refunds = AgentMemory(store, PROJECT, "001-refunds")
    await refunds.add_pattern("Export endpoints paginate refunds by cursor, never by offset")
    task = Task(description="Add paginated refund exports", feature_id="001-refunds")
    result = await build_context(store, task, project_id=PROJECT)
    assert "paginate refunds by cursor" in result.markdown


async def test_superseded_decisions_are_left_out(store: MemoryBackend) -> None:
    await record_adr(store, PROJECT, Adr(adr_id="ADR-1", title="Sessions in memcached",
                                         decision="Keep user sessions in memcached"))
    await supersede_adr(store, PROJECT, "ADR-1", Adr(
        adr_id="ADR-2", title="Sessions in Redis", decision="Keep user sessions in Redis"))
    task = Task(description="Keep user sessions")
    result = await build_context(store, task, project_id=PROJECT)
    assert "Sessions in Redis" in result.markdown and "memcached" not in result.markdown
    earlier = await build_context(store, task, project_id=PROJECT, at=now() - timedelta(days=1))
    assert "Sessions in memcached" in earlier.markdown


async def test_long_memories_are_clipped_to_fit(store: MemoryBackend) -> None:
    await store.upsert(Episode.create(
        group_id=PROJECT, kind=GOTCHA, name="Session locking",
        body="Session locking: " + "the session store serialises writers; " * 2000,
    ))
    result = await build_context(store, Task(description="session locking"), project_id=PROJECT)
    warnings = result.categories[C.WARNINGS]
    assert warnings.kept == 1 and warnings.used <= warnings.allocated
    assert "…" in result.markdown and result.tokens_used <= result.budget
    tight = await build_context(
        store, Task(description="session locking"), project_id=PROJECT, tokens=400
    )
    assert "Session locking" in tight.markdown and tight.tokens_used <= 400


class Counting:
    """The real store, recording the text and kinds of every search that reaches it."""

    def __init__(self, inner: MemoryBackend) -> None:
        self.inner = inner
        self.layer = inner.layer
        self.searches: list[tuple[str, frozenset[str]]] = []

    async def search(self, query: str, **filters: Any) -> list[Hit]:  # passed on as they came
        self.searches.append((query, frozenset(filters.get("kinds") or ())))
        return await self.inner.search(query, **filters)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


async def test_every_category_shares_one_search_per_text(store: MemoryBackend) -> None:
    await fill(store, MEMORIES.values())
    counting = Counting(store)
    task = Task(description="Fix authentication middleware", feature_id="FEAT-AUTH-002")
    await build_context(counting, task, project_id=PROJECT)  # type: ignore[arg-type]
    every_kind = {kind for kinds in KINDS.values() for kind in kinds}
    texts = [query for query, kinds in counting.searches if kinds == every_kind]
    # the subject, the feature's own subject, the known query: one search each, every kind;
    # besides, at most the two expanders' and the analysis' (similar outcomes) searches
    assert len(texts) == len(set(texts)) == 3
    assert len(counting.searches) <= len(texts) + 3


async def test_coach_prompt(store: MemoryBackend) -> None:
    await record_turn(store, PROJECT, TurnState.model_validate({
        "feature_id": "FEAT-1", "task_id": "TASK-4", "turn": 1, "coach_decision": "revise",
        "coach_feedback": "Missing tests for error paths", "progress_summary": "login works",
        "acceptance_criteria": {"login": "met", "logout": "unmet"},
    }))
    overrides = Overrides.model_validate({
        "roles": {"coach": {"must_do_additions": ["Verify regulatory alignment"]}},
        "quality_gates": {"feature": {"4-6": {"coverage_threshold": 0.85}}},
    })
    task = Task(id="TASK-4", description="Implement user auth", complexity=5,
                feature_id="FEAT-1", is_autobuild=True, current_actor="coach", turn_number=2)
    prompt = await build_coach_prompt(store, task, project_id=PROJECT, overrides=overrides)
    # FEAT-GE-001's injected format, as the design writes it, with the task's complexity.
    assert prompt.startswith("## Your Role: Coach\nYou MUST: ")
    assert "| Verify regulatory alignment\n" in prompt
    assert "You MUST NOT: Write or modify implementation code |" in prompt
    assert ("## Quality Gates for This Task\nTask type: feature | Complexity: 5\n"
            "Architecture review: required (threshold: 60)\n"
            "Coverage: required (threshold: 85%)\nTests: required, must pass\n"
            "DO NOT adjust these thresholds during this session.\n") in prompt
    assert "## Previous Turn Context (Turn 1 of 2)\n\nProgress: login works\n" in prompt
    assert "AC status: {login: met, logout: unmet}\nBlockers: None\n" in prompt
    assert "Coach decision: REVISE — Missing tests for error paths\n" in prompt
    first = await build_coach_prompt(
        store, task.model_copy(update={"turn_number": 1}), project_id=PROJECT
    )
    assert "Previous Turn Context" not in first and "Coverage: required (threshold: 80%)" in first


def test_json_document_shape(tmp_path: Path) -> None:
    async def run() -> dict[str, object]:
        async with open_layer("file", tmp_path / "s") as store:
            await fill(store, MEMORIES.values())
            result = await build_context(store, Task(description="Fix auth"), project_id=PROJECT)
            return result.to_json()

    doc = asyncio.run(run())
    assert set(doc) == {"task_id", "tokens_used", "budget", "analysis", "categories", "memories",
                        "markdown"}
    categories, memories = doc["categories"], doc["memories"]
    assert isinstance(categories, dict) and set(categories["warnings"]) == {
        "share", "allocated", "used", "candidates", "kept", "borrowed"
    }
    assert isinstance(memories, dict) and memories
    for category, shown in memories.items():
        assert len(shown) == categories[category]["kept"]
        for memory in shown:
            assert set(memory) == {"id", "group_id", "kind", "name"}
            if memory["kind"] != TASK_OUTCOME:  # an outcome is shown by its task's id
                assert memory["name"][:20] in str(doc["markdown"])


