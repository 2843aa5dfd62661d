"""The embedded engines: Kùzu 0.11.3 (archived upstream, the default) and LadybugDB, its
maintained fork. They share one API (``Database``, ``Connection``, prepared statements, Cypher),
so the graph layer's code is the same for both; what differs is here: the module, the file.

One process can load only one of them. Both are the same C++ code base renamed, and both
register the same native types (``Database``, ...) with pybind11, whose registry is shared by
every extension in a process: the second to load fails ("generic_type: type "Database" is
already registered"). ``load`` refuses that with ``BackendUnavailable`` (reason "engine
conflict") before it is tried, and a move from one engine to the other runs each side in a
process of its own (``memory.store.engine_move``).

The bridge: graphiti's ``KuzuDriver`` (and the schema we take from it) does ``import kuzu``. In a
process that loaded LadybugDB, the name ``kuzu`` is bound to the ``ladybug`` module, so graphiti's
own Kùzu driver and queries run unchanged on LadybugDB (tests/graph/test_graphiti_reads shows
graphiti reading what we wrote).
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

from backends.errors import BackendUnavailable
from backends.graph.engine_names import DEFAULT_ENGINE, ENGINES, Engine
from backends.lean_typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

LAYER = "graph"
FILES: dict[Engine, str] = {"kuzu": "memory.kuzu", "ladybug": "memory.lbug"}
INSTALL_HINTS: dict[Engine, str] = {
    "kuzu": "pip install 'kuzu==0.11.3' 'graphiti-core==0.31.1'",
    "ladybug": "pip install 'ladybug==0.22.0' 'graphiti-core==0.31.1'",
}
FULL_TEXT: dict[Engine, bool] = {"kuzu": True, "ladybug": False}
"""whether the engine bundles its full-text extension, which graphiti's ``Graphiti.search``
needs on an embedded graph (LadybugDB downloads it on ``INSTALL FTS``: no network here; our own
search needs none)"""
NULL_WHEN_MISSING: dict[Engine, bool] = {"kuzu": True, "ladybug": False}
"""whether a parameter a query names but the call leaves out is bound to NULL (Kùzu 0.11) or
refused ("Parameter valid_at not found", LadybugDB 0.22). graphiti's Kùzu driver leaves out
every None-valued parameter, relying on the former."""
MAGIC: dict[Engine, bytes] = {"kuzu": b"KUZU", "ladybug": b"LBUG"}
"""how each engine's database file begins"""
default: Engine = DEFAULT_ENGINE
"""the engine ``GraphBackend.open`` uses when none is named (the configuration always names
one; a test run on LadybugDB sets this, so suites that open graphs by path run on it)"""

BUFFER_POOL = 1 << 30
"""bytes of the engine's page cache. Its default, 80 % of the machine's memory, costs every open
~100k page faults (a tenth of a second of system time, paid by each CLI call that opens the
graph) and lets one agent's graph claim most of a laptop; a 100k-memory graph is ~250 MB."""

_loaded: dict[str, Engine] = {}


def open_database(module: ModuleType, file: Path, *, read_only: bool = False) -> Any:
    """The engine's ``Database`` on ``file``, with our page cache size."""
    return module.Database(str(file), read_only=read_only, buffer_pool_size=BUFFER_POOL)


def loaded() -> Engine | None:
    """The embedded engine this process has loaded, if any."""
    return _loaded.get("engine")


def load(engine: Engine) -> ModuleType:
    """The engine's Python module, its native part loaded; ``BackendUnavailable`` when it is not
    installed or the other engine is loaded in this process."""
    other = _loaded.get("engine")
    if other is not None and other != engine:
        raise BackendUnavailable(
            LAYER, "engine conflict",
            f"{other} is loaded in this process, and {engine} cannot load beside it (one "
            "process, one embedded engine); use a process of its own")
    if other is None and _native_loaded(_other(engine)):
        raise BackendUnavailable(
            LAYER, "engine conflict",
            f"{_other(engine)} is loaded in this process; {engine} cannot load beside it")
    try:
        module = importlib.import_module(engine)
        if engine == "ladybug" and module.get_pybind_module() is None:
            raise ImportError("ladybug's native module did not load")
    except ImportError as exc:
        raise BackendUnavailable(LAYER, "not installed", INSTALL_HINTS[engine]) from exc
    if engine == "ladybug":
        # The bridge (see the module's docstring): graphiti's `import kuzu` finds LadybugDB.
        sys.modules.setdefault("kuzu", module)
    _loaded["engine"] = engine
    return module


def written_by_another(file: Path, engine: Engine) -> Engine | None:
    """The other engine, when ``file`` (which ``engine`` refused) is that engine's database."""
    other = _other(engine)
    try:
        with file.open("rb") as head:
            return other if head.read(len(MAGIC[other])) == MAGIC[other] else None
    except OSError:
        return None


def _other(engine: Engine) -> Engine:
    return next(each for each in ENGINES if each != engine)


def _native_loaded(engine: Engine) -> bool:
    if engine == "kuzu":
        module = sys.modules.get("kuzu")
        # Not the bridge: the real Kùzu, whose import loads its native module.
        return module is not None and module.__name__ == "kuzu"
    ladybug = sys.modules.get("ladybug._backend")
    return ladybug is not None and getattr(ladybug, "_PYBIND_MODULE", None) is not None
