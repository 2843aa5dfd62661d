"""The areas a task will touch without naming them, inferred when asked for: issue 17 found
that context missed mostly the conventions of such areas. The project's areas are learned as
the working set learns them (``memory.context.file_memories``): the folders of the files its
patterns and gotchas name. Something that knows the code (the configured LLM:
``memory.store.area_guess``) picks those the task's text touches; their conventions then join
the candidates as a working file's area's do, under the same budget and floors.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Sequence

from backends.protocol import MemoryBackend
from memory.context.file_memories import CONVENTION_KINDS, folder_of, paths_named
from memory.context.task import Task

AreaGuess = Callable[[str, Sequence[str]], Awaitable[Sequence[str]]]
"""a task's text and the project's areas (the busiest first) -> those the task will touch"""


async def known_areas(store: MemoryBackend, groups: Sequence[str]) -> list[str]:
    """The folders the project's conventions name files in (not its top folder, whose files
    every area shares: ``in_area``), those named by the most conventions first."""
    named: Counter[str] = Counter()
    async for episode in store.scan(group_ids=list(groups), kinds=sorted(CONVENTION_KINDS)):
        if "/" in episode.name or "/" in episode.body:  # else no path: spared the extraction
            named.update({folder_of(path) for path in paths_named(episode) if "/" in path})
    named.pop(".", None)
    named.pop("", None)
    return sorted(named, key=lambda folder: (-named[folder], folder))


async def with_areas(store: MemoryBackend, task: Task, groups: Sequence[str],
                     guess: AreaGuess) -> Task:
    """``task`` with the areas ``guess`` says it touches; only the project's own are taken (the
    answer is hostile input), and a task with none is as given."""
    known = await known_areas(store, groups)
    if not known:
        return task
    said = set(await guess(task.description, known))
    areas = tuple(area for area in known if area in said)
    return task.model_copy(update={"areas": (*task.areas, *areas)}) if areas else task
