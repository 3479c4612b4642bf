"""Draw a small computational graph with matplotlib: boxes for nodes, arrows for data flow.

Nodes are laid out left to right by depth (the longest path from an input), so inputs sit on the
left and the output on the right, the way evaluation traces are usually drawn.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Hashable, Iterable, Mapping, Sequence

import matplotlib.pyplot as plt


def layer_of(nodes: Iterable[Hashable], edges: Sequence[tuple]) -> dict:
    """Depth of each node: 0 for inputs, 1 + the deepest parent otherwise (iterative, no recursion)."""
    parents = defaultdict(list)
    children = defaultdict(list)
    for src, dst, *_ in edges:
        parents[dst].append(src)
        children[src].append(dst)
    nodes = list(nodes)
    waiting = {n: len(parents[n]) for n in nodes}
    depth = {n: 0 for n in nodes if waiting[n] == 0}
    ready = list(depth)
    while ready:
        node = ready.pop()
        for child in children[node]:
            depth[child] = max(depth.get(child, 0), depth[node] + 1)
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    if len(depth) != len(nodes):
        raise ValueError("the graph has a cycle: a computational graph must be acyclic")
    return depth


def draw_graph(nodes: Mapping[Hashable, str], edges: Sequence[tuple], *, ax=None, title: str | None = None,
               highlight: Iterable[Hashable] = (), node_color: str = "#eef3fb", highlight_color: str = "#fde7c8"):
    """Draw `nodes` (id -> label, may span lines) joined by `edges` ((src, dst) or (src, dst, label)).

    Returns the matplotlib Axes. `highlight` nodes get a warmer colour (e.g. the output).
    """
    depth = layer_of(nodes, edges)
    columns = defaultdict(list)
    for node in nodes:
        columns[depth[node]].append(node)
    position = {}
    for col, members in columns.items():
        for row, node in enumerate(members):
            position[node] = (col * 3.0, (len(members) - 1) / 2.0 - row * 1.0) if len(members) > 1 else (col * 3.0, 0.0)
            position[node] = (position[node][0], position[node][1] * 1.6)
    width = max(depth.values(), default=0) + 1
    height = max((len(m) for m in columns.values()), default=1)
    if ax is None:
        _, ax = plt.subplots(figsize=(min(2.6 * width + 1, 16), 1.4 * height + 1.2))
    highlight = set(highlight)
    for src, dst, *label in edges:
        (x0, y0), (x1, y1) = position[src], position[dst]
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                    arrowprops=dict(arrowstyle="-|>", color="#555", shrinkA=34, shrinkB=34, lw=1.2))
        if label and label[0]:
            ax.text((x0 + x1) / 2, (y0 + y1) / 2 + 0.12, label[0], ha="center", va="bottom", fontsize=8, color="#333")
    for node, text in nodes.items():
        x, y = position[node]
        ax.text(x, y, text, ha="center", va="center", fontsize=9, family="monospace",
                bbox=dict(boxstyle="round,pad=0.4", fc=highlight_color if node in highlight else node_color, ec="#335"))
    xs = [p[0] for p in position.values()] or [0]
    ys = [p[1] for p in position.values()] or [0]
    ax.set_xlim(min(xs) - 1.5, max(xs) + 1.5)
    ax.set_ylim(min(ys) - 1.0, max(ys) + 1.0)
    ax.axis("off")
    if title:
        ax.set_title(title)
    return ax
