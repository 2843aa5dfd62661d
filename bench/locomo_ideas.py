"""What graph-structural ideas could add on LoCoMo dev, measured before any is built: each one
reranks the file layer's top ``CANDIDATES`` (the same ranking every layer serves today), in
the same run as the layer itself and plain BM25. None of these is in the product.

- ``adjacency``: graphiti's ``NEXT_EPISODE``: the turns just before and after each of the top
  hits, within their session, join at ``ADJACENT`` times that hit's score (a question's answer
  is often the reply to the line that matched it);
- ``speaker``: a turn spoken by a person the question names is lifted by ``SPEAKER`` of what it
  lacks (the person as an entity: too common in a conversation for entity expansion).

The order of turns and their speakers are taken from the data set's ``session``, ``turn`` and
the ``Name:`` that starts each body; in the product they would come from each turn's own time
(the data set gives a whole session one time) and from a speaker entity.

    python -m bench.locomo_ideas
"""

from __future__ import annotations

import asyncio
import itertools
import re
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import orjson

from backends.protocol import upsert_all
from bench import locomo

CANDIDATES = 60
ADJACENT = 0.7
SPEAKER = 0.3
Ranked = list[tuple[str, float]]


async def candidates(data: locomo.LoCoMo) -> tuple[dict[str, Ranked], list[float]]:
    from fallback import FileBackend

    found: dict[str, Ranked] = {}
    latencies = []
    with tempfile.TemporaryDirectory() as scratch:
        store = await FileBackend.open(Path(scratch) / "files", watch=False)
        try:
            await upsert_all(store, data.items)
            for question in data.questions:
                started = time.perf_counter()
                hits = await store.search(question.text, group_ids=[question.group_id],
                                          limit=CANDIDATES)
                latencies.append(time.perf_counter() - started)
                found[question.qid] = [(hit.episode.id, hit.score) for hit in hits]
        finally:
            await store.aclose()
    return found, latencies


class Turns:
    """Each turn's place in its conversation and its speaker, from the data set's rows."""

    def __init__(self, folder: Path) -> None:
        rows = [orjson.loads(line) for line in (folder / "items.jsonl").read_bytes().splitlines()
                if line.strip()]
        rows.sort(key=lambda row: (row["group_id"], row["session"], row["turn"]))
        self.speaker = {row["id"]: row["body"].split(":", 1)[0] for row in rows}
        self.neighbours: dict[str, list[str]] = {row["id"]: [] for row in rows}
        for before, after in itertools.pairwise(rows):
            if (before["group_id"], before["session"]) == (after["group_id"], after["session"]):
                self.neighbours[before["id"]].append(after["id"])
                self.neighbours[after["id"]].append(before["id"])

    def adjacency(self, question: locomo.Question, ranked: Ranked) -> Ranked:
        scores = dict(ranked)
        for key, score in ranked[:locomo.TOP]:
            for other in self.neighbours[key]:
                scores[other] = max(scores.get(other, 0.0), ADJACENT * score)
        return _ordered(scores)

    def speaker_named(self, question: locomo.Question, ranked: Ranked) -> Ranked:
        words = set(re.findall(r"[^\W_]+", question.text.casefold()))
        return _ordered({key: score + (1 - score) * SPEAKER
                         if self.speaker[key].casefold() in words else score
                         for key, score in ranked})


def _ordered(scores: Mapping[str, float]) -> Ranked:
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


async def run() -> str:
    data = locomo.load()
    turns = Turns(locomo.dataset_folder())
    found, latencies = await candidates(data)
    ideas: dict[str, Callable[[locomo.Question, Ranked], Ranked]] = {
        "file layer": lambda question, ranked: ranked,
        "+ adjacency": turns.adjacency,
        "+ speaker": turns.speaker_named,
        "+ both": lambda question, ranked: turns.adjacency(
            question, turns.speaker_named(question, ranked)),
    }
    results = {locomo.BASELINE: locomo.bm25_quality(data)}
    for name, idea in ideas.items():
        rankings = {q.qid: [key for key, _ in idea(q, found[q.qid])] for q in data.questions}
        results[name] = locomo.score(data.questions, rankings, latencies)
    return locomo.table(results, data)


def main() -> None:
    print(asyncio.run(run()))


if __name__ == "__main__":
    main()
