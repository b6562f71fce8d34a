"""Check leasehold's import graph against the architecture the tree shows.

A *part* is a top-level module or subpackage of ``leasehold`` (``model``, ``client``,
``worker``, ...), and, inside the coordinator, one of its subpackages or modules
(``coordinator.api``, ``coordinator.service``, ``coordinator.store``, ...); the store's
drivers are parts of their own (``coordinator.store.sqlite``). Every ``import`` in the
package is read with ``ast`` (those inside functions too; those under
``if TYPE_CHECKING:`` are left out, as they never run). Run by ``make test`` and
``make check``::

    .venv/bin/python scripts/check_imports.py

The rules (DESIGN.md, "The shape of the code"):

- no cycle between parts;
- the kernel (``model``, ``errors``, ``job_fields``, ``batch_items``, ``tracing``,
  ``_lazy``, ``_version``) imports only the kernel: both sides share it;
- the client side (``client``, ``worker``, ``tasks``) and the public conformance kit never
  import the coordinator, and the coordinator never imports them: they meet over HTTP;
  the one exception, ``transactional``, enqueues in the application's own database
  transaction with the coordinator's checks (a typed task may enqueue through it);
- inside the coordinator, the HTTP layer calls the service, the service applies the pure
  rules to the store; the rules do no I/O (they see the store only through the plain data
  of its contract); the store imports nothing of the rules or the service (a rule is
  handed to it as a function), and its drivers nothing of each other;
- the test mode (``testing``) puts a coordinator and the client side together in one
  process, as the command line does: it may import both, and nothing imports it;
- the command line may import anything.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "leasehold"
KERNEL = {"model", "errors", "job_fields", "batch_items", "tracing", "_lazy", "_version"}
CLIENT_SIDE = {"client", "worker", "tasks"}
C = "coordinator."
# part -> the parts (or single modules, by their full name under leasehold.) it may import.
ALLOWED: dict[str, set[str]] = {
    **{k: set(KERNEL) for k in KERNEL},
    "__main__": {"cli"},
    "client": KERNEL,
    "worker": KERNEL | {"client"},
    # ... and, with a database connection instead of a client, enqueues in the caller's
    # transaction (below).
    "tasks": KERNEL | {"client", "worker", "transactional"},
    # Enqueue in the application's own transaction (DESIGN.md §26): the application's
    # process checks a job with the coordinator's own wire model and fingerprints (so the
    # two ways in cannot drift apart) and calls the database's leasehold_enqueue. It runs
    # no part of a coordinator: no service, no store, no driver.
    "transactional": KERNEL
    | {"client", C + "api.schemas", C + "service.requests", C + "rules", C + "store.contract"},
    "conformance": KERNEL | {"client", "worker"},
    # The test mode: a coordinator (the app, its clock and store, the maintenance passes it
    # runs when the test moves time) and the client side, joined in one process.
    "testing": KERNEL
    | CLIENT_SIDE
    | {C + "app", C + "clock", C + "settings", C + "store.open", C + "maintenance"},
    C + "clock": set(),
    C + "dashboard": set(),
    C + "auth_tokens": set(),
    C + "metrics": KERNEL,
    C + "settings": KERNEL | {C + "auth_tokens"},
    C + "rules": KERNEL | {C + "store.contract"},
    C + "store": KERNEL | {C + "clock"},
    C + "store.sqlite": KERNEL | {C + "clock", C + "store"},
    C + "store.postgres": KERNEL | {C + "clock", C + "store"},
    # Choosing a driver by URL: the one module that knows them all.
    # ... and hands a store the rules it applies of its own accord (rules.graph.RULES).
    C + "store.open": KERNEL
    | {C + "clock", C + "rules", C + "store", C + "store.sqlite", C + "store.postgres"},
    C + "startup": KERNEL | {C + "store"},
    C + "service": KERNEL | {C + "rules", C + "store", C + "clock", C + "metrics"},
    C + "maintenance": KERNEL | {C + "rules", C + "service", C + "store"},
    C + "api": KERNEL
    | {C + "rules", C + "service", C + "store", C + "settings", C + "auth_tokens", C + "metrics"}
    | {C + "dashboard"},
    C + "server": KERNEL | {C + "api", C + "settings", C + "auth_tokens", C + "startup"},
    # app.py wires every part of the coordinator together; the command line may use all.
}
# Parts two levels below leasehold.coordinator: the store's drivers.
DEEP = {C + "store.sqlite", C + "store.postgres", C + "store.open"}


def part_of(module: str) -> str | None:
    """``leasehold.coordinator.service.job_service`` -> ``coordinator.service``;
    ``leasehold.client._client`` -> ``client``; None outside leasehold or for the root."""
    names = module.split(".")
    if names[0] != "leasehold" or len(names) < 2:
        return None
    if names[1] != "coordinator" or len(names) < 3:
        return names[1]
    deep = ".".join(names[1:4])
    return deep if deep in DEEP else ".".join(names[1:3])


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
    """The modules ``tree`` imports at run time, as absolute names (``from a import b``
    names ``a.b``, which is the module ``b`` when there is one and ``a`` otherwise)."""
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
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            yield from (_resolve(f"{source}.{alias.name}", source) for alias in node.names)
        else:
            yield from imported(node, module, is_package)


def _resolve(candidate: str, source: str) -> str:
    """``from a import b``: the module ``a.b`` if it exists, else ``a``."""
    path = PACKAGE.parent.joinpath(*candidate.split("."))
    return candidate if path.with_suffix(".py").exists() or path.is_dir() else source


def graph() -> dict[str, dict[str, set[str]]]:
    """part -> imported module -> the modules that import it (for the error messages)."""
    edges: dict[str, dict[str, set[str]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        source = part_of(module)
        if source is None:
            continue  # leasehold/__init__.py: the public surface re-exports every part
        edges.setdefault(source, {})
        tree = ast.parse(path.read_text(), str(path))
        for target in imported(tree, module, path.name == "__init__.py"):
            if part_of(target) not in (None, source):
                edges[source].setdefault(target, set()).add(module)
    return edges


def part_edges(edges: dict[str, dict[str, set[str]]]) -> dict[str, set[str]]:
    parts: dict[str, set[str]] = {}
    for source, targets in edges.items():
        parts.setdefault(source, set()).update(p for t in targets if (p := part_of(t)) is not None)
    return parts


def cycles(parts: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of more than one part (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(parts.get(node, ())):
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

    for node in sorted(parts):
        if node not in index:
            visit(node)
    return found


def allowed(part: str, target: str) -> bool:
    """Whether ``part`` may import the module ``leasehold.<target>``."""
    rule = ALLOWED.get(part)
    if rule is None:  # the command line, app.py, the coordinator package itself
        return part == "cli" or part.startswith(C) or part == "coordinator"
    names = target.split(".")
    # A rule names a part or a module: the module itself, or anything inside it.
    return any(".".join(names[:n]) in rule for n in range(1, len(names) + 1))


def problems() -> list[str]:
    edges = graph()
    parts = part_edges(edges)
    found = []
    for component in cycles(parts):
        inside = [
            f"  {a} -> {b} (in {', '.join(sorted(m for t, ms in edges[a].items() if part_of(t) == b for m in ms))})"
            for a in component
            for b in sorted(parts[a])
            if b in component
        ]
        found.append(f"import cycle between {', '.join(component)}:\n" + "\n".join(inside))
    for part, targets in sorted(edges.items()):
        for target, where in sorted(targets.items()):
            if not allowed(part, target.removeprefix("leasehold.")):
                modules = ", ".join(sorted(where))
                found.append(f"{part} must not import {target} (in {modules})")
    return found


def main() -> int:
    found = problems()
    for problem in found:
        print(problem, file=sys.stderr)
    if not found:
        n = len(part_edges(graph()))
        print(f"imports: {n} parts, no cycle, every import as the architecture allows")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
