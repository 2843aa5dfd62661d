"""What a context searches for beyond the description's words (``memory.context.expansion``):
the entities the task and its best matches name join the "known" query whole, on every layer."""

from __future__ import annotations

from backends.model import Episode, Hit
from backends.protocol import MemoryBackend
from context.conftest import fill
from memory.agent.scopes import GOTCHA, PATTERN, project_group
from memory.context import Phase, Task, build_context
from memory.context.analysis import Analysis, TaskType
from memory.context.expansion import known_words, named_entities
from memory.context.retrieval import concern_hits

PROJECT = "shop"


def note(kind: str, text: str) -> Episode:
    return Episode.create(group_id=project_group(PROJECT), kind=kind, name=text, body=text,
                          key=text)


def analysis(description: str) -> Analysis:
    return Analysis(Task(description=description), Phase.IMPLEMENT, TaskType.IMPLEMENTATION,
                    similar_count=0, is_refinement=False, has_previous_turns=False)


async def test_the_task_and_its_best_matches_name_the_entities(store: MemoryBackend) -> None:
    await fill(store, [
        note(PATTERN, "External payment calls go through app/clients/stripe_client.py so tests "
                      "can stub them with `StripeStub`"),
        note(GOTCHA, "Invoices render slowly in app/services/invoices.py"),
    ])
    task = analysis("Retry payment calls that raise RateLimitError")
    names = await named_entities(store, task, "Retry payment calls that raise RateLimitError",
                                 [project_group(PROJECT)])
    # The task's own CamelCase name, and what the best match names; not the unrelated gotcha's.
    assert names[0] == "RateLimitError"
    assert {"app/clients/stripe_client.py", "StripeStub"} <= set(names)
    assert "app/services/invoices.py" not in names


async def test_known_words_keep_paths_whole_and_leave_the_subjects_words_out(
    store: MemoryBackend,
) -> None:
    async def expander(*_: object) -> list[str]:
        return ["app/api/webhooks.py Stripe webhook endpoint", "webhook 42 retries"]

    known = await known_words(store, analysis("webhook retries"), "webhook retries",
                              [project_group(PROJECT)], [expander])
    # The path stays one word, so the search names its entity outright; "webhook" and
    # "retries" are the subject's, numbers name nothing.
    assert known == "app/api/webhooks.py Stripe endpoint"


def test_the_concern_is_read_in_what_the_subject_found() -> None:
    def hit(text: str) -> Hit:
        episode = Episode.create(group_id="p", kind="gotcha", name=text, body=text)
        return Hit(episode=episode, score=0.5, layer="file")

    fixtures, failure, none = hit("Fixtures stub Stripe"), hit("A failure"), hit("Nothing")
    scored = {h.episode.name: h.score for h in concern_hits(
        [fixtures, failure, none, fixtures], "fixture stub fake mock")}
    assert scored == {"Fixtures stub Stripe": 0.5}  # two of four terms; once; none left out
    # a concern term counts in a longer word it begins ("fail" in "failure")
    assert [h.score for h in concern_hits([failure], "fail bug")] == [0.5]
    assert concern_hits([fixtures], "") == []


async def test_a_testing_task_is_shown_the_traps_of_the_test_set_up(store: MemoryBackend) -> None:
    trap = "freezegun breaks asyncio timeouts in tests; freeze time with time_machine"
    await fill(store, [
        note(GOTCHA, trap),
        note(GOTCHA, "Partial refunds above the captured amount are rejected by Stripe"),
        note(PATTERN, "Refunds post a reversing ledger entry in the same transaction"),
        *(note(GOTCHA, f"Invoice {n} rendering needs the {n} font") for n in range(8)),
    ])
    testing = Task(description="Write tests for partial refunds", task_type="testing")
    fixing = Task(description="Fix partial refunds", task_type="implementation")
    tested = await build_context(store, testing, project_id=PROJECT, phase=Phase.TEST)
    fixed = await build_context(store, fixing, project_id=PROJECT)
    # The trap shares no word with the task; one test word in a gotcha is enough for a test.
    assert trap in tested.markdown and "Partial refunds above" in tested.markdown
    assert trap not in fixed.markdown and "Partial refunds above" in fixed.markdown
