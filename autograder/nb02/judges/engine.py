"""Notebook 02's judges of the engine: topological order, backward, the whole engine, zero_grad."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import torch

from ...feedback import CheckFailed
from ...judges import answers
from ...probes.nb02_cases import (
    evaluate,
    graph_name,
    graph_spec,
    graph_words,
    random_expression_text,
    random_program,
    sample_nodes,
)
from ...registry import ProbeData, decides
from .common import (
    agree_with,
    describe,
    fail_with,
)

# one graph of each kind, in this order: sizes the visible tests do not use
_GRAPH_PLAN = (("random", 200), ("random", 60), ("reuse", 300), ("chain", 100_000), ("doubling", 60))


def draw_graphs(rng: random.Random, count: int) -> dict:
    return {"graphs": [(kind, n, rng.randrange(10**6)) for kind, n in (_GRAPH_PLAN * count)[:count]]}


def draw_zero_grad_graphs(rng: random.Random, count: int) -> dict:
    plan = (("reuse", 50), ("random", 100), ("chain", 100_000))
    return {"graphs": [(kind, n, rng.randrange(10**6)) for kind, n in (plan * count)[:count]]}


def draw_seeds(rng: random.Random, count: int) -> dict:
    return {"seeds": [rng.randrange(10**6) for _ in range(count)]}


def _reachable(spec: list) -> list[bool]:
    seen = [False] * len(spec)
    seen[-1] = True
    for i in range(len(spec) - 1, -1, -1):  # parents always have smaller indices
        if seen[i]:
            for p in spec[i][0]:
                seen[p] = True
    return seen


def _reference_grads(kind: str, n: int, seed: int) -> tuple[list[float], list[float]]:
    """Gradients of the output with respect to every node, and an error scale for each (the same
    gradients with every local derivative replaced by its absolute value): sums computed in another
    order differ by round-off relative to that scale, not to the (possibly cancelled) result."""
    spec, _ = graph_spec(kind, n, seed)
    reach = _reachable(spec)
    if kind == "chain":  # a path graph: the chain rule is a running product
        grads = [0.0] * len(spec)
        grads[-1] = 1.0
        for i in range(len(spec) - 1, 0, -1):
            grads[i - 1] = grads[i] * spec[i][1][0]
        return grads, [abs(g) for g in grads]
    result = []
    for absolute in (False, True):
        nodes: list[torch.Tensor] = []
        for parents, locals_ in spec:
            if not parents:
                nodes.append(torch.zeros((), dtype=torch.float64, requires_grad=True))
            else:
                terms = [nodes[p] * (abs(c) if absolute else c) for p, c in zip(parents, locals_)]
                node = terms[0]
                for t in terms[1:]:
                    node = node + t
                nodes.append(node)
        wanted = [i for i in range(len(spec)) if reach[i]]
        grads = torch.autograd.grad(nodes[-1], [nodes[i] for i in wanted], allow_unused=True)
        full = [0.0] * len(spec)
        for i, g in zip(wanted, grads):
            full[i] = 1.0 if i == len(spec) - 1 else (0.0 if g is None else float(g))
        result.append(full)
    return result[0], result[1]


@decides("check_topological_order", draw=draw_graphs)
def judge_topological_order(data: ProbeData, graphs: Sequence[Any]) -> None:
    for (kind, n, seed), order in zip(graphs, answers.per_case(data, graphs)):
        if not isinstance(order, list) or not all(type(i) is int for i in order):
            raise CheckFailed(answers.MISMATCH.format(why="a list of node numbers was expected"))
        spec, _ = graph_spec(kind, n, seed)
        reach = _reachable(spec)
        where = f"On {graph_words(kind, n)} (`nodes = {graph_name(kind, n, seed)}`), topological_order(nodes[-1])"
        if -1 in order:
            raise CheckFailed(
                f"{where} returned something that is not a node of the graph (item {order.index(-1)} "
                "of the list). Return the nodes themselves."
            )
        counts: dict[int, int] = {}
        for i in order:
            counts[i] = counts.get(i, 0) + 1
        twice = sorted(i for i, c in counts.items() if c > 1)
        if twice:
            raise CheckFailed(
                f"{where} lists node {twice[0]} {counts[twice[0]]} times ({len(twice)} nodes appear more "
                "than once). Each node must appear exactly once: remember which nodes you have "
                "already added (a set), and skip them when you meet them again along another path."
            )
        missing = [i for i in range(len(spec)) if reach[i] and i not in counts]
        if missing:
            raise CheckFailed(
                f"{where} leaves out {len(missing)} of the nodes the output depends on "
                f"(node {missing[0]}, for one). Follow `.parents` from the output all the way to the inputs."
            )
        extra = [i for i in counts if not reach[i]]
        if extra:
            raise CheckFailed(
                f"{where} lists node {extra[0]}, which the output does not depend on. "
                "Collect only what you reach through `.parents` from the output."
            )
        position = {i: k for k, i in enumerate(order)}
        for i in order:
            late = [p for p in spec[i][0] if position[p] > position[i]]
            if late:
                hint = ""
                if all(position[p] > position[j] for j in order for p in spec[j][0]):
                    hint = " Your list is in reverse: the inputs come first and the output last."
                raise CheckFailed(
                    f"{where} puts node {i} before its parent node {late[0]}. Every node must come "
                    f"after all of its parents.{hint}"
                )


def _uses(spec: list) -> list[int]:
    count = [0] * len(spec)
    for parents, _ in spec:
        for p in parents:
            count[p] += 1
    return count


@decides("check_backward", draw=draw_graphs)
def judge_backward(data: ProbeData, graphs: Sequence[Any]) -> None:
    for (kind, n, seed), got in zip(graphs, answers.per_case(data, graphs)):
        spec, _ = graph_spec(kind, n, seed)
        got = answers.numbers(got, "grads", len(sample_nodes(kind, len(spec))))
        expected, scale = _reference_grads(kind, n, seed)
        sample = sample_nodes(kind, len(spec))
        reach = _reachable(spec)
        where = f"After `nodes[-1].backward()` on {graph_words(kind, n)} (`nodes = {graph_name(kind, n, seed)}`)"
        root = len(spec) - 1
        wrong = [i for k, i in enumerate(sample) if not (abs(got[k] - expected[i]) <= 1e-9 * scale[i] + 1e-12)]
        if not wrong:
            continue
        by_node = dict(zip(sample, got))
        problems, hints = [], []
        for i in wrong[::-1][:6]:
            label = "the output" if i == root else ("an input" if not spec[i][0] else "")
            name = f"the grad of node {i}" + (f" ({label})" if label else "")
            if not reach[i]:
                problems.append(f"{name} changed, but the output does not depend on that node: leave it at 0.")
            else:
                problems.append(describe(name, by_node[i], expected[i]))
        if root in wrong:
            hints.append("The sweep starts from the seed: the output's grad is d(output)/d(output) = 1.")
        nonzero = [i for i in sample if by_node[i] != 0.0 and i != root]
        direct = set(spec[root][0])
        if root not in wrong and not nonzero:
            hints.append(
                "Only the output's grad was set: for each node, add grad × local derivative to each parent's grad."
            )
        elif (
            root not in wrong
            and set(nonzero) <= direct
            and any(expected[i] != 0 for i in sample if i not in direct and i != root)
        ):
            hints.append(
                "Only the output's direct parents got a grad: sweep the nodes in *reverse* topological order, "
                "so that a node's grad is complete before it is passed on."
            )
        uses = _uses(spec)
        # the first wrong nodes in the sweep: every node that uses them is right
        users: dict[int, list[int]] = {}
        for j, (parents, _) in enumerate(spec):
            for p in parents:
                users.setdefault(p, []).append(j)
        wrong_set = set(wrong)
        first = [i for i in wrong if reach[i] and not any(u in wrong_set for u in users.get(i, []))]
        if first and all(uses[i] > 1 for i in first):
            hints.append(
                "The first wrong nodes are the ones used more than once. A node used several times "
                "collects a contribution from every use: `parent.grad += ...`, not `parent.grad = ...`."
            )
        fail_with(problems, hints, intro=f"{where}:")


_TORCH_FNS = {"exp": torch.exp, "log": torch.log, "tanh": torch.tanh, "relu": torch.relu, "sigmoid": torch.sigmoid}


@decides("check_engine", draw=draw_seeds)
def judge_engine(data: ProbeData, seeds: Sequence[int]) -> None:
    for seed, got in zip(seeds, answers.per_case(data, seeds)):
        inputs, steps = random_program(seed)
        answers.entry(got, f"expression {seed}", ("value", "grads"))
        answers.number(got["value"], "value"), answers.numbers(got["grads"], "grads", len(inputs))
        ts = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in inputs]
        out = evaluate(ts, steps, _TORCH_FNS)
        value = float(out.detach())
        grads = [0.0 if g is None else float(g) for g in torch.autograd.grad(out, ts, allow_unused=True)]
        listing = "\n".join("    " + line for line in random_expression_text(seed).splitlines())
        intro = (
            f"On random expression {seed} (see it with `from autograder.nb02 import random_expression_text; "
            f"print(random_expression_text({seed}))`):\n{listing}\n"
        )
        if not agree_with(got["value"], value, rtol=1e-10):
            raise CheckFailed(
                intro
                + describe("the value of the last line", got["value"], value)
                + "\nA value is wrong before any derivative: check what each operation returns."
            )
        scale = max([abs(g) for g in grads] + [1e-300])
        problems = [
            describe(f"the grad of x{k}", g, e)
            for k, (g, e) in enumerate(zip(got["grads"], grads))
            if not abs(g - e) <= 1e-8 * (abs(e) + 1e-4 * scale) + 1e-12
        ]
        if problems:
            raise CheckFailed(
                intro
                + "\n".join("  - " + p for p in problems)
                + "\nIf your backward passes the graph tests above, a local derivative of one of these "
                "operations is wrong: the test cells of exercises 1-4 and your gradient_check will find it."
            )


@decides("check_zero_grad", draw=draw_zero_grad_graphs)
def judge_zero_grad(data: ProbeData, graphs: Sequence[Any]) -> None:
    for (kind, n, seed), got in zip(graphs, answers.per_case(data, graphs)):
        spec, _ = graph_spec(kind, n, seed)
        sample = sample_nodes(kind, len(spec))
        grads = answers.numbers(got, "grads", len(sample))
        reach = _reachable(spec)
        left = sorted(i for i, g in zip(sample, grads) if g != 0.0 and reach[i])
        if left:
            root = len(spec) - 1
            hint = ""
            if root not in left:
                hint = (
                    "\nHint: the output itself was reset, its parents were not. zero_grad resets every node of the "
                    "graph: topological_order(self) lists them all."
                )
            raise CheckFailed(
                f"After `nodes[-1].zero_grad()` on {graph_words(kind, n)} "
                f"(`nodes = {graph_name(kind, n, seed)}`), {len(left)} nodes still have a nonzero grad "
                f"(node {left[0]}, for one).{hint}"
            )
