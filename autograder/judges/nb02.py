"""Judges of notebook 02 (a scalar autograd engine).

Every reference is recomputed here with PyTorch's autograd (or, for a plain chain, the product of its
local derivatives); the learner's objects are never seen.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..feedback import CheckFailed, close, mismatch
from ..probes.nb02_cases import (
    CHECK_FUNCTIONS,
    SEED_X,
    SEED_Y,
    evaluate,
    forms,
    graph_name,
    graph_spec,
    graph_words,
    random_expression_text,
    random_program,
    sample_nodes,
)
from ..registry import ProbeData, decides
from . import answers

# ---------------------------------------------------------------- hidden cases, drawn at grading time


def _value(rng, low=-3.0, high=3.0) -> float:
    return round(rng.uniform(low, high), 3)


def draw_pairs(rng: random.Random, count: int) -> dict:
    """(a, b) pairs: mostly random, one with a == b, one with a zero numerator."""
    pairs = [(_value(rng), _value(rng, 0.2, 3.0) * rng.choice((-1, 1))) for _ in range(count)]
    if count >= 3:
        pairs[1] = (pairs[1][1], pairs[1][1])
        pairs[2] = (0.0, pairs[2][1])
    return {"cases": pairs}


def draw_pow_cases(rng: random.Random, count: int) -> dict:
    """A positive base with any exponent, negative bases with whole exponents (no complex results), a zero base."""
    cases = [
        (_value(rng, 0.2, 3.0), _value(rng, -2.0, 2.0))
        if i % 2 == 0
        else (_value(rng, -3.0, -0.2), float(rng.randint(1, 3)))
        for i in range(count)
    ]
    if count >= 3:  # a zero base with a positive exponent: 0 for every exponent, so d/db is 0 (not undefined)
        cases[2] = (0.0, _value(rng, 0.5, 3.0))
    return {"cases": cases}


def draw_tanh_points(rng: random.Random, count: int) -> dict:
    return {"at": [_value(rng, -3.0, 3.0) for _ in range(count)]}


# one graph of each kind, in this order: sizes the visible tests do not use
_GRAPH_PLAN = (("random", 200), ("random", 60), ("reuse", 300), ("chain", 100_000), ("doubling", 60))


def draw_graphs(rng: random.Random, count: int) -> dict:
    return {"graphs": [(kind, n, rng.randrange(10**6)) for kind, n in (_GRAPH_PLAN * count)[:count]]}


def draw_zero_grad_graphs(rng: random.Random, count: int) -> dict:
    plan = (("reuse", 50), ("random", 100), ("chain", 100_000))
    return {"graphs": [(kind, n, rng.randrange(10**6)) for kind, n in (plan * count)[:count]]}


def draw_seeds(rng: random.Random, count: int) -> dict:
    return {"seeds": [rng.randrange(10**6) for _ in range(count)]}


_ARITY = {"smooth": 2, "tanh_squared": 1, "exp_scaled": 2, "swapped_product": 2, "flat": 2, "tiny": 1}


def draw_gradient_check_cases(rng: random.Random, count: int) -> dict:
    names = list(_ARITY)
    return {
        "cases": [(name, [_value(rng, -2.0, 2.0) for _ in range(_ARITY[name])]) for name in (names * count)[:count]]
    }


def draw_neuron_cases(rng: random.Random, count: int) -> dict:
    cases = []
    for _ in range(count):
        n = rng.randint(1, 4)
        cases.append(
            (
                [_value(rng, -1.5, 1.5) for _ in range(n)],
                _value(rng, -0.5, 0.5),
                [_value(rng, -2.0, 2.0) for _ in range(n)],
                _value(rng, -1.0, 1.0),
            )
        )
    return {"cases": cases}


_SEED_FORMS = (
    ("tanh", "half_square"),
    ("published_tanh", "half_square"),
    ("tanh", "published_cost"),
    ("published_tanh", "published_cost"),
)


def draw_seed_neuron_cases(rng: random.Random, count: int) -> dict:
    """Seed 002's neuron with other weights: each pairing of the right and the published activation and cost."""
    return {
        "cases": [
            (*_SEED_FORMS[i % len(_SEED_FORMS)], _value(rng, -1.5, 1.5), _value(rng, -1.0, 1.0)) for i in range(count)
        ]
    }


# gradient_check's test functions on tensors: the true derivatives come from autograd on these.
TORCH_CHECK_FUNCTIONS: dict[str, Callable] = {
    "smooth": lambda t: torch.sin(t[0]) * t[1] + t[1] ** 3,
    "tanh_squared": lambda t: torch.tanh(t[0]),
    "exp_scaled": lambda t: torch.exp(t[0]) * t[1],
    "swapped_product": lambda t: t[0] * t[1],
    "flat": lambda t: 0.0 * t[0] + 0.0 * t[1] + 3.0,
    "tiny": lambda t: 1e-6 * t[0] ** 2,
}


def _describe(what: str, got: float, expected: float) -> str:
    if math.isnan(expected) and not math.isnan(got):
        return f"{what} should not exist here (PyTorch gives nan), but yours is a finite number."
    if math.isnan(got):
        return f"{what} is nan, but it exists here."
    return mismatch(what, got, expected)


def _agree(got: float, expected: float, rtol: float = 1e-9, atol: float = 1e-12) -> bool:
    if math.isnan(expected) or math.isnan(got):
        return math.isnan(expected) and math.isnan(got)
    if math.isinf(expected) or math.isinf(got):
        return got == expected
    return close(got, expected, rtol=rtol, atol=atol)


def _fail(problems: list[str], hints: list[str], intro: str = "Some numbers are wrong:") -> None:
    if problems:
        text = "\n".join(f"  - {p}" for p in problems[:6])
        more = f"\n  ... and {len(problems) - 6} more" if len(problems) > 6 else ""
        extra = "".join(f"\nHint: {h}" for h in dict.fromkeys(hints))
        raise CheckFailed(f"{intro}\n{text}{more}{extra}")


def _reference_form(fn: Callable, a: float, b: float) -> tuple[float, list[float]]:
    x = torch.tensor(float(a), dtype=torch.float64, requires_grad=True)
    y = torch.tensor(float(b), dtype=torch.float64, requires_grad=True)
    out = fn(x, y, float(a), float(b))
    grads = torch.autograd.grad(out, [x, y], allow_unused=True)
    return float(out.detach()), [0.0 if g is None else float(g) for g in grads]


def _op_hints(op: str, text: str, a: float, b: float, which: int, got: float, expected: float) -> list[str]:
    hints = []
    if op == "mul" and text == "x * y" and which == 0 and _agree(got, a) and not _agree(a, b):
        hints.append("∂(x·y)/∂x is the *other* factor: record y's value for x and x's value for y.")
    if op == "truediv" and text in ("x / y", "a / y") and which == 1 and b != 0:
        if _agree(got, -a / b):
            hints.append("∂(x/y)/∂y = −x/y²: the denominator is squared.")
        elif _agree(got, -1 / (b * b)):
            hints.append("∂(x/y)/∂y = −x/y²: you left out the factor x.")
    if op == "pow" and which == 0 and a != 0:
        if _agree(got, b * a**b):
            hints.append("The exponent drops by one: ∂(a^b)/∂a = b·a^(b−1).")
        elif _agree(got, a ** (b - 1)):
            hints.append("∂(a^b)/∂a = b·a^(b−1): multiply by the exponent b.")
    if op == "pow" and which == 1 and a < 0 and not math.isnan(got) and _agree(got, a**b * math.log(-a), rtol=1e-7):
        hints.append(
            "That is a^b·ln|a|. For a < 0 the derivative with respect to the exponent does not exist "
            "(a^b is not defined for the b around it): record math.nan, as PyTorch does. ln|a| gives a "
            "finite number that is wrong."
        )
    if op == "pow" and which == 1 and a > 0 and math.isnan(got):
        hints.append("Here a > 0, so ln a exists: ∂(a^b)/∂b = a^b·ln a.")
    if op == "pow" and which == 1 and a == 0 and b > 0 and got != 0:
        hints.append(
            "At a = 0 and b > 0, a^b is 0 for every b nearby, so it does not change with b: "
            "the derivative with respect to the exponent is 0 (a·ln a → 0), not nan."
        )
    if op == "tanh" and which == 0:
        t = math.tanh(a)
        if _agree(got, t * t):
            hints.append(
                "That is tanh², a classic slip (a published tutorial makes it). Derive the derivative "
                "again from tanh = sinh/cosh with the quotient rule, and only then write it in terms of "
                "the output t; your gradient_check (section 5) will confirm it."
            )
        elif _agree(got, 1 - a * a):
            hints.append(
                "That formula is written with the input a; the derivative of tanh is a formula in the output t = "
                "tanh(a)."
            )
    return hints


def _judge_op(op: str, data: ProbeData, cases: Sequence[Any]) -> None:
    problems, hints = [], []
    for case, results in zip(cases, answers.per_case(data, cases)):
        a, b = (case, 1.0) if op == "tanh" else case
        expressions = forms(op, a, b)
        for (text, fn), got in zip(expressions, answers.per_case(results, expressions)):
            answers.entry(got, text, ("form", "value", "grads"))
            answers.number(got["value"], "value"), answers.numbers(got["grads"], "grads", 2)
            if got["form"] != text:
                raise CheckFailed(
                    answers.MISMATCH.format(why=f"an answer for {got['form']!r} where {text!r} was asked")
                )
            value, grads = _reference_form(fn, a, b)
            where = f"`{text}` at x = {a}" + ("" if op == "tanh" else f", y = {b}")
            if not _agree(got["value"], value, rtol=1e-12):
                problems.append(_describe(f"The value of {where}", got["value"], value))
                continue
            for which, symbol in enumerate(("x", "y")):
                if op == "tanh" and which == 1:
                    continue
                if not _agree(got["grads"][which], grads[which]):
                    problems.append(
                        _describe(
                            f"The derivative of {where} with respect to {symbol}", got["grads"][which], grads[which]
                        )
                    )
                    hints += _op_hints(op, text, a, b, which, got["grads"][which], grads[which])
    _fail(problems, hints)


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
                problems.append(_describe(name, by_node[i], expected[i]))
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
        _fail(problems, hints, intro=f"{where}:")


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
        if not _agree(got["value"], value, rtol=1e-10):
            raise CheckFailed(
                intro
                + _describe("the value of the last line", got["value"], value)
                + "\nA value is wrong before any derivative: check what each operation returns."
            )
        scale = max([abs(g) for g in grads] + [1e-300])
        problems = [
            _describe(f"the grad of x{k}", g, e)
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


@decides("check_gradient_check", draw=draw_gradient_check_cases)
def judge_gradient_check(data: ProbeData, cases: Sequence[Any]) -> None:
    for (name, inputs), got in zip(cases, answers.per_case(data, cases)):
        got = answers.numbers(got, "relative errors", len(inputs))
        recorded, torch_fn = CHECK_FUNCTIONS[name][1], TORCH_CHECK_FUNCTIONS[name]
        t = torch.tensor([float(v) for v in inputs], dtype=torch.float64, requires_grad=True)
        true = torch.autograd.grad(torch_fn(t), t)[0].tolist()
        claimed = recorded([float(v) for v in inputs])
        call = f"gradient_check(f, {list(inputs)}) for the test function \"{name}\""
        for i, (e, a, n) in enumerate(zip(got, claimed, true)):
            scale = max(abs(a), abs(n))
            expected = 0.0 if scale == 0 else abs(a - n) / scale
            what = f"the relative error `{call}` reports for input {i}"
            if math.isnan(e):
                hint = (
                    " When both gradients are 0 the relative error is 0: check for that before dividing."
                    if scale == 0
                    else ""
                )
                raise CheckFailed(f"{what[0].upper() + what[1:]} is nan.{hint}")
            if e < 0:
                raise CheckFailed(
                    f"{what[0].upper() + what[1:]} is negative: an error is a size, take the absolute value."
                )
            if expected < 1e-6:  # the function's derivative is right: the check must say so, to many digits
                if e <= 1e-7:
                    continue
                hint = ""
                if e < 1e-2:
                    hint = (
                        "\nHint: that is the size of a one-sided difference's error. Step both ways: "
                        "(f(x + h) - f(x - h)) / 2h."
                    )
                raise CheckFailed(
                    f"This function's backward is correct, but {what} is {e:.2g}; a central difference "
                    f"in float64 agrees with a correct derivative to about 1e-9.{hint}"
                )
            if abs(e - expected) <= 1e-6 + 1e-4 * expected:
                continue
            hints = []
            if abs(e - abs(a - n)) <= 1e-6 * max(abs(a - n), 1e-30) + 1e-15:
                hints.append(
                    "That is the absolute error |backward - numeric|; divide it by the larger of the two magnitudes."
                )
            elif n != 0 and abs(e - abs(a - n) / abs(n)) <= 1e-4 * e:
                hints.append(
                    "You divided by the numerical gradient alone; divide by the larger of |backward| and |numeric|."
                )
            elif a != 0 and abs(e - abs(a - n) / abs(a)) <= 1e-4 * e:
                hints.append(
                    "You divided by the backward gradient alone; divide by the larger of |backward| and |numeric|."
                )
            raise CheckFailed(
                f"This function's backward is wrong for input {i}, and {what} is {e:.3g}: "
                f"{'too small' if e < expected else 'too large'} (off by {abs(e - expected):.2g})."
                + "".join(f"\nHint: {h}" for h in hints)
            )


_REPLAY = {
    "add": lambda a, b: a + b,
    "radd": lambda a, b: b + a,
    "sub": lambda a, b: a - b,
    "rsub": lambda a, b: b - a,
    "mul": lambda a, b: a * b,
    "rmul": lambda a, b: b * a,
    "div": lambda a, b: a / b,
    "rdiv": lambda a, b: b / a,
    "pow": lambda a, b: a**b,
    "rpow": lambda a, b: b**a,
    "neg": lambda a: -a,
    "tanh": torch.tanh,
    "exp": torch.exp,
    "log": torch.log,
    "sigmoid": torch.sigmoid,
    "relu": torch.relu,
}


def _replay(steps: list, returns_input, leaves: list) -> torch.Tensor:
    """The recorded expression on tensors, with PyTorch's own operations (and, for a node the learner
    built by hand, its own local derivatives)."""
    if returns_input is not None:
        return leaves[returns_input]
    values: list = []

    def get(ref):
        kind, x = ref
        if kind == "input":
            return leaves[int(x)]
        if kind == "step":
            return values[int(x)]
        return float(x)

    for step in steps:
        if step[0] == "op":
            args = [get(r) for r in step[2]]
            if not isinstance(args[0], torch.Tensor):
                args[0] = torch.tensor(args[0], dtype=torch.float64)
            values.append(_REPLAY[step[1]](*args))
        elif step[0] == "node":
            node = torch.tensor(step[1], dtype=torch.float64)
            for ref, local in step[2]:
                parent = get(ref)
                if isinstance(parent, torch.Tensor):
                    node = node + local * (parent - parent.detach())
            values.append(node)
        else:
            values.append(torch.tensor(step[1], dtype=torch.float64))
    return values[-1]


def _valid_neuron_answer(got, n_weights: int) -> None:
    answers.entry(got, "answer", ("value", "steps", "returns_input", "connected"))
    answers.number(got["value"], "value")
    if not isinstance(got["steps"], list):
        raise CheckFailed(answers.MISMATCH.format(why="steps should be the list of recorded operations"))
    returns_input = got["returns_input"]
    if returns_input is not None and answers.integer(returns_input, "returns_input") not in range(n_weights + 1):
        raise CheckFailed(answers.MISMATCH.format(why="returns_input names no weight or bias"))
    if not isinstance(got["connected"], list) or len(got["connected"]) != n_weights + 1:
        raise CheckFailed(answers.MISMATCH.format(why="connected should list one flag per weight and the bias"))


@decides("check_neuron_loss", draw=draw_neuron_cases)
def judge_neuron_loss(data: ProbeData, cases: Sequence[Any]) -> None:
    for (weights, bias, inputs, target), got in zip(cases, answers.per_case(data, cases)):
        _valid_neuron_answer(got, len(weights))
        tw = torch.tensor([float(v) for v in weights], dtype=torch.float64, requires_grad=True)
        tb = torch.tensor(float(bias), dtype=torch.float64, requires_grad=True)
        x = torch.tensor([float(v) for v in inputs], dtype=torch.float64)
        prediction = torch.tanh(torch.sum(tw * x) + tb)
        loss = (prediction - target) ** 2
        grad_w, grad_b = torch.autograd.grad(loss, [tw, tb])
        expected = grad_w.tolist() + [float(grad_b)]
        call = f"neuron_loss(weights={list(weights)}, bias={bias}, inputs={list(inputs)}, target={target})"
        y_hat, s, loss = float(prediction.detach()), float((torch.sum(tw * x) + tb).detach()), loss.detach()
        if not _agree(got["value"], float(loss), rtol=1e-10):
            hints = []
            if _agree(got["value"], 0.5 * float(loss), rtol=1e-10):
                hints.append("The loss here is (ŷ − y)², without a factor ½.")
            elif any(
                _agree(got["value"], k * (y_hat - target**2) ** p, rtol=1e-10) for k in (0.5, 1.0) for p in (1, 2)
            ):
                hints.append("Square the difference (ŷ − y), not the target.")
            elif _agree(got["value"], (s - target) ** 2, rtol=1e-10):
                hints.append("The prediction is tanh of the weighted sum plus the bias.")
            raise CheckFailed(
                _describe(f"The value of `{call}`", got["value"], float(loss)) + "".join(f"\nHint: {h}" for h in hints)
            )
        # The learner's expression, replayed with PyTorch's operations: its gradient is right exactly when the
        # expression connects every weight and the bias to the loss the right way, whatever the local
        # derivatives of the learner's operations are (those have their own exercises).
        leaves = [torch.tensor(float(v), dtype=torch.float64, requires_grad=True) for v in list(weights) + [bias]]
        replayed = _replay(got["steps"], got.get("returns_input"), leaves)
        if not isinstance(replayed, torch.Tensor) or not replayed.requires_grad:
            replayed_grads = [0.0] * len(leaves)
        else:
            replayed_grads = [
                0.0 if g is None else float(g) for g in torch.autograd.grad(replayed, leaves, allow_unused=True)
            ]
        names = [f"weights[{i}]" for i in range(len(weights))] + ["bias"]
        problems = [
            _describe(f"d loss / d {nm}", g, e)
            for nm, g, e in zip(names, replayed_grads, expected)
            if not _agree(g, e, rtol=1e-8, atol=1e-12)
        ]
        if problems:
            if not all(got.get("connected", [True])):
                hint = (
                    "Some of the weights or the bias are not in the graph of the loss: the graph is broken. "
                    "Somewhere a plain float (`.value`, `math.tanh`, `float(...)`) was used where a Variable "
                    "operation was needed, so no gradient can flow back past it."
                )
            else:
                hint = (
                    "The value is right, but part of it does not depend on the weights through Variable "
                    "operations: somewhere a plain number (`.value`, `math.tanh`, `float(...)`) stands where a "
                    "Variable operation was needed, so gradients do not flow through that part."
                )
            _fail(problems, [hint], intro=f"`{call}` (its expression replayed with PyTorch's operations):")


@decides("check_mul", draw=draw_pairs)
def judge_mul(data: ProbeData, cases: Sequence[Any]) -> None:
    return _judge_op("mul", data, cases)


@decides("check_truediv", draw=draw_pairs)
def judge_truediv(data: ProbeData, cases: Sequence[Any]) -> None:
    return _judge_op("truediv", data, cases)


@decides("check_pow", draw=draw_pow_cases)
def judge_pow(data: ProbeData, cases: Sequence[Any]) -> None:
    return _judge_op("pow", data, cases)


@decides("check_tanh", draw=draw_tanh_points)
def judge_tanh(data: ProbeData, at: Sequence[Any]) -> None:
    return _judge_op("tanh", data, at)


@decides("check_seed_neuron", draw=draw_seed_neuron_cases)
def judge_seed_neuron(data: ProbeData, cases: Sequence[Any]) -> None:
    for (activation, cost, w, b), got in zip(cases, answers.per_case(data, cases)):
        answers.entry(got, "answer", ("loss", "dw", "check"))
        for key in ("loss", "dw", "check"):
            answers.number(got[key], f"report['{key}']")
        tw = torch.tensor(float(w), dtype=torch.float64, requires_grad=True)
        s = tw * SEED_X + float(b)
        y_hat = torch.tanh(s)
        loss = 0.5 * (y_hat - SEED_Y) ** 2 if cost == "half_square" else 0.5 * (y_hat - SEED_Y**2)
        (true_dw,) = torch.autograd.grad(loss, tw)
        true_dw, loss = float(true_dw), loss.detach()
        t = float(y_hat.detach())
        # what backward() gives: the product of the recorded local derivatives along the chain
        act_local = t * t if activation == "published_tanh" else 1.0 - t * t
        cost_local = (t - SEED_Y) if cost == "half_square" else 0.5
        backward_dw = SEED_X * act_local * cost_local
        scale = max(abs(backward_dw), abs(true_dw))
        check = 0.0 if scale == 0 else abs(backward_dw - true_dw) / scale
        where = f"seed_neuron_report with {activation} and {cost} at w = {w}, b = {b}"
        problems = []
        if not _agree(got["loss"], float(loss), rtol=1e-9):
            problems.append(
                _describe("report['loss']", got["loss"], float(loss))
                + " It is the value of cost(activation(weighted_sum(w, b)))."
            )
        if not _agree(got["dw"], backward_dw, rtol=1e-6, atol=1e-12):
            problems.append(
                _describe("report['dw']", got["dw"], backward_dw)
                + " It is w.grad after one backward() from the loss (grads starting at 0)."
            )
        if check < 1e-6:
            if not 0 <= got["check"] <= 1e-6:
                problems.append(
                    f"report['check'] is {got['check']:.2g}, but this neuron's backward is right: your "
                    "gradient_check's relative error for w should be tiny."
                )
        elif not abs(got["check"] - check) <= 1e-4 * check + 1e-9:
            problems.append(
                f"report['check'] is {got['check']:.3g}: "
                f"{'too small' if got['check'] < check else 'too large'} for this backward (off by "
                f"{abs(got['check'] - check):.2g}). It is gradient_check(loss, [w, b])[0]."
            )
        _fail(problems, [], intro=f"{where}:")
