"""Checks of notebook 02 (a scalar autograd engine): the names its test cells import, and their probes.

The probes run inside the grading sandbox: they build graphs with the learner's `Variable` constructor (or the
learner's operators), call the learner's code through call_learner (time limit, recursion cap) and return plain
numbers. The judges (references from PyTorch's autograd) are below the judges line. The graphs the tests
use can be rebuilt by learners with :func:`example_graph`, and the random expressions with
:func:`random_expression_text`, so a failure can be reproduced in the notebook.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from .feedback import CheckFailed
from .feedback import short as _short_repr
from .probes.call import call_learner
from .probes.nb02_cases import (
    CHECK_FUNCTIONS,
    SEED_COSTS,
    SEED_X,
    evaluate,
    example_graph,
    forms,
    graph_name,
    graph_words,
    random_expression_text,
    random_program,
    sample_nodes,
)
from .registry import NotebookChecks, ProbeData


def _run(fn: Callable, *args: Any, **how: Any) -> Any:
    """call_learner, with hints for this notebook's known crashes."""
    return call_learner(fn, *args, crash_hint=_crash_hint, blank_by_own_name=True, **how)


def _crash_hint(exc: Exception) -> str:
    text = str(exc)
    if isinstance(exc, AttributeError) and any(f"'{t}' object has no attribute" in text for t in ("float", "int")):
        return (
            "\nHint: one operand is a plain number, not a Variable. Wrap it with `as_variable(other)` "
            "before you read `.value`."
        )
    if isinstance(exc, ValueError) and "math domain error" in text:
        return (
            "\nHint: math.log (or math.sqrt) got a number outside its domain. ln a exists only for a > 0. "
            "For a base a < 0 the derivative with respect to the exponent does not exist: record math.nan. "
            "At a = 0 (with b > 0), a^b is 0 for every such b: that derivative is 0."
        )
    if isinstance(exc, TypeError) and "complex" in text:
        return "\nHint: a negative number to a fractional power is complex in Python; the tests avoid that."
    return ""


def _number(value: Any, what: str) -> float:
    """A learner's number as a float (NaN allowed: some derivatives are NaN on purpose)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise CheckFailed(f"{what} should be a number, but it is {_short(value)} ({type(value).__name__}).")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise CheckFailed(f"{what} should be a number, but it is {_short(value)} ({type(value).__name__}).") from None


def _short(value: Any) -> str:
    return _short_repr(value, 60)


def _variable_class(obj: Any) -> type:
    if not isinstance(obj, type):
        raise CheckFailed(f"This check takes the class `Variable` itself; it got {_short(obj)}.")
    return obj


def _variable_of(fn: Any, name: str) -> type:
    """The `Variable` class of the notebook a learner function was defined in."""
    if not callable(fn):
        raise CheckFailed(f"`{name}` should be a function, but it is a {type(fn).__name__}.")
    cls = getattr(fn, "__globals__", {}).get("Variable")
    if not isinstance(cls, type):
        raise CheckFailed(f"`{name}` needs the class `Variable`: run the cells of section 1 first.")
    return cls


def _edges(node: Any, what: str) -> list:
    parents = getattr(node, "parents", None)
    local_grads = getattr(node, "local_grads", None)
    if not isinstance(parents, Sequence) or not isinstance(local_grads, Sequence):
        raise CheckFailed(
            f"{what} should have `parents` and `local_grads`, each a tuple; it has "
            f"parents={_short(parents)}, local_grads={_short(local_grads)}."
        )
    if len(parents) != len(local_grads):
        raise CheckFailed(
            f"{what} has {len(parents)} parents but {len(local_grads)} local derivatives: "
            "record one local derivative per parent, in the same order."
        )
    return list(zip(parents, local_grads))


def _gradients(out: Any, wrt: list, what: str, max_nodes: int = 200_000) -> list[float]:
    """d out / d w for each w in `wrt`, by the probe's own sweep over the local derivatives the
    learner's operations recorded (so that an exercise on operations does not depend on the
    learner's backward)."""
    uses, nodes, stack = {id(out): 0}, {id(out): out}, [out]
    while stack:
        node = stack.pop()
        for parent, _ in _edges(node, f"A node in the graph of {what}"):
            if id(parent) in uses:
                uses[id(parent)] += 1
            else:
                uses[id(parent)], nodes[id(parent)] = 1, parent
                stack.append(parent)
                if len(nodes) > max_nodes:
                    raise CheckFailed(f"The graph of {what} has more than {max_nodes} nodes.")
    adjoint = {key: 0.0 for key in nodes}
    adjoint[id(out)] = 1.0
    ready = [out]
    while ready:
        node = ready.pop()
        g = adjoint[id(node)]
        for parent, local in _edges(node, f"A node in the graph of {what}"):
            local = _number(local, f"A local derivative in the graph of {what}")
            adjoint[id(parent)] += g * local
            uses[id(parent)] -= 1
            if uses[id(parent)] == 0:
                ready.append(parent)
    return [adjoint.get(id(w), 0.0) for w in wrt]


_OP_NAMES = {"mul": "variable_mul", "truediv": "variable_truediv", "pow": "variable_pow", "tanh": "variable_tanh"}


def _probe_op(op: str, Variable: Any, cases: Sequence[Any]) -> list:
    Variable = _variable_class(Variable)
    data = []
    for case in cases:
        a, b = (case, 1.0) if op == "tanh" else case
        results = []
        for text, fn in forms(op, a, b):
            x, y = Variable(float(a)), Variable(float(b))
            call = (
                f"{text} with x = Variable({a}), y = Variable({b}), a = {a}, b = {b}"
                if op != "tanh"
                else f"Variable({a}).tanh()"
            )
            out = _run(fn, x, y, float(a), float(b), name=_OP_NAMES[op], call=call, seconds=10)
            if not isinstance(out, Variable):
                raise CheckFailed(
                    f"`{call}` should return a Variable; it returned {_short(out)} ({type(out).__name__})."
                )
            value = _number(getattr(out, "value", None), f"The value of `{call}`")
            results.append({"form": text, "value": value, "grads": _gradients(out, [x, y], f"`{call}`")})
        data.append(results)
    return data


_TIME = {"random": 10.0, "reuse": 10.0, "chain": 30.0, "doubling": 5.0}


def _timeout_words(kind: str, n: int, what: str) -> str:
    if kind == "doubling":
        return (
            f" on {graph_words(kind, n)}. It has only {n + 1} nodes, so {what} walks every path: "
            "a node reached along many paths is visited once per path. Visit each node once: keep a set "
            "of the nodes already seen, and sweep in (reverse) topological order."
        )
    return (
        f" on {graph_words(kind, n)}. The work should grow in proportion to the number of nodes; "
        "look for something in a loop that itself takes time proportional to the graph "
        "(`list.pop(0)`, `x in some_list`, `list.index`, sorting inside the loop, ...)."
    )


def _recursion_words(kind: str, n: int) -> str:
    return f" on {graph_words(kind, n)}"


def _index_map(nodes: list) -> dict:
    return {id(node): i for i, node in enumerate(nodes)}


class _Node:
    """A bare node for topological_order when the notebook has no Variable class."""

    __slots__ = ("value", "grad", "parents", "local_grads", "op")

    def __init__(self, value, parents=(), local_grads=(), op=""):
        self.value, self.grad, self.parents, self.local_grads, self.op = value, 0.0, parents, local_grads, op


def probe_topological_order(topological_order: Any, graphs: Sequence[Any]) -> ProbeData:
    if not callable(topological_order):
        raise CheckFailed(f"`topological_order` should be a function, but it is a {type(topological_order).__name__}.")
    cls = getattr(topological_order, "__globals__", {}).get("Variable")
    cls = cls if isinstance(cls, type) else _Node
    data = []
    for kind, n, seed in graphs:
        nodes = example_graph(cls, kind, n, seed)
        call = f"topological_order(nodes[-1]) with nodes = {graph_name(kind, n, seed)}"
        order = _run(
            topological_order,
            nodes[-1],
            name="topological_order",
            call=call,
            seconds=_TIME[kind],
            on_timeout=_timeout_words(kind, n, "topological_order"),
            on_recursion=_recursion_words(kind, n),
        )
        try:
            order = list(order)
        except TypeError:
            raise CheckFailed(f"`{call}` should return a list of nodes; it returned {_short(order)}.") from None
        index = _index_map(nodes)
        data.append([index.get(id(node), -1) for node in order])
    return data


def probe_backward(Variable: Any, graphs: Sequence[Any]) -> ProbeData:
    Variable = _variable_class(Variable)
    data = []
    for kind, n, seed in graphs:
        nodes = example_graph(Variable, kind, n, seed)
        call = f"nodes[-1].backward() with nodes = {graph_name(kind, n, seed)}"
        _run(
            lambda: nodes[-1].backward(),
            name="backward",
            call=call,
            seconds=_TIME[kind],
            on_timeout=_timeout_words(kind, n, "backward (or the topological_order it uses)"),
            on_recursion=_recursion_words(kind, n),
        )
        data.append(
            [_number(nodes[i].grad, f"The grad of node {i} after `{call}`") for i in sample_nodes(kind, len(nodes))]
        )
    return data


_VARIABLE_FNS = {
    name: (lambda name: lambda v: getattr(v, name)())(name) for name in ("exp", "log", "tanh", "relu", "sigmoid")
}


def probe_engine(Variable: Any, seeds: Sequence[int]) -> ProbeData:
    Variable = _variable_class(Variable)
    data = []
    for seed in seeds:
        inputs, steps = random_program(seed)
        xs = [Variable(v) for v in inputs]
        call = f"the random expression {seed}"
        out = _run(evaluate, xs, steps, _VARIABLE_FNS, name="operations", call=f"building {call}", seconds=10)
        if not isinstance(out, Variable):
            raise CheckFailed(f"Building {call} gave {_short(out)}, not a Variable.")
        _run(lambda: out.backward(), name="backward", call=f"backward() on {call}", seconds=10)
        data.append(
            {
                "value": _number(out.value, f"The value of {call}"),
                "grads": [_number(x.grad, f"The grad of an input of {call}") for x in xs],
            }
        )
    return data


def probe_zero_grad(Variable: Any, graphs: Sequence[Any]) -> ProbeData:
    Variable = _variable_class(Variable)
    data = []
    for kind, n, seed in graphs:
        nodes = example_graph(Variable, kind, n, seed)
        for i, node in enumerate(nodes):
            node.grad = 1.5 + i % 7
        call = f"nodes[-1].zero_grad() with nodes = {graph_name(kind, n, seed)} and every grad set to a nonzero number"
        _run(
            lambda: nodes[-1].zero_grad(),
            name="zero_grad",
            call=call,
            seconds=_TIME[kind],
            on_timeout=_timeout_words(kind, n, "zero_grad"),
            on_recursion=_recursion_words(kind, n),
        )
        data.append(
            [_number(nodes[i].grad, f"The grad of node {i} after `{call}`") for i in sample_nodes(kind, len(nodes))]
        )
    return data


def probe_gradient_check(gradient_check: Any, cases: Sequence[Any]) -> ProbeData:
    Variable = _variable_of(gradient_check, "gradient_check")
    data = []
    for name, inputs in cases:
        value, recorded = CHECK_FUNCTIONS[name]

        def f(variables, value=value, recorded=recorded):
            xs = [float(v.value) for v in variables]
            return Variable(value(xs), tuple(variables), tuple(recorded(xs)), "f")

        call = f"gradient_check(f, {list(inputs)}) with f = the test function \"{name}\""
        errors = _run(gradient_check, f, list(inputs), name="gradient_check", call=call, seconds=10)
        if isinstance(errors, (int, float)) or not isinstance(errors, Sequence):
            raise CheckFailed(
                f"`{call}` should return a list with one relative error per input; it returned {_short(errors)}."
            )
        if len(errors) != len(inputs):
            raise CheckFailed(
                f"`{call}` returned {len(errors)} numbers for {len(inputs)} inputs: one relative error per input."
            )
        data.append([_number(e, f"An entry of the list returned by `{call}`") for e in errors])
    return data


def _connected(out: Any, wrt: list) -> list[bool]:
    """Whether each of `wrt` is reachable from `out` through `.parents`."""
    seen, stack = {id(out)}, [out]
    while stack:
        for parent in getattr(stack.pop(), "parents", ()):
            if id(parent) not in seen:
                seen.add(id(parent))
                stack.append(parent)
    return [id(w) in seen for w in wrt]


# The neuron is graded on the expression it builds, replayed with PyTorch's operations: a wrong local
# derivative in an operation (exercises 1-4, graded there) costs nothing here. The probe runs the
# learner's neuron_loss on Variables of a subclass that records each operation it is asked for; the
# record is plain data (op names, operand references, constants, and for a node the learner built by
# hand, its recorded local derivatives), which the judge replays on tensors.

_TRACED_METHODS = {
    "__add__": "add",
    "__radd__": "radd",
    "__sub__": "sub",
    "__rsub__": "rsub",
    "__mul__": "mul",
    "__rmul__": "rmul",
    "__truediv__": "div",
    "__rtruediv__": "rdiv",
    "__pow__": "pow",
    "__rpow__": "rpow",
    "__neg__": "neg",
    "tanh": "tanh",
    "exp": "exp",
    "log": "log",
    "sigmoid": "sigmoid",
    "relu": "relu",
}
_REFLECTED = {"radd", "rsub", "rmul", "rdiv", "rpow"}


def _tracing_class(Variable: Any, trace: dict, keep: list) -> type:
    """A subclass of the learner's Variable whose operations record (op, operands) for their result."""
    namespace: dict = {"__slots__": ()} if "__slots__" in Variable.__dict__ else {}
    traced_class: list = []

    def make(method: str, op: str, base: Callable):
        def traced(self, *args):
            if op in _REFLECTED and args and isinstance(args[0], Variable):
                return NotImplemented  # Python asked the subclass first: let the other Variable's own method run
            out = base(self, *args)
            if isinstance(out, Variable) and out is not self:
                if type(out) is Variable:
                    try:
                        out.__class__ = traced_class[0]
                    except TypeError:
                        pass
                trace[id(out)] = (op, self, args)
                keep.append(out)
            return out

        traced.__name__ = method
        return traced

    for method, op in _TRACED_METHODS.items():
        base = getattr(Variable, method, None)
        if callable(base):
            namespace[method] = make(method, op, base)
    traced_class.append(type(Variable.__name__, (Variable,), namespace))
    return traced_class[0]


def _record(out: Any, inputs: list, trace: dict, what: str, limit: int = 20_000) -> list:
    """The expression that ends in `out`, as a list of steps in evaluation order; the last is `out`.
    A step is ("op", name, [refs]) | ("node", value, [(ref, local)]) | ("const", value); a ref is
    ["input", i] or ["step", k]; a number among an operation's operands is ["number", value]."""
    position = {id(v): i for i, v in enumerate(inputs)}
    steps: list = []
    index: dict = {}

    def operands_of(node):
        if id(node) in trace:
            return [a for a in (trace[id(node)][1],) + tuple(trace[id(node)][2]) if hasattr(a, "value")]
        return [p for p, _ in _edges(node, f"A node in the graph of {what}")]

    stack = [(out, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in index or id(node) in position:
            continue
        if not expanded:
            stack.append((node, True))
            stack.extend(
                (child, False) for child in operands_of(node) if id(child) not in index and id(child) not in position
            )
            continue
        if len(steps) >= limit:
            raise CheckFailed(f"The graph of {what} has more than {limit} nodes.")

        def ref(v):
            if hasattr(v, "value"):
                return ["input", position[id(v)]] if id(v) in position else ["step", index[id(v)]]
            return ["number", _number(v, f"A number in {what}")]

        if id(node) in trace:
            op, first, args = trace[id(node)]
            steps.append(("op", op, [ref(first)] + [ref(a) for a in args]))
        else:
            edges = _edges(node, f"A node in the graph of {what}")
            value = _number(getattr(node, "value", None), f"The value of a node in {what}")
            if edges:
                steps.append(("node", value, [(ref(p), _number(g, f"A local derivative in {what}")) for p, g in edges]))
            else:
                steps.append(("const", value))
        index[id(node)] = len(steps) - 1
    return steps


def probe_neuron_loss(neuron_loss: Any, cases: Sequence[Any]) -> ProbeData:
    Variable = _variable_of(neuron_loss, "neuron_loss")
    data = []
    for weights, bias, inputs, target in cases:
        trace: dict = {}
        keep: list = []
        Traced = _tracing_class(Variable, trace, keep)
        w = [Traced(float(v)) for v in weights]
        b = Traced(float(bias))
        call = f"neuron_loss({_short([f'Variable({v})' for v in weights])}, Variable({bias}), {list(inputs)}, {target})"
        out = _run(
            neuron_loss, w, b, [float(v) for v in inputs], float(target), name="neuron_loss", call=call, seconds=10
        )
        if not isinstance(out, Variable):
            raise CheckFailed(
                f"`{call}` should return a Variable (so that backward can run from it); it returned "
                f"{_short(out)} ({type(out).__name__})."
            )
        data.append(
            {
                "value": _number(out.value, f"The value of `{call}`"),
                "steps": _record(out, w + [b], trace, f"`{call}`") if not any(out is v for v in w + [b]) else [],
                "returns_input": next((i for i, v in enumerate(w + [b]) if out is v), None),
                "connected": _connected(out, w + [b]),
            }
        )
    return data


def probe_mul(Variable: Any, cases: Sequence[Any]) -> ProbeData:
    return _probe_op("mul", Variable, cases)


def probe_truediv(Variable: Any, cases: Sequence[Any]) -> ProbeData:
    return _probe_op("truediv", Variable, cases)


def probe_pow(Variable: Any, cases: Sequence[Any]) -> ProbeData:
    return _probe_op("pow", Variable, cases)


def probe_tanh(Variable: Any, at: Sequence[Any]) -> ProbeData:
    return _probe_op("tanh", Variable, at)


# Exercise 10: the published neuron, checked --------------------------------------------------
# The pieces are single nodes built with the learner's Variable constructor, so the exercise depends
# on the learner's backward and gradient_check (its subject) and on no operation of exercises 1-4.
# A right local derivative is a central difference of the piece's own value (no formula given away);
# the published ones are the tutorial's: tanh² for tanh, and the cost ½(ŷ − y²).


def _central(f: Callable, a: float, h: float = 1e-5) -> float:
    return (f(a + h) - f(a - h)) / (2 * h)


def _seed_pieces(Variable: Any, activation: str, cost: str):
    def weighted_sum(w, b):
        return Variable(w.value * SEED_X + b.value, (w, b), (SEED_X, 1.0), "w*x+b")

    def act(a):
        t = math.tanh(a.value)
        local = t * t if activation == "published_tanh" else _central(math.tanh, a.value)
        return Variable(t, (a,), (local,), "tanh")

    def loss_of(p):
        return Variable(SEED_COSTS[cost](p.value), (p,), (_central(SEED_COSTS[cost], p.value),), "cost")

    return weighted_sum, act, loss_of


def probe_seed_neuron(seed_neuron_report: Any, cases: Sequence[Any]) -> ProbeData:
    Variable = _variable_of(seed_neuron_report, "seed_neuron_report")
    data = []
    for activation, cost, w, b in cases:
        pieces = _seed_pieces(Variable, activation, cost)
        call = (
            f"seed_neuron_report(weighted_sum, activation, cost, w={w}, b={b}) with the test's {activation} and {cost}"
        )
        report = _run(seed_neuron_report, *pieces, float(w), float(b), name="seed_neuron_report", call=call, seconds=10)
        if not isinstance(report, dict) or not {"loss", "dw", "check"} <= set(report):
            raise CheckFailed(
                f"`{call}` should return a dict with the keys 'loss', 'dw' and 'check'; it returned {_short(report)}."
            )
        data.append({k: _number(report[k], f"report['{k}'] of `{call}`") for k in ("loss", "dw", "check")})
    return data


# ------------------------------------------------------------------ the checks
# judges below the judges line; every exercise here is by hand: the engine is the learner's, not torch.autograd
checks = NotebookChecks(__name__)
check_mul = checks.add("check_mul", probe_mul, by_hand=True)
check_truediv = checks.add("check_truediv", probe_truediv, by_hand=True)
check_pow = checks.add("check_pow", probe_pow, by_hand=True)
check_tanh = checks.add("check_tanh", probe_tanh, by_hand=True)
check_topological_order = checks.add("check_topological_order", probe_topological_order, by_hand=True)
check_backward = checks.add("check_backward", probe_backward, by_hand=True)
check_engine = checks.add("check_engine", probe_engine, by_hand=True)
check_zero_grad = checks.add("check_zero_grad", probe_zero_grad, by_hand=True)
check_gradient_check = checks.add("check_gradient_check", probe_gradient_check, by_hand=True)
check_neuron_loss = checks.add("check_neuron_loss", probe_neuron_loss, by_hand=True)
check_seed_neuron = checks.add("check_seed_neuron", probe_seed_neuron, by_hand=True)


def report_engine(Variable: Any, seeds: Sequence[int]) -> None:
    """Compare the whole engine (operations and backward) with PyTorch on the random expressions of
    `seeds`, and print what differs. A report for the notebook, not a graded check: each operation and
    backward have test cells of their own, and one wrong derivative should cost its own exercise only."""
    differ = []
    for seed in seeds:
        try:
            check_engine(Variable, seeds=[seed])
        except CheckFailed as failure:
            differ.append((seed, str(failure)))
    print(
        f"{len(seeds) - len(differ)} of {len(seeds)} random expressions agree with PyTorch (value and every gradient)."
    )
    if differ:
        print(
            f"The first that differs (of {len(differ)}: {', '.join(str(seed) for seed, _ in differ[:10])}"
            f"{' ...' if len(differ) > 10 else ''}):\n{differ[0][1]}"
        )


__all__ = [*checks.names, "example_graph", "random_expression_text", "report_engine"]


# ==== judges: decided outside the grading sandbox; the sandbox's copy of this module ends at this line ====
# Judges of notebook 02 (a scalar autograd engine).
#
# Every reference is recomputed here with PyTorch's autograd (or, for a plain chain, the product of its
# local derivatives); the learner's objects are never seen.

import random

import torch

from .feedback import close, mismatch
from .judges import answers
from .probes.nb02_cases import SEED_Y, graph_spec
from .registry import decides

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
