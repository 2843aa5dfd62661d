"""The selection rules, one by one, on hand-made hits: fusion of the three queries, the
relative floors, spec coherence, one memory once, a file's share, and the spill of unused
budget up to the 95% stop (``memory.context.selection``, ``memory.context.assemble``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from backends.model import Episode, Hit
from backends.search.ranking import terms
from memory.agent.scopes import CODEBASE_DISCOVERY, GOTCHA, PATTERN
from memory.context import Category, Thresholds
from memory.context.assemble import FULL_PCT, _render
from memory.context.budget import Budget, normalize
from memory.context.format import Block
from memory.context.selection import (
    MAX_SPEC_WEIGHT,
    Candidate,
    Found,
    cohere,
    floor,
    fuse,
    select,
    slight,
    task_specs,
)
from memory.context.task import Task
from memory.context.tokens import estimate_tokens

C = Category
AT = datetime(2026, 12, 1, tzinfo=UTC)
LIMITS = Thresholds()


def memory(name: str, kind: str = PATTERN, body: Any = None) -> Episode:
    return Episode.create(group_id="p", kind=kind, name=name, body=body or name, key=name)


def hits(*scored: tuple[Episode, float]) -> list[Hit]:
    return [Hit(episode=e, score=s, layer="file") for e, s in scored]


def names(chosen: dict[Category, list[Episode]], category: Category) -> list[str]:
    return [e.name for e in chosen[category]]


def test_fusion_adds_what_the_project_knows_and_the_concern_raises_it() -> None:
    webhook, celery = memory("webhook"), memory("celery ids")
    tests, told = memory("tests only"), memory("told", "task_outcome")
    found = Found(
        subject=hits((webhook, 0.4)),
        known=hits((celery, 0.6), (webhook, 0.2)),
        concern=hits((tests, 0.9), (told, 0.9), (webhook, 0.5)),
    )
    fused = {c.episode.name: c for c in fuse(found, LIMITS)}
    assert fused["webhook"].relevance == (0.4 + LIMITS.known * 0.2) * (1 + LIMITS.concern * 0.5)
    assert fused["celery ids"].relevance == LIMITS.known * 0.6
    assert fused["webhook"].agrees and not fused["celery ids"].agrees
    # A pattern found by the task type's concerns alone is how such work is done here (a
    # convention); an outcome found so is not about this task.
    assert fused["tests only"].convention and "told" not in fused


def test_the_concern_raises_a_weak_match_little() -> None:
    # A memory sharing one generic word with the task stays weak however well it matches the
    # concern ("Failed: ..." for a bug fix); a sum would lift it past the floors.
    weak, strong = memory("weak", "failed_approach"), memory("strong", "failed_approach")
    found = Found(subject=hits((strong, 0.8), (weak, 0.1)), concern=hits((weak, 1.0)))
    fused = {c.episode.name: c.relevance for c in fuse(found, LIMITS)}
    assert fused["weak"] < 0.1 + LIMITS.concern * 1.0
    assert fused["weak"] == 0.1 * (1 + LIMITS.concern)


def test_faint_matches_count_as_none() -> None:
    faint = memory("faint")
    assert fuse(Found(subject=hits((faint, LIMITS.floor))), LIMITS) == []


def test_the_floor_is_relative_to_the_best_of_its_kind_and_of_the_context() -> None:
    strong, kept, cut = memory("strong"), memory("kept"), memory("cut")
    file, weak = memory("a.py", CODEBASE_DISCOVERY), memory("b.py", CODEBASE_DISCOVERY)
    low = max(LIMITS.relative, LIMITS.overall)  # the project's own memories: both floors
    found = {
        C.PATTERNS: Found(subject=hits((strong, 0.8), (kept, 0.8 * low), (cut, 0.8 * low - 0.01))),
        # The best discovery is weak beside the best pattern: the context-wide floor cuts it.
        C.ARCHITECTURE: Found(subject=hits((file, 0.8 * LIMITS.lead - 0.01), (weak, 0.01))),
    }
    chosen = select(found, {C.PATTERNS: 100, C.ARCHITECTURE: 50}, LIMITS, AT)
    assert names(chosen, C.PATTERNS) == ["strong", "kept"]
    assert names(chosen, C.ARCHITECTURE) == []


def test_the_best_of_a_kind_and_the_tasks_spec_pass_a_lower_floor() -> None:
    # The project's own memories of every area are where distractors come from: they must
    # reach ``overall`` of the best; the best of its kind in a category only ``lead``, and a
    # memory of the spec most of the best candidates come from only ``in_spec``.
    best = spec_memory("best", "001-a")
    same = [spec_memory(f"same spec {n}", "001-a") for n in range(3)]
    own = memory("own pattern")
    lone = memory("lone gotcha", GOTCHA)
    second = memory("second gotcha", GOTCHA)
    between = (LIMITS.lead + LIMITS.overall) / 2
    top = 0.8
    found = {
        C.PATTERNS: Found(subject=hits(
            (best, top / MAX_SPEC_WEIGHT), *((m, 0.9 * top / MAX_SPEC_WEIGHT) for m in same),
            (own, between * top))),
        C.WARNINGS: Found(subject=hits((lone, between * top), (second, between * top * 0.99)),
                          known=hits((lone, LIMITS.floor + 0.01))),
    }
    chosen = select(found, {C.PATTERNS: 200, C.WARNINGS: 100}, LIMITS, AT)
    assert names(chosen, C.PATTERNS) == ["best", "same spec 0", "same spec 1", "same spec 2"]
    assert names(chosen, C.WARNINGS) == ["lone gotcha"]
    floor_of_spec = floor(Candidate(same[0], 0.01), top, top, {"001-a": 1.0}, LIMITS)
    floor_of_own = floor(Candidate(own, 0.01), top, top, {"001-a": 1.0}, LIMITS)
    lesser = {"001-a": LIMITS.spec_share + 0.01, "002-b": 1 - LIMITS.spec_share - 0.01}
    least = {"001-a": LIMITS.spec_share - 0.01, "002-b": 1 - LIMITS.spec_share + 0.01}
    # one of two specs of the task, unless a small share of it
    assert floor(Candidate(same[0], 0.01), top, top, lesser, LIMITS) == floor_of_spec
    minor = floor(Candidate(same[0], 0.01), top, top, least, LIMITS)
    assert floor_of_spec == max(LIMITS.relative, LIMITS.in_spec) * top
    assert floor_of_own == minor == max(LIMITS.relative, LIMITS.overall) * top


def test_the_best_of_a_kind_passes_the_lower_floor_only_when_subject_and_links_agree() -> None:
    # "Add an idempotency key to the refund endpoint" shares "key" with an API-key bug: the
    # subject's words found it, what the project links to the task did not.
    strong, word, agreed = memory("strong"), memory("shares a word", GOTCHA), memory("x", GOTCHA)
    share = (LIMITS.lead + LIMITS.overall) / 2
    for found, kept in (
        (Found(subject=hits((strong, 0.8), (word, 0.8 * share))), []),
        (Found(subject=hits((strong, 0.8), (agreed, 0.8 * share)),
               known=hits((agreed, LIMITS.floor + 0.001))), ["x"]),
    ):
        chosen = select({C.PATTERNS: found}, {C.PATTERNS: 100}, LIMITS, AT)
        assert names(chosen, C.PATTERNS) == ["strong", *kept]


def test_the_subjects_short_words_alone_are_not_agreement() -> None:
    # "Fix API key authentication rejecting keys that end in a newline": the idempotency key
    # and the admin API client share only "api" or "key" with it, whatever links agree.
    subject = frozenset(terms("API key authentication rejecting keys end newline"))
    generic = memory("Add an idempotency key to the refund endpoint", GOTCHA)
    telling = memory("API keys pasted from emails end in a newline", GOTCHA)
    assert slight(subject, generic) and not slight(subject, telling)
    assert not slight(frozenset(terms("API key")), generic)  # no longer word to hold instead
    assert not slight(subject, memory("shares nothing"))
    strong = memory("strong")
    share = (LIMITS.lead + LIMITS.overall) / 2
    for weak, kept in ((generic, []), (telling, [telling.name])):
        found = Found(subject=hits((strong, 0.8), (weak, 0.8 * share)),
                      known=hits((weak, LIMITS.floor + 0.001)), terms=subject)
        chosen = select({C.WARNINGS: found}, {C.WARNINGS: 100}, LIMITS, AT)
        assert names(chosen, C.WARNINGS) == ["strong", *kept]


def test_each_kind_is_measured_against_its_own_best() -> None:
    # A gotcha that scores less than the failed approaches is still the best gotcha.
    failed, gotcha = memory("failed", "failed_approach"), memory("gotcha", GOTCHA)
    found = {C.WARNINGS: Found(subject=hits((failed, 0.9), (gotcha, 0.25)))}
    assert names(select(found, {C.WARNINGS: 100}, LIMITS, AT), C.WARNINGS) == [
        "failed", "gotcha"]


def spec_memory(name: str, spec: str | None) -> Episode:
    body = {"pattern": name, **({"spec": spec} if spec else {})}
    return memory(name, body=body)


def test_the_best_candidates_specs_are_the_tasks() -> None:
    a1, a2, b1 = spec_memory("a1", "001-a"), spec_memory("a2", "001-a"), spec_memory("b1", "002-b")
    own = spec_memory("project's own", None)
    ranked = [Candidate(a1, 0.9), Candidate(own, 0.5), Candidate(a2, 0.3), Candidate(b1, 0.2)]
    # Each spec's share of the best candidates' relevance, the project's own among them.
    assert task_specs(ranked, 3) == {"001-a": 1.2 / 1.7}
    weighed = {c.episode.name: c.relevance for c in cohere(ranked, task_specs(ranked, 3))}
    # Another spec is left out; the task's spec weighs more; the project's own stay as found.
    assert weighed == {"a1": 0.9 * 1.5, "project's own": 0.5, "a2": 0.3 * 1.5}
    # Two specs among the best: each weighs twice its share among them.
    assert task_specs(ranked, 4) == {"001-a": 1.2 / 1.9, "002-b": 0.2 / 1.9}
    weighed = {c.episode.name: c.relevance for c in cohere(ranked, task_specs(ranked, 4))}
    assert weighed["b1"] == pytest.approx(0.2 * 2 * 0.2 / 1.4)
    # Without specs among the best, nothing is weighed.
    assert cohere(ranked, {}) == ranked


def test_a_spec_with_one_weak_memory_among_the_best_is_not_the_tasks_area() -> None:
    # "Review how two-factor recovery codes are stored and checked": the project's own memories
    # lead, one memory of the refunds spec ("app/services/ledger.py") squeezes in among the
    # best five, and the rest of that spec must reach ``overall`` of the best like any other
    # area's memories, not ``in_spec``: they were 19 of 23 distractors.
    leads = [memory(f"own {n}") for n in range(4)]
    weak = spec_memory("spec's weak one", "001-a")
    rest = [spec_memory(f"spec's other {n}", "001-a") for n in range(3)]
    between = (LIMITS.in_spec + LIMITS.overall) / 2
    found = {C.PATTERNS: Found(subject=hits(
        *((m, 0.8) for m in leads), (weak, 0.2), *((m, between * 0.8) for m in rest)))}
    assert task_specs(fuse(found[C.PATTERNS], LIMITS), LIMITS.spec_top) == {
        "001-a": pytest.approx(0.2 / 3.4)}
    chosen = names(select(found, {C.PATTERNS: 300}, LIMITS, AT), C.PATTERNS)
    assert [name for name in chosen if name.startswith("own")] == [
        "own 0", "own 1", "own 2", "own 3"]
    assert not [name for name in chosen if name.startswith("spec's other")]
    # The same spec leading the best candidates is the task's area: its rest pass.
    found = {C.PATTERNS: Found(subject=hits(
        (weak, 0.8), *((m, 0.8) for m in rest[:2]), *((m, 0.5) for m in leads[:2]),
        (rest[2], between * 0.8)))}
    assert "spec's other 2" in names(select(found, {C.PATTERNS: 300}, LIMITS, AT),
                                     C.PATTERNS)


def test_one_memory_once_by_content_in_the_larger_allocation() -> None:
    first, again = spec_memory("Close the store", "001-a"), spec_memory("Close the store", "002-b")
    gotcha = memory("Close the store", GOTCHA, "Close the store")
    found = {
        C.WARNINGS: Found(subject=hits((gotcha, 0.9))),
        C.PATTERNS: Found(subject=hits((first, 0.9), (again, 0.9))),
    }
    chosen = select(found, {C.PATTERNS: 300, C.WARNINGS: 100}, Thresholds(spec_top=0), AT)
    assert names(chosen, C.PATTERNS) == ["Close the store"] and chosen[C.WARNINGS] == []


def test_one_file_does_not_fill_the_context() -> None:
    about = [memory(f"Fact {n}", GOTCHA, {"gotcha": f"fact {n}", "file": "app/api/refunds.py"})
             for n in range(5)]
    other = memory("Elsewhere", GOTCHA, "see app/services/ledger.py")
    found = {C.WARNINGS: Found(subject=hits(*((m, 0.9) for m in about), (other, 0.8)))}
    chosen = select(found, {C.WARNINGS: 500}, LIMITS, AT)
    assert names(chosen, C.WARNINGS) == ["Fact 0", "Fact 1", "Fact 2", "Elsewhere"]


def test_superseded_memories_are_left_out() -> None:
    ended = memory("old").model_copy(update={"invalid_at": datetime(2026, 1, 1, tzinfo=UTC)})
    found = {C.PATTERNS: Found(subject=hits((ended, 0.9)))}
    assert select(found, {C.PATTERNS: 100}, LIMITS, AT)[C.PATTERNS] == []


def blocks(count: int, words: int = 20) -> list[Block]:
    return [Block(f"- memory {n}: " + "word " * words + "\n", n) for n in range(count)]


def test_unused_budget_goes_to_the_categories_with_more_to_show() -> None:
    budget = Budget(1000, normalize({C.PATTERNS: 1, C.WARNINGS: 1, C.DOMAIN: 2}))
    allocations = budget.allocate(1000)
    candidates = {C.PATTERNS: blocks(30), C.WARNINGS: blocks(1), C.DOMAIN: blocks(2)}
    _, stats, _ = _render(Task(description="x"), budget, allocations, candidates)
    patterns = stats[C.PATTERNS]
    # Patterns took what warnings and domain left, and stopped at the 95% mark or when full.
    assert patterns.borrowed > 0 and patterns.used > patterns.allocated
    assert stats[C.WARNINGS].borrowed == stats[C.DOMAIN].borrowed == 0
    used = sum(s.used for s in stats.values())
    assert used <= sum(allocations.values())
    assert used * 100 >= sum(allocations.values()) * FULL_PCT - 100 * estimate_tokens(
        candidates[C.PATTERNS][0].text)


def test_a_full_context_borrows_nothing() -> None:
    budget = Budget(1000, normalize({C.PATTERNS: 1, C.WARNINGS: 1}))
    allocations = budget.allocate(1000)
    # Warnings fill their share; patterns have nothing to show: there is nothing to move.
    candidates = {C.PATTERNS: [], C.WARNINGS: blocks(40)}
    _, stats, _ = _render(Task(description="x"), budget, allocations, candidates)
    assert stats[C.WARNINGS].borrowed > 0  # patterns' whole share was free
    full = {C.PATTERNS: blocks(40), C.WARNINGS: blocks(40)}
    _, stats, _ = _render(Task(description="x"), budget, allocations, full)
    assert all(s.borrowed == 0 and s.used <= s.allocated for s in stats.values())


def discovery(path: str, spec: str | None = None) -> Episode:
    body = {"file": path, "description": f"what {path} does", **({"spec": spec} if spec else {})}
    return memory(path, CODEBASE_DISCOVERY, body)


def test_a_memory_far_from_the_tasks_entities_needs_a_larger_share() -> None:
    # "Tests for the refund service": app/services/notifications.py shares "service" only.
    refunds, tests = discovery("app/services/refunds.py"), discovery("tests/test_refunds.py")
    sibling, near = discovery("app/services/notifications.py"), memory("no file named")
    spec_file = discovery("app/services/ledger.py", "001-a")
    lead = memory("Refunds go through app/services/refunds.py", body={
        "pattern": "Refunds go through app/services/refunds.py", "spec": "001-a"})
    middle = (LIMITS.overall + LIMITS.far) / 2
    found = {
        C.ARCHITECTURE: Found(subject=hits((refunds, 0.9), (tests, 0.8), *(
            (m, 0.9 * middle) for m in (sibling, spec_file)))),
        C.PATTERNS: Found(subject=hits((lead, 0.9 / MAX_SPEC_WEIGHT), (near, 0.9 * middle))),
    }
    best_three = Thresholds(spec_top=3)  # the task's entities: those its 3 best candidates name
    chosen = select(found, {C.ARCHITECTURE: 300, C.PATTERNS: 200}, best_three, AT)
    # the sibling names a file none of the best candidates name: far, under ``far``; a file of
    # the task's spec, and a memory that names no file, are not far
    assert names(chosen, C.ARCHITECTURE) == [refunds.name, tests.name, spec_file.name]
    assert names(chosen, C.PATTERNS) == [lead.name, "no file named"]
    found[C.ARCHITECTURE] = Found(subject=hits((refunds, 0.9), (sibling, 0.9 * LIMITS.far)))
    chosen = select(found, {C.ARCHITECTURE: 300, C.PATTERNS: 200}, best_three, AT)
    assert sibling.name in names(chosen, C.ARCHITECTURE)  # strong enough to be about the task


def test_conventions_of_the_task_type_are_kept_whatever_their_subject_score() -> None:
    task = spec_memory("Refund flow", "001-a")
    convention = memory("Test data comes from factories")
    own_spec = spec_memory("Ledger test fixture truncates tables", "001-a")
    other_spec = spec_memory("Run Celery eagerly in tests", "002-b")
    weak = memory("Emails have a plain-text twin; tests render both")
    concern = hits((convention, LIMITS.convention), (own_spec, 0.5), (other_spec, 0.5),
                   (weak, LIMITS.convention - 0.01))
    found = {C.PATTERNS: Found(subject=hits((task, 0.9), (weak, 0.05 + 0.01)), concern=concern)}
    chosen = select(found, {C.PATTERNS: 300}, LIMITS, AT)
    assert names(chosen, C.PATTERNS) == [
        "Refund flow", "Test data comes from factories", "Ledger test fixture truncates tables"]


def test_a_testing_task_keeps_the_traps_of_the_test_set_up() -> None:
    # One test word makes a project-wide gotcha a trap every test can fall into; a pattern with
    # one is how some area tests its own work, a spec's gotcha a trap of its own area's tests.
    subject = memory("Refund flow", GOTCHA, {"gotcha": "Refund flow", "spec": "001-a"})
    trap = memory("freezegun breaks asyncio timeouts in tests", GOTCHA)
    spec_trap = memory("Payout tests must freeze time", GOTCHA,
                       {"gotcha": "Payout tests must freeze time", "spec": "001-a"})
    area_pattern = memory("Emails have a plain-text twin; tests render both")
    concern = hits((trap, LIMITS.trap), (spec_trap, LIMITS.trap), (area_pattern, LIMITS.trap))
    for testing, kept in ((True, [trap.name]), (False, [])):
        found = Found(subject=hits((subject, 0.9)), concern=concern, testing=testing)
        chosen = select({C.WARNINGS: found, C.PATTERNS: found}, {C.WARNINGS: 300}, LIMITS, AT)
        assert names(chosen, C.WARNINGS) == ["Refund flow", *kept]
        assert area_pattern.name not in names(chosen, C.PATTERNS)
