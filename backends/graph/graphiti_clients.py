"""Our embedder as graphiti's ``EmbedderClient``, so that graphiti's own search
(``Graphiti.search``, ``search_`` recipes) compares its query vectors with the vectors dualmem
stored (``name_embedding``, ``fact_embedding``). Importing this module imports graphiti."""

from __future__ import annotations

from collections.abc import Iterable

from backends.graph.embedder import AnyEmbedder, embed
from backends.graph.graphiti_import import importing_graphiti

with importing_graphiti():  # the enrichment's first import of graphiti
    from graphiti_core.embedder.client import EmbedderClient


class GraphitiEmbedder(EmbedderClient):
    def __init__(self, embedder: AnyEmbedder) -> None:
        self.embedder = embedder

    async def create(
        self, input_data: str | list[str] | Iterable[int] | Iterable[Iterable[int]]
    ) -> list[float]:
        text = input_data if isinstance(input_data, str) else " ".join(map(str, input_data))
        return [float(x) for x in (await embed(self.embedder, [text]))[0]]

    async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in await embed(self.embedder, input_data_list)]
