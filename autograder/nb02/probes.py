"""Notebook 02's probes: the only code of its checks that runs in the grading sandbox."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

from ..feedback import CheckFailed
from ..feedback import short as _short_repr
from ..probes.call import call_learner
from ..probes.nb02_cases import (
    CHECK_FUNCTIONS,
    SEED_COSTS,
    SEED_X,
    evaluate,
    example_graph,
    forms,
    graph_name,
    graph_words,
    random_program,
    sample_nodes,
)
from ..registry import ProbeData


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
            lambda nodes=nodes: nodes[-1].backward(),
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


_VARIABLE_FNS = {name: operator.methodcaller(name) for name in ("exp", "log", "tanh", "relu", "sigmoid")}


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
        _run(lambda out=out: out.backward(), name="backward", call=f"backward() on {call}", seconds=10)
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
            lambda nodes=nodes: nodes[-1].zero_grad(),
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
