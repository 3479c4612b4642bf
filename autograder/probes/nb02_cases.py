"""The cases of notebook 02's checks, built from literals alone (kind, n, seed; an expression's seed).

Shared by both sides: a probe builds these graphs and expressions with the learner's `Variable`, a
judge rebuilds their structure and asks PyTorch for the reference. Learners can rebuild a failing
case with :func:`example_graph` and :func:`random_expression_text` (re-exported by autograder.nb02).
"""

from __future__ import annotations

import functools
import math
import random
from typing import Any

import torch

GRAPH_KINDS = ("random", "reuse", "chain", "doubling")


@functools.lru_cache(maxsize=16)
def graph_spec(kind: str, n: int, seed: int) -> tuple[tuple[tuple, ...], tuple[float, ...]]:
    """((parent indices, local derivatives) per node in creation order (the last is the output),
    the nodes' values (arbitrary: a backward pass does not read them)). Kept: each check reads its graphs several
    times (the probe builds them, the judge rebuilds their structure), and the chain is 100 000 nodes long."""
    if kind not in GRAPH_KINDS:
        raise ValueError(f"kind must be one of {GRAPH_KINDS}")
    rng = random.Random(f"{kind}/{n}/{seed}")
    spec: list[tuple] = []
    if kind == "random":
        inputs = max(2, n // 4)
        for i in range(n):
            if i < inputs:
                spec.append(((), ()))
                continue
            k = rng.choice((1, 2, 2, 3))
            parents = tuple(
                rng.randrange(max(0, i - 8), i) if rng.random() < 0.8 else rng.randrange(i) for _ in range(k)
            )
            spec.append((parents, tuple(round(rng.uniform(-1.5, 1.5), 3) for _ in parents)))
    elif kind == "reuse":  # x (node 0) and w (node 1) feed n nodes; the output uses all of them and x twice more
        spec = [((), ()), ((), ())]
        for _ in range(n):
            spec.append(((0, 1), (round(rng.uniform(-1, 1), 3), round(rng.uniform(-1, 1), 3))))
        users = tuple(range(2, n + 2)) + (0, 0)
        spec.append((users, tuple(round(rng.uniform(-1, 1), 3) for _ in users)))
    elif kind == "chain":  # x, then n nodes each using the one before
        spec = [((), ())] + [((i,), (round(math.exp(rng.uniform(-0.02, 0.02)), 6),)) for i in range(n)]
    else:  # doubling: each of n levels uses the level before twice: 2^n paths
        spec = [((), ())]
        for i in range(n):
            c = round(rng.uniform(0.3, 0.7), 3)
            spec.append(((i, i), (c, round(1.0 - c + rng.uniform(-0.05, 0.05), 3))))
    values = tuple(round(rng.uniform(-2, 2), 3) for _ in spec)
    return tuple(spec), values


def example_graph(Variable: type, kind: str, n: int, seed: int) -> list:
    """The graph a test calls (kind, n, seed), built with your `Variable(value, parents, local_grads)`.
    Returns its nodes in creation order; the last one is the output."""
    spec, values = graph_spec(kind, n, seed)
    nodes: list = []
    for (parents, locals_), value in zip(spec, values):
        nodes.append(Variable(value, tuple(nodes[p] for p in parents), tuple(locals_)))
    return nodes


def graph_name(kind: str, n: int, seed: int) -> str:
    return f'example_graph(Variable, "{kind}", {n}, {seed})'


def graph_words(kind: str, n: int) -> str:
    return {
        "random": f"a random graph of {n} nodes",
        "reuse": f"a graph in which one input is used {n + 2} times",
        "chain": f"a chain {n} nodes deep",
        "doubling": f"a doubling chain of {n} levels ({n + 1} nodes, 2^{n} paths from the output to the input)",
    }[kind]


def sample_nodes(kind: str, n_nodes: int) -> list[int]:
    """Which nodes' grads the probe reports: all of them, except on a long chain."""
    if kind != "chain" or n_nodes <= 2000:
        return list(range(n_nodes))
    step = max(1, n_nodes // 200)
    return sorted(set(range(0, n_nodes, step)) | {0, 1, n_nodes - 2, n_nodes - 1})


FORMS: dict[str, list[tuple]] = {
    # (shown as, applies to case (a, b)?, on Variables / tensors: f(x, y, a, b))
    "mul": [
        ("x * y", lambda a, b: True, lambda x, y, a, b: x * y),
        ("x * b", lambda a, b: True, lambda x, y, a, b: x * b),
        ("a * y", lambda a, b: True, lambda x, y, a, b: a * y),
        ("x * x", lambda a, b: True, lambda x, y, a, b: x * x),
    ],
    "truediv": [
        ("x / y", lambda a, b: b != 0, lambda x, y, a, b: x / y),
        ("x / b", lambda a, b: b != 0, lambda x, y, a, b: x / b),
        ("a / y", lambda a, b: b != 0, lambda x, y, a, b: a / y),
        ("x / x", lambda a, b: a != 0, lambda x, y, a, b: x / x),
    ],
    "pow": [
        ("x ** b", lambda a, b: a > 0 or float(b).is_integer() or (a == 0 and b > 1), lambda x, y, a, b: x**b),
        ("x ** y", lambda a, b: a > 0 or float(b).is_integer() or (a == 0 and b > 1), lambda x, y, a, b: x**y),
        ("a ** y", lambda a, b: a > 0, lambda x, y, a, b: a**y),
    ],
}


def forms(op: str, a: float, b: float) -> list[tuple]:
    if op == "tanh":
        return [("x.tanh()", lambda x, y, a, b: x.tanh() if not isinstance(x, torch.Tensor) else torch.tanh(x))]
    return [(text, fn) for text, applies, fn in FORMS[op] if applies(a, b)]


_UNARY = ("neg", "radd", "rsub", "rmul", "rdiv", "powc", "rpow", "exp", "log", "tanh", "relu", "sigmoid")

_BINARY = ("add", "sub", "mul", "div", "powv")

_POWERS = (2.0, 3.0, 0.5, -1.5)


def random_program(seed: int) -> tuple[list[float], list[tuple]]:
    """The random expression a test calls by its seed: input values, and steps (op, i, j, constant)
    that each append one value to a pool that starts with the inputs."""
    rng = random.Random(f"expression/{seed}")
    inputs = [round(rng.uniform(-2, 2), 3) for _ in range(rng.randint(2, 4))]
    steps = []
    for _ in range(rng.randint(6, 24)):
        size = len(inputs) + len(steps)
        pick = lambda: size - 1 - min(int(rng.expovariate(0.4)), size - 1)  # noqa: E731  (recent values more often)
        op = rng.choice(_UNARY + _BINARY + _BINARY)
        constant = rng.choice(_POWERS) if op == "powc" else round(rng.uniform(-2, 2), 3)
        steps.append((op, pick(), pick(), constant))
    return inputs, steps


def _apply(op: str, a: Any, b: Any, c: float, fns: dict) -> Any:
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / (b * b + 1.0)
    if op == "powv":
        return (fns["sigmoid"](a) + 0.5) ** fns["tanh"](b)
    if op == "neg":
        return -a
    if op == "radd":
        return c + a
    if op == "rsub":
        return c - a
    if op == "rmul":
        return c * a
    if op == "rdiv":
        return c / (a * a + 0.5)
    if op == "powc":
        return a**c if c in (2.0, 3.0) else (a * a + 0.5) ** c
    if op == "rpow":
        return (abs(c) + 0.5) ** fns["tanh"](a)
    if op == "exp":
        return fns["exp"](fns["tanh"](a))
    if op == "log":
        return fns["log"](fns["sigmoid"](a) + 0.1)
    return fns[op](a)


def evaluate(inputs: list, steps: list, fns: dict) -> Any:
    pool = list(inputs)
    for op, i, j, c in steps:
        pool.append(_apply(op, pool[i], pool[j], c, fns))
    return pool[-1]


def random_expression_text(seed: int) -> str:
    """The random expression of a test seed, one step per line."""
    inputs, steps = random_program(seed)
    names = [f"x{i}" for i in range(len(inputs))]
    lines = [f"{n} = Variable({v})" for n, v in zip(names, inputs)]
    shown = {
        "add": "{a} + {b}",
        "sub": "{a} - {b}",
        "mul": "{a} * {b}",
        "div": "{a} / ({b} * {b} + 1.0)",
        "powv": "({a}.sigmoid() + 0.5) ** {b}.tanh()",
        "neg": "-{a}",
        "radd": "{c} + {a}",
        "rsub": "{c} - {a}",
        "rmul": "{c} * {a}",
        "rdiv": "{c} / ({a} * {a} + 0.5)",
        "rpow": "{p} ** {a}.tanh()",
        "exp": "{a}.tanh().exp()",
        "log": "({a}.sigmoid() + 0.1).log()",
    }
    for k, (op, i, j, c) in enumerate(steps):
        a, b = names[i], names[j]
        if op == "powc":
            text = f"{a} ** {c}" if c in (2.0, 3.0) else f"({a} * {a} + 0.5) ** {c}"
        else:
            text = shown.get(op, "{a}." + op + "()").format(a=a, b=b, c=c, p=abs(c) + 0.5)
        names.append(f"v{k}")
        lines.append(f"v{k} = {text}")
    return "\n".join(lines)


def _smooth(xs):
    return math.sin(xs[0]) * xs[1] + xs[1] ** 3


# gradient_check's test functions: one node whose recorded local derivatives are right or deliberately
# wrong. (value from floats, recorded local derivatives); the judge knows the true derivatives.
CHECK_FUNCTIONS: dict[str, tuple] = {
    "smooth": (_smooth, lambda xs: [math.cos(xs[0]) * xs[1], math.sin(xs[0]) + 3 * xs[1] ** 2]),
    "tanh_squared": (lambda xs: math.tanh(xs[0]), lambda xs: [math.tanh(xs[0]) ** 2]),
    "exp_scaled": (lambda xs: math.exp(xs[0]) * xs[1], lambda xs: [math.exp(xs[0]) * xs[1], math.exp(xs[0])]),
    "swapped_product": (lambda xs: xs[0] * xs[1], lambda xs: [xs[0], xs[1]]),
    "flat": (lambda xs: 3.0, lambda xs: [0.0, 0.0]),
    "tiny": (lambda xs: 1e-6 * xs[0] ** 2, lambda xs: [4e-6 * xs[0]]),
}


# Exercise 10, the published neuron (seed 002): x = 2 and y = 1 as published; the two costs it writes.
SEED_X, SEED_Y = 2.0, 1.0
SEED_COSTS = {"half_square": lambda p: 0.5 * (p - SEED_Y) ** 2, "published_cost": lambda p: 0.5 * (p - SEED_Y**2)}
