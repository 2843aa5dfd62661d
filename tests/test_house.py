"""Imports point one way through the house: interfaces -> context, capture -> agent -> store ->
the importers -> the layers (graph, file, migration, seeds) -> the search engine -> the shared
model. Read from the source, lazy imports included, so a room cannot reach up even inside a
function; and every edge the table permits is one some module uses, so the table stays the
house as built."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("backends", "fallback", "migrate", "seeds", "memory")

# Most specific prefix first: a module belongs to the first room whose prefix it starts with.
ROOMS = (
    ("backends.graph.kuzu", "kuzu engine"),
    ("backends.graph.falkor", "falkor engine"),
    ("backends.graph", "graph layer"),
    ("backends.search", "search"),
    ("backends", "model"),
    ("fallback", "file layer"),
    ("migrate", "migration"),
    ("seeds", "seeds"),
    ("memory.importers", "importers"),
    ("memory.store", "store"),
    ("memory.agent", "agent"),
    ("memory.context", "context"),
    ("memory.capture", "capture"),
    ("memory.curation", "curation"),
    ("memory", "interfaces"),
)
BELOW = {
    "model": set(),
    "search": {"model"},
    "graph layer": {"model", "search"},
    "kuzu engine": {"model", "search", "graph layer"},
    "falkor engine": {"model", "search", "graph layer"},
    "file layer": {"model", "search"},
    "migration": {"model"},
    "seeds": {"model"},
    "importers": {"model", "migration"},
    "store": {"model", "graph layer", "kuzu engine", "falkor engine", "file layer", "migration",
              "importers"},
    "agent": {"model", "file layer", "seeds", "store"},
    "context": {"model", "search", "seeds", "agent"},
    "capture": {"model", "graph layer", "file layer", "store", "agent"},
    "curation": {"model", "graph layer", "file layer", "store", "agent"},
    "interfaces": {"model", "search", "graph layer", "falkor engine", "file layer", "seeds",
                   "store", "agent", "context", "capture", "curation"},
}
# A package's own ``__init__`` re-exports its public names (lazily), wherever they live.
FACADES = {"memory", "backends", "backends.graph"}


def room(module: str) -> str | None:
    for prefix, name in ROOMS:
        if module == prefix or module.startswith(prefix + "."):
            return name
    return None


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, name: str) -> set[str]:
    """Every module ``path`` imports, relative imports resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found.add(base)
            # ``from memory import demo``: a submodule imported by name
            found.update(f"{base}.{alias.name}" for alias in node.names
                         if (REPO / base.replace(".", "/") / f"{alias.name}.py").exists())
    return found


def edges() -> list[tuple[str, str, str, str]]:
    """Every import from one room into another: (module, its room, target, the target's room)."""
    found = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            name = module_name(path)
            if name in FACADES:
                continue
            own = room(name)
            assert own is not None, name
            for target in sorted(imports(path, name)):
                theirs = room(target)
                if theirs is not None and theirs != own:
                    found.append((name, own, target, theirs))
    return found


def upward_imports() -> list[str]:
    return [f"{name} ({own}) imports {target} ({theirs})"
            for name, own, target, theirs in edges() if theirs not in BELOW[own]]


def unused_edges(used: list[tuple[str, str, str, str]]) -> list[str]:
    taken = {(own, theirs) for _, own, _, theirs in used}
    return sorted(f"{own} -> {theirs}" for own, below in BELOW.items() for theirs in below
                  if (own, theirs) not in taken)


def test_every_module_has_a_room() -> None:
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            assert room(module_name(path)) is not None, path


def test_imports_point_down() -> None:
    assert upward_imports() == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    # The store reaching up into the agent API is the kind of import the rule forbids.
    source = tmp_path / "probe.py"
    source.write_text("from memory.agent.scopes import project_group\n")
    targets = imports(source, "memory.store.probe")
    assert "memory.agent.scopes" in targets
    assert room("memory.agent.scopes") not in BELOW[room("memory.store.probe") or ""]


def test_the_table_names_every_room_once() -> None:
    names = [name for _, name in ROOMS]
    assert len(set(names)) == len(names) and set(names) == set(BELOW)
    assert all(below <= set(BELOW) - {own} for own, below in BELOW.items())


def test_every_permitted_edge_is_used() -> None:
    # An edge nothing uses is a door left open: the table would permit more than the house is.
    assert unused_edges(edges()) == []


def test_the_check_sees_an_unused_edge() -> None:
    used = [edge for edge in edges() if (edge[1], edge[3]) != ("store", "importers")]
    assert unused_edges(used) == ["store -> importers"]
