"""No import cycle among pmctx's modules, function-level (lazy) imports included.

The import-linter contract ``acyclic_siblings`` in ``pyproject.toml`` forbids cycles among
the children of every package; this test also covers a package's ``__init__`` (which the
contract does not count as a child), and names the modules of each cycle it finds.
"""

import grimp


def import_cycles(package: str) -> list[list[str]]:
    """Strongly connected components (more than one module, or a self-import) of the graph."""
    graph = grimp.build_graph(package, cache_dir=None)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for root in sorted(edges):  # Tarjan's algorithm, iterative (no recursion limit)
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    cycles.append(sorted(component))
    return cycles


def test_pmctx_has_no_import_cycle():
    cycles = import_cycles("pmctx")
    assert cycles == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)
