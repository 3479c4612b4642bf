"""Draw the graph behind a scalar `Variable` (notebook 02) with `coursetools.graphs.draw_graph`.

Works with any node object that has `value`, `grad`, `parents` and `local_grads` (and, optionally,
`op`): the walk is iterative, so it never recurses, and each node is drawn once however often it
is used. Meant for small graphs (a few dozen nodes); a big graph is refused rather than drawn.
"""

from __future__ import annotations

from collections.abc import Mapping

from .graphs import draw_graph


def graph_of(root) -> list:
    """Every node the root depends on (the root included), each once, found without recursion."""
    seen = {id(root): root}
    stack = [root]
    while stack:
        node = stack.pop()
        for parent in getattr(node, "parents", ()):
            if id(parent) not in seen:
                seen[id(parent)] = parent
                stack.append(parent)
    return list(seen.values())


def draw_variable_graph(
    root,
    *,
    names: Mapping | None = None,
    ax=None,
    title: str | None = None,
    max_nodes: int = 40,
    edge_labels: bool = True,
):
    """Draw `root`'s graph: each box shows the operation, the value and the grad of one node.

    `names` maps nodes (the objects themselves) to names shown in their boxes, e.g. {x: "x", y: "y"}.
    Edges are labelled with the local derivative each operation recorded for that input.
    """
    nodes = graph_of(root)
    if len(nodes) > max_nodes:
        raise ValueError(
            f"the graph has {len(nodes)} nodes; draw_variable_graph draws at most {max_nodes} "
            "(pass max_nodes=... to draw more)"
        )
    named = {id(k): v for k, v in (names or {}).items()}
    labels, edges = {}, []
    for node in nodes:
        op = getattr(node, "op", "") or ("input" if not node.parents else "?")
        head = f"{named[id(node)]} = {op}" if id(node) in named and op != "input" else named.get(id(node), op)
        labels[id(node)] = f"{head}\nvalue {node.value:.4g}\ngrad {node.grad:.4g}"
        for parent, local in zip(node.parents, node.local_grads):
            edges.append((id(parent), id(node), f"{local:.3g}" if edge_labels else ""))
    return draw_graph(labels, edges, ax=ax, title=title, highlight=[id(root)])
