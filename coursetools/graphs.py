"""Draw a small computational graph with matplotlib: boxes for nodes, arrows for data flow.

Nodes are laid out left to right by depth (the longest path from an input), so inputs sit on the
left and the output on the right, the way evaluation traces are usually drawn.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence

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


def draw_graph(
    nodes: Mapping[Hashable, str],
    edges: Sequence[tuple],
    *,
    ax=None,
    title: str | None = None,
    highlight: Iterable[Hashable] = (),
    node_color: str = "#eef3fb",
    highlight_color: str = "#fde7c8",
):
    """Draw `nodes` (id -> label, may span lines) joined by `edges` ((src, dst) or (src, dst, label)).

    Returns the matplotlib Axes. `highlight` nodes get a warmer colour (e.g. the output).
    """
    depth = layer_of(nodes, edges)
    parents = defaultdict(list)
    for src, dst, *_ in edges:
        parents[dst].append(src)
    columns = defaultdict(list)
    for node in nodes:
        columns[depth[node]].append(node)
    # Order each column by the mean row of its parents (barycentre heuristic): fewer crossing edges.
    row = {}
    for col in sorted(columns):
        members = columns[col]
        if col > 0:
            members.sort(key=lambda n: sum(row[p] for p in parents[n]) / max(len(parents[n]), 1))
        for i, node in enumerate(members):
            row[node] = i
    position = {node: (depth[node] * 3.0, ((len(columns[depth[node]]) - 1) / 2.0 - row[node]) * 1.6) for node in nodes}
    width = max(depth.values(), default=0) + 1
    height = max((len(m) for m in columns.values()), default=1)
    if ax is None:
        _, ax = plt.subplots(figsize=(min(2.6 * width + 1, 16), 1.4 * height + 1.2))
    highlight = set(highlight)
    boxes = {}
    for node, text in nodes.items():
        x, y = position[node]
        boxes[node] = ax.text(
            x,
            y,
            text,
            ha="center",
            va="center",
            fontsize=9,
            family="monospace",
            zorder=3,
            bbox=dict(boxstyle="round,pad=0.4", fc=highlight_color if node in highlight else node_color, ec="#335"),
        )
    for src, dst, *label in edges:
        # Anchor the arrow on the boxes themselves, so its head stops at the edge of the target box.
        ax.annotate(
            "",
            xy=(0.0, 0.5),
            xycoords=boxes[dst],
            xytext=(1.0, 0.5),
            textcoords=boxes[src],
            zorder=2,
            arrowprops=dict(
                arrowstyle="-|>",
                color="#555",
                lw=1.2,
                shrinkA=6,
                shrinkB=6,
                patchA=boxes[src].get_bbox_patch(),
                patchB=boxes[dst].get_bbox_patch(),
            ),
        )
        if label and label[0]:
            (x0, y0), (x1, y1) = position[src], position[dst]
            ax.text(
                0.55 * x0 + 0.45 * x1,
                0.55 * y0 + 0.45 * y1 + 0.15,
                label[0],
                ha="center",
                va="bottom",
                fontsize=8,
                color="#333",
                zorder=4,
                bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.8),
            )
    xs = [p[0] for p in position.values()] or [0]
    ys = [p[1] for p in position.values()] or [0]
    ax.set_xlim(min(xs) - 1.5, max(xs) + 1.5)
    ax.set_ylim(min(ys) - 1.0, max(ys) + 1.0)
    ax.axis("off")
    if title:
        ax.set_title(title)
    return ax
