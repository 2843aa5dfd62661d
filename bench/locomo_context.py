"""Memories in context (``backends.graph.in_context``) measured held out, with the words alone
and the fusion without context in the same run: LoCoMo dev cross-validated (values chosen on
three conversations, scored on the other two, all ten splits; a share of 0, the idea off,
always among them), once among every value and once among those that leave the paraphrase
set's R@5 as it was (the values shipped); then the paraphrase set and the coding benchmark at
the values most often chosen (fused by ``meaning.fuse`` with the file layer's words, as the
graph fuses them before its links). A memory's sequence is read from what it records (group,
kind, source, time), never from LoCoMo's session and turn numbers.

    python -m bench.locomo_context MODEL    # 203 s of CPU with all-MiniLM-L6-v2 int8 (LoCoMo
                                            # embedded), 32 s once its vectors are cached

Measured (held out R@10 / MRR / multi-hop): words 0.727 / 0.528 / 0.421; fused 0.741 / 0.530
/ 0.441; in context, any value 0.751 / 0.539 / 0.446 (paraphrase R@5 down to 0.788 at the
value most chosen); in context, paraphrase kept (shipped: share 0.25, reach 2, kin 0.3) 0.748 /
0.536 / 0.442, paraphrase R@5 0.909 / MRR 0.650 (0.909 / 0.655 without), coding unchanged
(its memories are written hours apart: no sequence). One hop through the graph's entities has
nothing to walk here: 9 of 2,760 turns name an entity the offline extractor knows (5 distinct),
4 of 760 questions name one outright.

LoCoMo's vectors are kept in a cache (``bench.embedded_cache``): the first run embeds (about
150 s of CPU with all-MiniLM-L6-v2 int8), later ones read them.
"""

from __future__ import annotations

import asyncio
import collections
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from backends.graph import in_context, local_model, meaning
from backends.model import Episode
from backends.protocol import upsert_all
from bench import coding, embedded_cache, locomo, paraphrase, semantic
from tests import coding_corpus

OFF = (0.0, 1, -1.0)
GRID = [OFF, *((s, d, kin) for s in (0.25, 0.5, 1.0) for d in (1, 2)
               for kin in (-1.0, 0.2, 0.3, 0.4))]
"""(SHARE, REACH, KIN) tried, the idea off first; a KIN of -1 lets every neighbour in"""
Values = tuple[float, int, float]


def _ranked(lex: semantic.Ranked, near: semantic.Ranked, top: int) -> list[str]:
    fused = meaning.fuse(lex, near, limit=top, weight=meaning.meaning_weight(lex))
    return [key for key, _ in fused]


def _context(episodes: Sequence[Episode], vectors: np.ndarray, values: Values
             ) -> in_context.Context:
    share, reach, kin = values
    return in_context.Context.build(range(len(episodes)),
                                    [in_context.Written.of(e) for e in episodes], vectors,
                                    share=share, reach=reach, kin=kin)


def _nearest(ids: Sequence[str], cosines: np.ndarray, rows: np.ndarray) -> semantic.Ranked:
    order = rows[np.argsort(-cosines[rows], kind="stable")[:meaning.CANDIDATES]]
    return [(ids[row], float(cosines[row])) for row in order]


def locomo_rows(given: semantic.Embedded, admissible: Sequence[Values]
                ) -> tuple[list[str], Values]:
    """The held-out rows; the values most often chosen among ``admissible``."""
    data = given.data
    qids = [q.qid for q in data.questions]
    asked = {q.qid: (n, q.group_id) for n, q in enumerate(data.questions)}
    similarity = given.items @ given.questions.T

    def every(values: Values) -> dict[str, list[str]]:
        context = _context(data.items, given.items, values)
        found = {}
        for qid in qids:
            n, group = asked[qid]
            near = _nearest(given.item_ids, context.cosines(similarity[:, n]), given.rows[group])
            found[qid] = _ranked(given.lex[qid], near, locomo.TOP)
        return found

    lexical = {qid: [key for key, _ in given.lex[qid]][:locomo.TOP] for qid in qids}
    grid = {values: every(values) for values in GRID}
    lines = ["LoCoMo dev held out (mean of 10 splits, 3 tune / 2 held out), same run",
             *semantic.table_head(),
             semantic.table_row("lexical", semantic.cross_validated(data, {0: lexical})[0]),
             semantic.table_row("fused (shipped before)", semantic.cross_validated(
                 data, {0: grid[OFF]})[0])]
    for name, tried in (("any value", GRID), ("values leaving the paraphrase set as it was",
                                              admissible)):
        held, chosen = semantic.cross_validated(data, {v: grid[v] for v in tried})
        lines.append(semantic.table_row(f"fused + in context (CV, {name}), chose (share, reach, "
                                        f"kin): {dict(collections.Counter(chosen))}", held))
    return lines, collections.Counter(chosen).most_common(1)[0][0]


async def _lexical(episodes: Sequence[Episode], questions: Mapping[str, str], group: str
                   ) -> dict[str, semantic.Ranked]:
    from fallback import FileBackend

    with tempfile.TemporaryDirectory() as scratch:
        store = await FileBackend.open(Path(scratch) / "files", watch=False)
        try:
            await upsert_all(store, episodes)
            found = {}
            for key, text in questions.items():
                hits = await store.search(text, group_ids=[group], limit=meaning.CANDIDATES)
                found[key] = [(hit.episode.id, hit.score) for hit in hits]
            return found
        finally:
            await store.aclose()


def _fused_runs(model: local_model.LocalEmbedder, episodes: Sequence[Episode],
                questions: Mapping[str, str], group: str, grid: Sequence[Values], top: int
                ) -> dict[object, dict[str, list[str]]]:
    """Words alone ("lexical") and fused in context at each of ``grid``, for ``questions``
    over ``episodes``."""
    lex = asyncio.run(_lexical(episodes, questions, group))
    vectors = model.embed([f"{e.name}\n{e.body}" for e in episodes])
    similarity = vectors @ model.embed(list(questions.values())).T
    ids = [e.id for e in episodes]
    rows = np.arange(len(episodes))
    out: dict[object, dict[str, list[str]]] = {
        "lexical": {key: [k for k, _ in lex[key]][:top] for key in questions}}
    for values in grid:
        context = _context(episodes, vectors, values)
        out[values] = {key: _ranked(lex[key], _nearest(ids, context.cosines(similarity[:, n]),
                                                       rows), top)
                       for n, key in enumerate(questions)}
    return out


def paraphrase_runs(model: local_model.LocalEmbedder) -> dict[object, paraphrase.Score]:
    pairs = paraphrase.load()
    found = _fused_runs(model, [p.episode() for p in pairs], {p.id: p.query for p in pairs},
                        paraphrase.GROUP, GRID, paraphrase.TOP)
    return {values: paraphrase.score(pairs, ranked) for values, ranked in found.items()}


def admissible(scores: Mapping[object, paraphrase.Score]) -> list[Values]:
    """The values whose paraphrase R@5 is not below the fusion's without context."""
    return [v for v in GRID if scores[v].r5 >= scores[OFF].r5]


def other_rows(model: local_model.LocalEmbedder, scores: Mapping[object, paraphrase.Score],
               values: Values) -> list[str]:
    lines = ["Paraphrase set: R@5 / MRR", "| ranking | R@5 | MRR |", "|---|---|---|"]
    for name, key in (("lexical", "lexical"), ("fused (shipped before)", OFF),
                      (f"fused + in context {values}", values)):
        lines.append(f"| {name} | {scores[key].r5:.3f} | {scores[key].mrr:.3f} |")
    data = coding_corpus.project()
    questions = {str(n): q.text for n, q in enumerate(data.questions)}
    found = _fused_runs(model, data.memories, questions, coding_corpus.GROUP, [OFF, values],
                        coding.TOP)
    lines += ["Coding benchmark (words + vectors, without the graph's links): R@10 / MRR "
              "(all questions)", "| ranking | R@10 | MRR |", "|---|---|---|"]
    for name, key in (("lexical", "lexical"), ("fused (shipped before)", OFF),
                      (f"fused + in context {values}", values)):
        quality = coding._score(data.questions, [found[key][k] for k in questions],
                                [0.0] * len(questions))
        lines.append(f"| {name} | {quality.r10['all']:.3f} | {quality.mrr['all']:.3f} |")
    return lines


def entity_rows(data: locomo.LoCoMo) -> list[str]:
    """What one hop through the graph's entities could walk on LoCoMo: the offline extractor
    (``backends.search.entities``) names files, modules and CamelCase names, which talk seldom
    holds."""
    from backends.search import entities, expansion

    naming = [item for item in data.items if entities.extract(item).entities]
    named = {(e.label, e.name) for item in naming for e in entities.extract(item).entities}
    asking = [q for q in data.questions if expansion.query_entities(q.text, [q.group_id])[1]]
    return [f"Entities for a hop: {len(naming)} of {len(data.items)} turns name one "
            f"({len(named)} distinct: {', '.join(sorted(n for _, n in named))}); "
            f"{len(asking)} of {len(data.questions)} questions name one outright"]


def main() -> None:
    started = time.process_time()
    model = local_model.embedder(sys.argv[1])
    scores = paraphrase_runs(model)
    rows, chosen = locomo_rows(embedded_cache.embedded(model), admissible(scores))
    print("\n".join(rows), flush=True)
    print("\n".join(entity_rows(locomo.load())), flush=True)
    print("\n".join(other_rows(model, scores, chosen)))
    print(f"({time.process_time() - started:.0f} s of CPU)")


if __name__ == "__main__":
    main()
