"""No two modules of the house import each other, directly or around a circle: lazy imports and
those made only for type checking count (a circle read either way is one knot to untie)."""

from __future__ import annotations

from test_house import PACKAGES, REPO, imports, module_name


def import_graph(packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """module -> the modules of ours it imports (a package's ``__init__`` re-exports left out:
    importing ``backends.graph`` for ``GraphBackend`` is an import of where it lives)."""
    modules = {module_name(path): path for package in packages
               for path in sorted((REPO / package).rglob("*.py"))}
    return {name: {target for target in imports(path, name)
                   if target in modules and target != name
                   and modules[target].name != "__init__.py"}
            for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in order:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], order[target])
        if low[node] == order[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return found


def test_the_house_has_no_circles() -> None:
    assert circles(import_graph()) == []


def test_the_check_sees_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
