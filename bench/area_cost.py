"""What ``dualmem context --infer-areas`` costs.

- Sent to the LLM at most: the worst case (ten times more areas than are shown, each longer
  than is shown, a long task) through graphiti's real OpenAI-compatible client to the tests'
  scripted stand-in, which counts the request.
- Offline, in this process: listing the project's known areas (a scan of its patterns and
  gotchas) and the context with the three busiest areas named, beside the same context
  without inference, on a synthetic project of SIZE memories (default 10000), CPU seconds.

Only the cost is measured: a stand-in says nothing of an LLM's judgement, and none is
measured offline.

    python -m bench.area_cost [SIZE]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from backends.model import Episode
from bench.file_layer import synthetic
from bench.migrate import lay_down
from bench.rerank_cost import chars_sent, one_request
from fallback import FileBackend
from memory.context import Task, build_context
from memory.context.areas import known_areas
from memory.store import area_guess

PROJECT = "bench"
FOLDERS = 200
"""areas of the synthetic project: each convention names a file in one of them"""


def most_sent() -> str:
    areas = [f"src/{'deeply/' * 20}module_{n}" for n in range(10 * area_guess.MAX_AREAS)]
    request = one_request("NamedAreas", {"areas": [1, 2, 3]},
                          lambda llm: area_guess.guess_areas(llm, "task " * 2000, areas))
    chars = chars_sent(request)
    return (f"one area inference at most: {chars} characters sent (~{chars // 4} tokens at 4 a "
            f"token; {area_guess.MAX_PROMPT_CHARS} of them dualmem's: {area_guess.MAX_AREAS} "
            f"areas of {area_guess.AREA_CHARS} characters, the task cut to "
            f"{area_guess.TASK_CHARS}; the rest graphiti's answer schema), answer capped at "
            f"{request['max_tokens']} tokens, {area_guess.DEADLINE:g} s deadline")


def project(size: int) -> list[Episode]:
    """``size`` synthetic memories of the project; each pattern and gotcha names a file of one
    of ``FOLDERS`` folders."""
    episodes = []
    for n, episode in enumerate(synthetic(size)):
        body = episode.body
        if episode.kind in ("pattern", "gotcha"):
            body = f"app/area_{n // 5 % FOLDERS}/file_{n % 7}.py: {body}"
        episodes.append(episode.model_copy(update={"group_id": PROJECT, "body": body}))
    return episodes


async def offline(size: int) -> str:
    from memory.context.file_memories import paths_named

    episodes = project(size)
    task = Task(description=" ".join(episodes[0].body.split()[:8]))  # words the project has
    with tempfile.TemporaryDirectory() as folder:
        lay_down(Path(folder) / "files", episodes)
        store = await FileBackend.open(Path(folder) / "files")
        try:
            clock = time.process_time()
            await build_context(store, task, project_id=PROJECT)
            without = time.process_time() - clock

            async def busiest(text: str, areas: Sequence[str]) -> list[str]:
                return list(areas[:area_guess.MAX_NAMED])

            paths_named.cache_clear()  # the listing as a one-shot process pays it: cold
            clock = time.process_time()
            inferred = await build_context(store, task, project_id=PROJECT, guess_areas=busiest)
            with_areas = time.process_time() - clock
            paths_named.cache_clear()
            clock = time.process_time()
            known = await known_areas(store, [PROJECT])
            listing = time.process_time() - clock
        finally:
            await store.aclose()
    return (f"{size} memories, {len(known)} known areas: the context {without:.2f} s CPU "
            f"without inference, {with_areas:.2f} s with {len(inferred.analysis.task.areas)} "
            f"areas named, of which listing the areas {listing:.2f} s (the LLM's own time not "
            "included)")


def main(argv: Sequence[str] = ()) -> None:
    size = int(argv[0]) if argv else 10000
    print(most_sent())
    print(asyncio.run(offline(size)))


if __name__ == "__main__":
    main(sys.argv[1:])
