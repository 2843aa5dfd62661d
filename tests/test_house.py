"""Imports point one way through the house: interfaces -> context, capture -> agent -> store -> the
layers (backends, fallback, migrate, seeds) -> the shared model. Read from the source, lazy imports
included, so a room cannot reach up even inside a function."""

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
    ("backends", "model"),
    ("fallback", "file layer"),
    ("migrate", "migration"),
    ("seeds", "seeds"),
    ("memory.store", "store"),
    ("memory.agent", "agent"),
    ("memory.context", "context"),
    ("memory.capture", "capture"),
    ("memory", "interfaces"),
)
BELOW = {
    "model": set(),
    "graph layer": {"model"},
    "kuzu engine": {"model", "graph layer"},
    "falkor engine": {"model", "graph layer"},
    "file layer": {"model"},
    "migration": {"model"},
    "seeds": {"model"},
    "store": {"model", "graph layer", "kuzu engine", "falkor engine", "file layer", "migration",
              "seeds"},
    "agent": {"model", "file layer", "migration", "seeds", "store"},
    "context": {"model", "seeds", "store", "agent"},
    "capture": {"model", "graph layer", "file layer", "migration", "seeds", "store", "agent"},
    "interfaces": {"model", "graph layer", "kuzu engine", "falkor engine", "file layer",
                   "migration", "seeds", "store", "agent", "context", "capture"},
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


def upward_imports() -> list[str]:
    wrong = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            name = module_name(path)
            if name in FACADES:
                continue
            own = room(name)
            assert own is not None, name
            for target in sorted(imports(path, name)):
                theirs = room(target)
                if theirs is None or theirs == own or theirs in BELOW[own]:
                    continue
                wrong.append(f"{name} ({own}) imports {target} ({theirs})")
    return wrong


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
