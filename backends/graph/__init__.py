"""The graph layer: graphiti's data model on embedded Kùzu, offline. Importing this package
imports neither graphiti nor kuzu; ``GraphBackend.open`` does, and says so when they are missing.

Each engine has a room, its Cypher in one ``queries.py``: ``kuzu/`` (embedded Kùzu and
LadybugDB, one code base: ``kuzu/engines.py``) and ``falkor/`` (a FalkorDB server). Beside them,
what every engine shares: the ``Graph`` protocol (``protocol.py``, held to one contract by
tests/contract/test_graph.py), search and links (``shared.py``, ``index.py``, ``links.py``),
vectors (``embedder.py``, ``stored.py``), history (``history.py``) and graphiti's LLM
extraction (``enrich.py``). The engines never import each other.

On disk, ``<home>/graph/``:

- ``memory.kuzu`` (+ ``.wal``): one Kùzu database with graphiti's schema (its ``SCHEMA_QUERIES``).
  An episode is an ``Episodic`` row under our id: ``name``, ``group_id``, ``content`` (the body),
  ``created_at`` and ``valid_at`` as naive UTC (Kùzu drops zones), ``source`` = graphiti's
  EpisodeType (``json`` for structured bodies, else ``text``), ``source_description`` = our
  source; plus our columns ``kind``, ``invalid_at``, ``valid_at_set`` (``valid_at`` holds
  created_at when we have none, since graphiti requires one) and ``embedding_f16`` (base64 of
  the little-endian float16 vector). Rows without ``kind`` are not ours and are left alone.
- Entities an episode names (``backends.search.entities``: files, modules, components, commands,
  patterns, tasks, features, decisions) are ``Entity`` rows, labels ``["Entity", "File"|...]``,
  uuid5 of group + label + folded name, with graphiti's ``name_embedding``, linked from their
  episodes by ``MENTIONS``; facts between them are graphiti's ``RELATES_TO`` (``kuzu/rows.py``).
  An entity goes when nothing mentions or relates it any more.
- ``DualmemMeta(key, value)``: ``schema_version`` (2; a version-1 graph is upgraded at open,
  ``kuzu/upgrade.py``, ``upgrade_after`` marking how far), ``embedder`` and ``dimension``.
  Opening with another embedder raises ``BackendUnavailable`` (reason "embedder mismatch") until
  ``await GraphBackend.reembed(path, embedder)`` has recomputed the stored vectors.
- ``owner.json``: the pid of the process holding the database, so a refused opener can name it.

The search index (``index.py``: ``index.sqlite3``, and its vectors read in place from
``vectors.f32``, ``vectors.py``) is derived: rebuilt from the rows when missing, stale or damaged.
"""

import backends.lean_typing as _typing
from backends.lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from backends.graph.embedder import Embedder, HashingEmbedder
    from backends.graph.kuzu.database import NO_ROOM, READ_ONLY, owner_pid
    from backends.graph.kuzu.store import GraphBackend

__all__ = ["NO_ROOM", "READ_ONLY", "Embedder", "GraphBackend", "HashingEmbedder", "owner_pid"]

_SOURCES: dict[str, tuple[str, ...]] = {
    "backends.graph.kuzu.database": ("NO_ROOM", "READ_ONLY", "owner_pid"),
    "backends.graph.embedder": ("Embedder", "HashingEmbedder"),
    "backends.graph.kuzu.store": ("GraphBackend",),
}

if not _typing.TYPE_CHECKING:
    __getattr__, __dir__ = _lazy_exports(__name__, _SOURCES)
