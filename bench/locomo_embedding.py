"""Could a real sentence embedder reach LoCoMo's multi-hop evidence? The file layer's ranking
(its top ``CANDIDATES``, the same every layer serves) fused with a sentence embedder's cosine
over the question's conversation, each fusion's values chosen on the tuning half
(``bench.locomo_reach.TUNE``) and reported on the held-out half, beside the ranking alone and
the cosine alone, in one run. Not in the product: a measurement of what the configured-provider
path (``DUALMEM_EMBEDDER``) could give with such a model.

    python -m bench.locomo_embedding [VECTORS [MODEL@URL DIMENSION]]

``VECTORS`` is a folder of the normalised vectors of every item and question, written by
``bench/embed_locomo.py`` with any sentence-transformers model (in a Python that has it). With
``MODEL@URL``, an OpenAI-compatible endpoint serving the same model (``bench/embedding_endpoint.py``
or a local Ollama), the product itself is measured too: the graph layer with that embedder
configured (graphiti's own client; its vectors fill the list below the words' matches, as the
built-in's do) and with the built-in.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from backends.protocol import upsert_all
from bench import locomo
from bench.locomo_reach import TUNE

CANDIDATES = 60
Ranked = list[tuple[str, float]]
DEFAULT_VECTORS = Path(tempfile.gettempdir()) / "dualmem-locomo-vectors"


async def lexical(data: locomo.LoCoMo) -> dict[str, Ranked]:
    from fallback import FileBackend

    found: dict[str, Ranked] = {}
    with tempfile.TemporaryDirectory() as scratch:
        store = await FileBackend.open(Path(scratch) / "files", watch=False)
        try:
            await upsert_all(store, data.items)
            for question in data.questions:
                hits = await store.search(question.text, group_ids=[question.group_id],
                                          limit=CANDIDATES)
                found[question.qid] = [(hit.episode.id, hit.score) for hit in hits]
        finally:
            await store.aclose()
    return found


def cosine(data: locomo.LoCoMo, vectors: Path) -> dict[str, Ranked]:
    items, questions = np.load(vectors / "items.npy"), np.load(vectors / "questions.npy")
    item_ids = json.loads((vectors / "items.json").read_text())
    row = {key: i for i, key in enumerate(json.loads((vectors / "questions.json").read_text()))}
    groups: dict[str, list[int]] = {}
    for i, key in enumerate(item_ids):
        groups.setdefault(key.split(":", 1)[0], []).append(i)
    found = {}
    for question in data.questions:
        rows = np.array(groups[question.group_id])
        similarity = items[rows] @ questions[row[question.qid]]
        order = np.argsort(-similarity)[:CANDIDATES]
        found[question.qid] = [(item_ids[rows[j]], float(similarity[j])) for j in order]
    return found


def rrf(k: float, weight: float) -> Callable[[Ranked, Ranked], dict[str, float]]:
    def fuse(lex: Ranked, cos: Ranked) -> dict[str, float]:
        scores: dict[str, float] = {}
        for share, ranked in ((1.0, lex), (weight, cos)):
            for rank, (key, _) in enumerate(ranked):
                scores[key] = scores.get(key, 0.0) + share / (k + rank)
        return scores
    return fuse


def mix(weight: float) -> Callable[[Ranked, Ranked], dict[str, float]]:
    """The ranking's scores as a share of its best, plus ``weight`` times the cosine."""
    def fuse(lex: Ranked, cos: Ranked) -> dict[str, float]:
        best = lex[0][1] if lex else 1.0
        scores = {key: score / best for key, score in lex}
        for key, similarity in cos:
            scores[key] = scores.get(key, 0.0) + weight * similarity
        return scores
    return fuse


def top(scores: Mapping[str, float]) -> list[str]:
    return [key for key, _ in sorted(scores.items(), key=lambda kv: -kv[1])][:locomo.TOP]


def line(name: str, data: locomo.LoCoMo, ranked: Mapping[str, list[str]]) -> str:
    cells = []
    for part in ("all", "tune", "held out"):
        asked = [q for q in data.questions
                 if part == "all" or (q.group_id in TUNE) == (part == "tune")]
        quality = locomo.score(asked, ranked, [0.0] * len(asked))
        multi = quality.categories["multi-hop"]
        cells.append(f"{quality.overall.r10:.3f} / {quality.overall.mrr:.3f} / {multi.r10:.3f}")
    return f"| {name} | " + " | ".join(cells) + " |"


def table(vectors: Path) -> str:
    data = locomo.load()
    lex, cos = asyncio.run(lexical(data)), cosine(data, vectors)
    tune = [q for q in data.questions if q.group_id in TUNE]
    fusions = {f"rrf k={k} w={w}": rrf(k, w) for k in (10, 30, 60) for w in (0.5, 1.0)}
    fusions |= {f"mix w={w}": mix(w) for w in (0.15, 0.3, 0.6, 1.0)}
    ranked = {name: {q.qid: top(fuse(lex[q.qid], cos[q.qid])) for q in data.questions}
              for name, fuse in fusions.items()}

    def tuned(key: Callable[[locomo.Quality], float]) -> str:
        zeros = [0.0] * len(tune)
        return max(ranked, key=lambda name: key(locomo.score(tune, ranked[name], zeros)))

    best_multi = tuned(lambda q: q.categories["multi-hop"].r10)
    best_all = tuned(lambda q: q.overall.r10)
    rows = [
        "| retriever | all: R@10 / MRR / multi-hop R@10 | tune | held out |",
        "|---|---|---|---|",
        line("file layer (the product's ranking)", data,
             {k: [key for key, _ in v][:locomo.TOP] for k, v in lex.items()}),
        line("cosine only", data, {k: [key for key, _ in v][:locomo.TOP] for k, v in cos.items()}),
        line(f"best fusion for tune multi-hop ({best_multi})", data, ranked[best_multi]),
        line(f"best fusion for tune R@10 ({best_all})", data, ranked[best_all]),
    ]
    return "\n".join(rows)


async def graph_rankings(data: locomo.LoCoMo, embedder: Any) -> dict[str, list[str]]:
    from backends.graph import GraphBackend
    from bench.locomo_layers import ask

    with tempfile.TemporaryDirectory() as scratch:
        store = await GraphBackend.open(Path(scratch) / "graph", embedder=embedder)
        try:
            await upsert_all(store, data.items)
            return (await ask(store, data))[0]
        finally:
            await store.aclose()


def product_rows(provider: str, dimension: int) -> list[str]:
    from backends.graph import remote

    data = locomo.load()
    model, url = provider.split("@", 1)
    configured = remote.embedder(model, url=url, dimension=dimension)
    return [line("graph layer, built-in embedder", data, asyncio.run(graph_rankings(data, None))),
            line(f"graph layer, {model} configured", data,
                 asyncio.run(graph_rankings(data, configured)))]


def main() -> None:
    print(table(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_VECTORS))
    if len(sys.argv) > 3:
        print("\n".join(product_rows(sys.argv[2], int(sys.argv[3]))))


if __name__ == "__main__":
    main()
