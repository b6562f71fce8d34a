"""Check leasehold's import graph: no cycle between its parts, and the leaves stay leaves.

A part is a subpackage (``core``, ``store``, ``api``, ...) or a top-level module
(``model``, ``errors``, ``clock``, ...). Every ``import`` in the package is read with
``ast`` (those inside functions too; those under ``if TYPE_CHECKING:`` are left out, as
they never run). Run by ``make test`` and ``make check``::

    .venv/bin/python scripts/check_imports.py

Rules (DESIGN.md §11: the stores apply the rules, they do not know them):

- no cycle between parts;
- ``store`` imports only ``model``, ``job_fields``, ``errors`` and ``clock`` (the Store
  protocol and its backends are a leaf, as River's drivers import nothing of its client);
- ``model``, ``errors`` and ``clock`` import nothing else from leasehold; ``job_fields``
  and ``batch_items`` (shared by the client and the coordinator) only ``model``.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "leasehold"
ALLOWED = {
    "store": {"model", "job_fields", "errors", "clock"},
    "model": set(),
    "job_fields": {"model"},
    "batch_items": {"model"},
    "errors": set(),
    "clock": set(),
}


def part_of(module: str) -> str | None:
    """``leasehold.core.service`` -> ``core``; None outside leasehold or for the root."""
    names = module.split(".")
    if names[0] != "leasehold" or len(names) < 2:
        return None
    return names[1]


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    names = list(relative.parts)
    if names[-1] == "__init__":
        names.pop()
    return ".".join(names)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """The modules ``tree`` imports at run time, as absolute names."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            yield from (m for n in node.orelse for m in imported(n, module, is_package))
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                yield ".".join([*base, *([node.module] if node.module else [])])
            elif node.module:
                yield node.module
        else:
            yield from imported(node, module, is_package)


def graph() -> dict[str, dict[str, set[str]]]:
    """part -> imported part -> the modules that import it (for the error messages)."""
    edges: dict[str, dict[str, set[str]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        source = part_of(module)
        if source is None:
            continue  # leasehold/__init__.py: the public surface re-exports every part
        edges.setdefault(source, {})
        tree = ast.parse(path.read_text(), str(path))
        for target in map(part_of, imported(tree, module, path.name == "__init__.py")):
            if target is not None and target != source:
                edges[source].setdefault(target, set()).add(module)
    return edges


def cycles(edges: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """Every strongly connected set of more than one part (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def problems() -> list[str]:
    edges = graph()
    found = []
    for component in cycles(edges):
        inside = [
            f"  {a} -> {b} (in {', '.join(sorted(edges[a][b]))})"
            for a in component
            for b in sorted(edges[a])
            if b in component
        ]
        found.append(f"import cycle between {', '.join(component)}:\n" + "\n".join(inside))
    for part, allowed in ALLOWED.items():
        for target, where in sorted(edges.get(part, {}).items()):
            if target not in allowed:
                modules = ", ".join(sorted(where))
                found.append(f"{part} must not import {target} (in {modules})")
    return found


def main() -> int:
    found = problems()
    for problem in found:
        print(problem, file=sys.stderr)
    if not found:
        print(f"imports: no cycle between leasehold's {len(graph())} parts; leaves are leaves")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
