"""The graph layer: graphiti's data model on embedded Kùzu, offline. Importing this package
imports neither graphiti nor kuzu; ``GraphBackend.open`` does, and says so when they are missing."""

from backends.graph.embedder import Embedder, HashingEmbedder
from backends.graph.store import GraphBackend

__all__ = ["Embedder", "GraphBackend", "HashingEmbedder"]
