"""Ideas to reach LoCoMo's multi-hop evidence offline, measured before any is built, tuned on
one half of the dev conversations (``TUNE``) and reported on the other half as well, beside the
product's ranking from the same run. Each idea reranks or widens the shared lexical ranking
(``backends.search.textindex``, top ``CANDIDATES``) followed by the product's conversation adjacency
(``backends.threads``):

- ``adj``: the product's adjacency with its choices varied (``adjacent_variant``);
- ``prf``: pseudo-relevance feedback (RM3-like): the ``PRF_TERMS`` terms of the top
  ``PRF_DOCS`` hits that are most distinctive for the conversation (score-weighted tf x idf)
  make a second query, whose scores are mixed in at ``PRF_WEIGHT``;
- ``session``: every turn of a top hit's session joins at ``SESSION`` times the hit's score;
- ``speaker``: a turn spoken by a person the question names is lifted by ``SPEAKER``.

    python -m bench.locomo_reach [PREFIX ...]   (only the ideas whose names start so)
"""

from __future__ import annotations

import asyncio
import itertools
import math
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path

import orjson

from backends import threads
from backends.protocol import upsert_all
from backends.search.ranking import terms
from bench import locomo

CANDIDATES = 60
TUNE = frozenset({"conv-26", "conv-30", "conv-41"})
Ranked = list[tuple[str, float]]
Search = Callable[[str, str], Ranked]


class Conversations:
    """Each turn's session, neighbours, speaker and terms, from the data set's rows."""

    def __init__(self, folder: Path) -> None:
        rows = [orjson.loads(line) for line in (folder / "items.jsonl").read_bytes().splitlines()
                if line.strip()]
        rows.sort(key=lambda row: (row["group_id"], row["session"], row["turn"]))
        self.speaker = {row["id"]: row["body"].split(":", 1)[0].casefold() for row in rows}
        self.asks = {row["id"]: row["body"].rstrip().endswith("?") for row in rows}
        self.session: dict[str, list[str]] = defaultdict(list)
        self.session_of = {}
        for row in rows:
            key = f"{row['group_id']}:{row['session']}"
            self.session[key].append(row["id"])
            self.session_of[row["id"]] = key
        self.neighbours: dict[str, list[str]] = {row["id"]: [] for row in rows}
        self.before: dict[str, str] = {}
        self.after: dict[str, str] = {}
        for before, after in itertools.pairwise(rows):
            if (before["group_id"], before["session"]) == (after["group_id"], after["session"]):
                self.neighbours[before["id"]].append(after["id"])
                self.neighbours[after["id"]].append(before["id"])
                self.after[before["id"]] = after["id"]
                self.before[after["id"]] = before["id"]
        self.terms = {row["id"]: Counter(terms(f"{row['name']}\n{row['body']}")) for row in rows}
        df: dict[str, Counter[str]] = defaultdict(Counter)
        size: Counter[str] = Counter()
        for row in rows:
            df[row["group_id"]].update(self.terms[row["id"]].keys())
            size[row["group_id"]] += 1
        self.idf = {group: {term: math.log(size[group] / count) for term, count in counts.items()}
                    for group, counts in df.items()}


def adjacent(conv: Conversations, ranked: Ranked) -> Ranked:
    """As the product (``threads.lift``) over the top ``locomo.TOP``."""
    return adjacent_variant(conv, ranked, locomo.TOP, threads.ADJACENT, threads.ADJACENT,
                            threads.REACH, add=False, reply=threads.REPLY)


def adjacent_variant(conv: Conversations, ranked: Ranked, hits: int, before: float,
                     after: float, reach: int, add: bool, reply: float | None = None) -> Ranked:
    """``adjacent`` with its choices open: how many hits lend their neighbours, the weight of
    the turn before and after, how many turns away, whether a lift adds to a neighbour's
    own score instead of replacing a lower one, and the weight of a step from a question (a
    turn ending in "?") to its reply (None: as any step after)."""
    scores = dict(ranked)
    lifts: dict[str, float] = {}
    for key, score in ranked[:hits]:
        for step, weight in ((conv.before, before), (conv.after, after)):
            other, factor = key, 1.0
            for _ in range(reach):
                asks = step is conv.after and reply is not None and conv.asks[other]
                other = step.get(other, "")
                if not other:
                    break
                factor *= reply if asks and reply is not None else weight
                lifts[other] = max(lifts.get(other, 0.0), factor * score)
    for other, lift in lifts.items():
        own = scores.get(other, 0.0)
        scores[other] = own + (1 - own) * lift if add else max(own, lift)
    return _ordered(scores)


def prf(conv: Conversations, search: Search, question: locomo.Question, ranked: Ranked,
        docs: int, count: int, weight: float) -> Ranked:
    if not ranked or weight == 0:
        return ranked
    asked = set(terms(question.text))
    idf = conv.idf[question.group_id]
    mass: dict[str, float] = defaultdict(float)
    for key, score in ranked[:docs]:
        counts = conv.terms[key]
        total = sum(counts.values()) or 1
        for term, tf in counts.items():
            if term not in asked and not term.isdigit():
                mass[term] += score * tf / total * idf.get(term, 0.0)
    extra = sorted(mass, key=lambda term: (-mass[term], term))[:count]
    if not extra:
        return ranked
    expanded = dict(search(f"{question.text} {' '.join(extra)}", question.group_id))
    original = dict(ranked)
    return _ordered({key: (1 - weight) * original.get(key, 0.0) + weight * expanded.get(key, 0.0)
                     for key in original.keys() | expanded.keys()})


def session(conv: Conversations, ranked: Ranked, hits: int, share: float) -> Ranked:
    scores = dict(ranked)
    for key, score in ranked[:hits]:
        for other in conv.session[conv.session_of[key]]:
            scores[other] = max(scores.get(other, 0.0), share * score)
    return _ordered(scores)


def speaker(conv: Conversations, question: locomo.Question, ranked: Ranked, lift: float
            ) -> Ranked:
    words = set(re.findall(r"[^\W_]+", question.text.casefold()))
    return _ordered({key: score + (1 - score) * lift if conv.speaker[key] in words else score
                     for key, score in ranked})


def spread(conv: Conversations, ranked: Ranked, discount: float, depth: int) -> Ranked:
    """Greedy: each next pick is the best score times ``discount`` to the power of how many
    picks its session already has, over the top ``depth``: evidence of a question that gathers
    (what activities, which books) lies in many sessions."""
    pool, chosen = dict(ranked[:depth]), []
    taken: Counter[str] = Counter()
    while pool:
        key = max(pool, key=lambda k: (pool[k] * discount ** taken[conv.session_of[k]], k))
        chosen.append((key, pool.pop(key) * discount ** taken[conv.session_of[key]]))
        taken[conv.session_of[key]] += 1
    floor = min((score for _, score in chosen), default=0.0)
    return [*chosen, *((key, min(score, floor)) for key, score in ranked[depth:])]


def _ordered(scores: Mapping[str, float]) -> Ranked:
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def _ideas(conv: Conversations, search: Search, lexical: Mapping[str, Ranked]
           ) -> dict[str, Callable[[locomo.Question], Ranked]]:
    def variant(hits: int, before: float, after: float, reach: int, add: bool,
                reply: float | None) -> Callable[[locomo.Question], Ranked]:
        return lambda q: adjacent_variant(conv, lexical[q.qid], hits, before, after, reach,
                                          add, reply)

    def with_prf(docs: int, count: int, weight: float) -> Callable[[locomo.Question], Ranked]:
        return lambda q: adjacent(conv, prf(conv, search, q, lexical[q.qid], docs, count, weight))

    def with_session(hits: int, share: float) -> Callable[[locomo.Question], Ranked]:
        return lambda q: session(conv, adjacent(conv, lexical[q.qid]), hits, share)

    def with_speaker(lift: float) -> Callable[[locomo.Question], Ranked]:
        return lambda q: adjacent(conv, speaker(conv, q, lexical[q.qid], lift))

    def with_spread(discount: float, depth: int) -> Callable[[locomo.Question], Ranked]:
        return lambda q: spread(conv, adjacent(conv, lexical[q.qid]), discount, depth)

    ideas: dict[str, Callable[[locomo.Question], Ranked]] = {
        "lexical (before)": lambda q: lexical[q.qid],
        "product (+adjacency)": lambda q: adjacent(conv, lexical[q.qid]),
    }
    choices: list[tuple[int, float, float, int, bool, float | None]] = [
        *((10, w, w, 1, False, None) for w in (0.5, 0.6, 0.7, 0.8, 0.9)),
        *((h, 0.7, 0.7, 1, False, None) for h in (5, 20)),
        *((10, b, a, 1, False, None) for b, a in ((0.5, 0.8), (0.6, 0.8), (0.8, 0.6))),
        *((10, w, w, r, False, None) for r in (2, 3) for w in (0.65, 0.7, 0.75, 0.8)),
        *((10, w, w, 1, True, None) for w in (0.3, 0.5, 0.7)),
        *((10, 0.75, 0.75, 2, False, q) for q in (0.8, 0.85, 0.9, 0.95, 1.0))]
    for hits, before, after, reach, add, reply in choices:
        name = (f"adj {hits} {before}/{after} r{reach}{' +' if add else ''}"
                f"{f' ?{reply}' if reply else ''}")
        ideas[name] = variant(hits, before, after, reach, add, reply)
    for docs, count, weight in itertools.product((3, 5, 10), (5, 10, 20), (0.2, 0.35, 0.5)):
        ideas[f"prf {docs}/{count}/{weight}"] = with_prf(docs, count, weight)
    for hits, share in itertools.product((1, 3), (0.2, 0.4, 0.6)):
        ideas[f"session {hits}/{share}"] = with_session(hits, share)
    for lift in (0.1, 0.3):
        ideas[f"speaker {lift}"] = with_speaker(lift)
    for discount, depth in itertools.product((0.5, 0.7, 0.85, 0.95), (20, 40)):
        ideas[f"spread {discount}/{depth}"] = with_spread(discount, depth)
    return ideas


async def run() -> str:
    from fallback import FileBackend

    data = locomo.load()
    conv = Conversations(locomo.dataset_folder())
    halves = {"tune": [q for q in data.questions if q.group_id in TUNE],
              "held out": [q for q in data.questions if q.group_id not in TUNE]}
    lines = [f"LoCoMo dev, tuned on {sorted(TUNE)}; R@10 / MRR, multi-hop R@10 / MRR"]
    with tempfile.TemporaryDirectory() as scratch:
        store = await FileBackend.open(Path(scratch) / "files", watch=False)
        try:
            await upsert_all(store, data.items)
            text = store._index.text  # the shared lexical ranking, before any lift

            def search(query: str, group: str) -> Ranked:
                return text.search(query, groups=[group], limit=CANDIDATES)

            lexical = {q.qid: search(q.text, q.group_id) for q in data.questions}
            ideas = _ideas(conv, search, lexical)
            chosen = sys.argv[1:]
            for name, idea in ideas.items():
                if chosen and not any(name.startswith(prefix) for prefix in chosen):
                    continue
                started = time.perf_counter()
                rankings = {q.qid: [key for key, _ in idea(q)] for q in data.questions}
                took = (time.perf_counter() - started) / len(data.questions) * 1000
                cells = []
                for half in halves.values():
                    quality = locomo.score(half, rankings, [0.0])
                    hop = quality.categories["multi-hop"]
                    cells.append(f"{quality.overall.r10:.3f}/{quality.overall.mrr:.3f} "
                                 f"{hop.r10:.3f}/{hop.mrr:.3f}")
                lines.append(f"{name:<24}" + "".join(f"{c:>28}" for c in cells)
                             + f"{took:>8.2f} ms")
        finally:
            await store.aclose()
    header = f"{'idea':<24}" + "".join(f"{h:>28}" for h in halves) + f"{'per q':>11}"
    return "\n".join([lines[0], header, *lines[1:]])


def main() -> None:
    print(asyncio.run(run()))


if __name__ == "__main__":
    main()
