"""The context benchmark measures what it claims: every label names one stored memory, the
corpus is the size the issue asks for, and shown memories are recognised in a context."""

from __future__ import annotations

from pathlib import Path

from bench.context_files import FILES
from bench.context_recall import ALL_TASKS, build_corpus, score, shown, signatures
from bench.context_tasks import BLIND, COLD, FINAL, FRESH, FROST, LATER, NEXT, TASKS


async def test_labels_name_one_memory_each_and_are_recognised_when_shown(
    tmp_path: Path,
) -> None:
    corpus = await build_corpus(tmp_path)  # raises when a label names none or several
    assert len(corpus.episodes) >= 150 and len(TASKS) >= 15
    assert len({t.task.get("task_type", "implementation") for t in TASKS}) >= 5
    shows = signatures(corpus.episodes)
    by_id = {e.id: e for e in corpus.episodes}
    task = next(t for t in TASKS if t.name == "webhook-handler")
    first, *rest = corpus.needed[task.name]
    stray = next(e for e in corpus.episodes if corpus.areas[e.id] == "invoicing"
                 and e.kind == "gotcha")
    markdown = f"- **{by_id[first].name}**: …\n- {stray.name}\n"
    assert shown(markdown, shows) == {first, stray.id}
    result = score(task, {"markdown": markdown, "tokens_used": 10, "budget": 100}, corpus, shows)
    assert (result.found, result.needed, result.distractors) == (1, len(rest) + 1, 1)


async def test_unseen_tasks_are_of_several_types_and_every_label_can_be_recognised(
    tmp_path: Path,
) -> None:
    corpus = await build_corpus(tmp_path)
    for unseen in (FRESH, LATER, NEXT, FINAL, BLIND, COLD, FROST):
        assert len(unseen) >= 6
        assert len({t.task.get("task_type", "implementation") for t in unseen}) >= 5
    shows = signatures(corpus.episodes)
    assert all(shows[key] for t in ALL_TASKS for key in corpus.needed[t.name])


def test_every_later_task_has_the_two_to_five_files_a_person_would_open_first() -> None:
    later = [t.name for t in (*FRESH, *LATER, *NEXT, *FINAL, *BLIND, *COLD, *FROST)]
    assert sorted(FILES) == sorted(later)
    assert all(2 <= len(FILES[name]) <= 5 and len(set(FILES[name])) == len(FILES[name])
               for name in later)
