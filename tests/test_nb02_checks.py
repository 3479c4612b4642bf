"""The checks of notebook 02 accept the reference engine (the solution notebook's own cells) and any
random expression or graph, and catch a catalogue of realistic wrong engines, each with its hint,
without printing the expected numbers."""

from __future__ import annotations

import io
import math
import re
import signal
import sys

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder import nb02
from autograder.feedback import CheckFailed
from autograder.submissions import solution_sources
from benchmarks.engine import NOTEBOOK, load_reference_engine
from benchmarks.engine import run as run_benchmark

pytestmark = pytest.mark.nb02
ANSWERS = solution_sources(NOTEBOOK)


def engine(*overrides: str) -> dict:
    """A fresh copy of the reference engine and the other answers, with `overrides` (source code,
    as a learner would type it in a cell) executed on top."""
    ns = load_reference_engine()
    for grade_id in ("gradient_check", "neuron_loss", "seed_neuron_report"):
        exec(ANSWERS[grade_id], ns)
    for source in overrides:
        exec(source, ns)
    return ns


def _fails(check, obj, contains=(), **params) -> str:
    with pytest.raises(CheckFailed) as info:
        check(obj, **params)
    message = str(info.value)
    for text in contains:
        assert text in message, message
    return message


# --- the reference passes --------------------------------------------------------------------------


def test_reference_passes_every_test_cell_of_the_notebook():
    ns = engine()
    V = ns["Variable"]
    nb02.check_mul(V, cases=[(2.0, 3.0), (-1.5, 0.25), (0.0, 7.0), (1e3, -2e-3), (3.0, 3.0)])
    nb02.check_truediv(V, cases=[(3.0, 2.0), (-1.5, 0.25), (0.0, 7.0), (2.0, -4.0), (5.0, 5.0)])
    nb02.check_pow(
        V, cases=[(3.0, 2.0), (0.5, -1.5), (2.0, 0.5), (-2.0, 3.0), (-1.5, 2.0), (7.0, 1.0), (0.0, 2.0), (0.0, 2.5)]
    )
    nb02.check_tanh(V, at=[0.5, -2.0, 0.0, 1.3, 25.0, -0.01])
    graphs = [("random", 12, 0), ("reuse", 5, 1), ("random", 200, 2), ("chain", 100000, 5), ("doubling", 60, 6)]
    nb02.check_topological_order(ns["topological_order"], graphs=graphs)
    nb02.check_backward(V, graphs=graphs)
    nb02.check_zero_grad(V, graphs=[("random", 12, 0), ("chain", 100000, 3)])
    nb02.check_engine(V, seeds=list(range(42)))
    nb02.check_gradient_check(
        ns["gradient_check"],
        cases=[
            ("smooth", [0.7, -1.2]),
            ("tanh_squared", [0.5]),
            ("smooth", [2.0, 0.3]),
            ("tanh_squared", [-1.5]),
            ("exp_scaled", [1e-3, 4.0]),
            ("swapped_product", [1.5, -0.5]),
            ("flat", [0.0, 0.0]),
            ("tiny", [1e-4]),
        ],
    )
    nb02.check_neuron_loss(ns["neuron_loss"], cases=[([0.5, -0.3], 0.1, [1.0, 1.5], 0.8), ([1.5], -0.2, [0.7], -1.0)])
    nb02.check_seed_neuron(ns["seed_neuron_report"], cases=SEED_CASES)


@settings(max_examples=80, deadline=None)
@given(st.integers(min_value=0, max_value=10**9))
def test_reference_agrees_with_pytorch_on_random_expressions(seed):
    nb02.check_engine(REFERENCE["Variable"], seeds=[seed])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["random", "reuse", "doubling", "chain"]), st.integers(1, 300), st.integers(0, 10**6))
def test_reference_passes_on_random_graphs(kind, n, seed):
    n = max(n, 2) if kind == "random" else n
    nb02.check_topological_order(REFERENCE["topological_order"], graphs=[(kind, n, seed)])
    nb02.check_backward(REFERENCE["Variable"], graphs=[(kind, n, seed)])
    nb02.check_zero_grad(REFERENCE["Variable"], graphs=[(kind, n, seed)])


@settings(max_examples=60, deadline=None)
@given(st.floats(-3, 3).filter(lambda v: abs(v) > 1e-3), st.floats(-3, 3).filter(lambda v: abs(v) > 1e-3))
def test_reference_operations_pass_everywhere(a, b):
    V = REFERENCE["Variable"]
    nb02.check_mul(V, cases=[(a, b)])
    nb02.check_truediv(V, cases=[(a, b)])
    nb02.check_tanh(V, at=[a])
    nb02.check_pow(V, cases=[(abs(a), b), (a, float(round(b)))])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-2, 2), min_size=1, max_size=4), st.floats(-1, 1), st.floats(-1, 1))
def test_reference_neuron_loss_passes_everywhere(weights, bias, target):
    inputs = [0.5 * (i + 1) * (-1) ** i for i in range(len(weights))]
    nb02.check_neuron_loss(REFERENCE["neuron_loss"], cases=[(weights, bias, inputs, target)])


REFERENCE = engine()


# --- blank answers say what to do -----------------------------------------------------------------


def blank_source(grade_id: str) -> str:
    """The answer cell as the release shows it: the solution region replaced by a stub."""
    cell = next(
        c
        for c in nbformat.read(NOTEBOOK, as_version=4).cells
        if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id
    )
    return re.sub(
        r"### BEGIN SOLUTION.*?### END SOLUTION",
        "# YOUR CODE HERE\n    raise NotImplementedError()",
        cell.source,
        flags=re.S,
    )


@pytest.mark.parametrize(
    "grade_id, check, attribute, params",
    [
        ("variable_mul", nb02.check_mul, "Variable", {"cases": [(2.0, 3.0)]}),
        ("variable_truediv", nb02.check_truediv, "Variable", {"cases": [(2.0, 3.0)]}),
        ("variable_pow", nb02.check_pow, "Variable", {"cases": [(2.0, 3.0)]}),
        ("variable_tanh", nb02.check_tanh, "Variable", {"at": [0.5]}),
        ("topological_order", nb02.check_topological_order, "topological_order", {"graphs": [("random", 12, 0)]}),
        ("variable_backward", nb02.check_backward, "Variable", {"graphs": [("random", 12, 0)]}),
        ("variable_zero_grad", nb02.check_zero_grad, "Variable", {"graphs": [("random", 12, 0)]}),
        ("gradient_check", nb02.check_gradient_check, "gradient_check", {"cases": [("smooth", [0.7, -1.2])]}),
        ("neuron_loss", nb02.check_neuron_loss, "neuron_loss", {"cases": [([0.5], 0.1, [1.0], 0.8)]}),
        (
            "seed_neuron_report",
            nb02.check_seed_neuron,
            "seed_neuron_report",
            {"cases": [("tanh", "half_square", 1.0, 0.0)]},
        ),
    ],
)
def test_blank_answer_says_not_written_yet(grade_id, check, attribute, params):
    ns = engine(blank_source(grade_id))
    message = _fails(check, ns[attribute], contains=("not written yet", f"`{grade_id}`"), **params)
    assert "raise NotImplementedError()" in message


def test_blank_topological_order_is_named_when_backward_calls_it():
    ns = engine("def topological_order(root):\n    raise NotImplementedError()\n")
    _fails(
        nb02.check_backward,
        ns["Variable"],
        graphs=[("random", 12, 0)],
        contains=("`topological_order` is not written yet",),
    )
    _fails(nb02.check_engine, ns["Variable"], seeds=[0], contains=("`topological_order` is not written yet",))


# --- the catalogue of wrong engines ---------------------------------------------------------------


def test_mul_with_swapped_derivatives():
    ns = engine(
        "def variable_mul(self, other):\n    other = as_variable(other)\n"
        "    return Variable(self.value * other.value, (self, other), (self.value, other.value))\n"
        "Variable.__mul__ = variable_mul\nVariable.__rmul__ = variable_mul\n"
    )
    _fails(nb02.check_mul, ns["Variable"], cases=[(2.0, 3.0)], contains=("other* factor", "with respect to x"))


def test_mul_that_forgets_plain_numbers():
    ns = engine(
        "def variable_mul(self, other):\n"
        "    return Variable(self.value * other.value, (self, other), (other.value, self.value))\n"
        "Variable.__mul__ = variable_mul\nVariable.__rmul__ = variable_mul\n"
    )
    _fails(nb02.check_mul, ns["Variable"], cases=[(2.0, 3.0)], contains=("AttributeError", "as_variable"))


def test_division_without_the_square():
    ns = engine(
        "def variable_truediv(self, other):\n    other = as_variable(other)\n"
        "    return Variable(self.value / other.value, (self, other), (1 / other.value, -self.value / other.value))\n"
        "Variable.__truediv__ = variable_truediv\n"
    )
    _fails(nb02.check_truediv, ns["Variable"], cases=[(3.0, 2.0)], contains=("squared",))


POW_HEAD = (
    "def variable_pow(self, other):\n    a = self.value\n    if not isinstance(other, Variable):\n"
    "        return Variable(a ** other, (self,), ({const},))\n    b = other.value\n"
)
POW_TAIL = "Variable.__pow__ = variable_pow\n"


def test_pow_that_keeps_the_exponent():
    ns = engine(
        POW_HEAD.format(const="other * a ** other")
        + "    return Variable(a ** b, (self, other), (b * a ** (b - 1), a ** b * math.log(a)))\n"
        + POW_TAIL
    )
    _fails(nb02.check_pow, ns["Variable"], cases=[(3.0, 2.0)], contains=("drops by one",))


def test_pow_with_log_of_absolute_value():
    ns = engine(
        POW_HEAD.format(const="other * a ** (other - 1)")
        + "    return Variable(a ** b, (self, other), (b * a ** (b - 1), a ** b * math.log(abs(a))))\n"
        + POW_TAIL
    )
    nb02.check_pow(ns["Variable"], cases=[(3.0, 2.0), (0.5, -1.5)])  # right wherever a > 0 ...
    _fails(
        nb02.check_pow, ns["Variable"], cases=[(-2.0, 3.0)], contains=("ln|a|", "does not exist")
    )  # ... not at a < 0


def test_pow_at_zero_base_has_a_zero_exponent_derivative():
    """At a = 0, b > 0, a^b is 0 for every b: d/db is 0 (PyTorch agrees), not nan; nan stays right for a < 0."""
    ns = engine(
        POW_HEAD.format(const="other * a ** (other - 1)")
        + "    return Variable(a ** b, (self, other), (b * a ** (b - 1), a ** b * math.log(a) if a > 0 else "
        "math.nan))\n" + POW_TAIL
    )
    nb02.check_pow(ns["Variable"], cases=[(-2.0, 3.0), (3.0, 2.0)])
    _fails(nb02.check_pow, ns["Variable"], cases=[(0.0, 2.0)], contains=("exponent is 0",))
    _fails(nb02.check_pow, ns["Variable"], cases=[(0.0, 2.5)], contains=("exponent is 0",))


def test_pow_that_takes_log_of_a_negative_number():
    ns = engine(
        POW_HEAD.format(const="other * a ** (other - 1)")
        + "    return Variable(a ** b, (self, other), (b * a ** (b - 1), a ** b * math.log(a)))\n"
        + POW_TAIL
    )
    _fails(nb02.check_pow, ns["Variable"], cases=[(-2.0, 3.0)], contains=("ValueError", "math.nan"))


def test_tanh_squared_is_caught_and_named():
    ns = engine(
        "def variable_tanh(self):\n    t = math.tanh(self.value)\n    return Variable(t, (self,), (t * t,))\n"
        "Variable.tanh = variable_tanh\n"
    )
    message = _fails(nb02.check_tanh, ns["Variable"], at=[0.5], contains=("tanh²", "classic slip"))
    right = 1 - math.tanh(0.5) ** 2
    assert f"{right:.4f}" not in message and f"{right:.6g}" not in message
    assert "the 1" not in message and "1 −" not in message and "1 -" not in message  # the hint does not give it away
    # the whole-engine comparison with PyTorch still sees it (as a report)
    _fails(
        nb02.check_engine,
        ns["Variable"],
        seeds=[s for s in range(60) if "tanh" in nb02.random_expression_text(s)][:3],
        contains=("random expression", "exercises 1-4"),
    )


# --- fairness: one mistake costs one exercise ------------------------------------------------------

ALL_GRAPHS = [
    ("random", 12, 0),
    ("reuse", 5, 1),
    ("random", 200, 2),
    ("random", 60, 3),
    ("reuse", 1000, 4),
    ("chain", 5000, 5),  # deep enough for the operations' derivatives to matter; the 100 000-node one is for recursion
    ("doubling", 60, 6),
]
NEURON_CASES = [
    ([0.5, -0.3], 0.1, [1.0, 1.5], 0.8),
    ([1.5], -0.2, [0.7], -1.0),
    ([0.1, 0.2, -0.3, 0.4], 0.0, [1.0, -1.0, 2.0, 0.5], 0.0),
    ([2.0, -1.0, 0.5], 0.3, [-0.5, 0.25, 3.0], 0.5),
]


def _graded_elsewhere_pass(ns):
    """Every exercise that is not about the operations: it must not depend on their local derivatives."""
    nb02.check_topological_order(ns["topological_order"], graphs=ALL_GRAPHS)
    nb02.check_backward(ns["Variable"], graphs=ALL_GRAPHS)
    nb02.check_zero_grad(ns["Variable"], graphs=[("reuse", 50, 1), ("random", 100, 2)])
    nb02.check_neuron_loss(ns["neuron_loss"], cases=NEURON_CASES)


WRONG_OPERATIONS = {
    "tanh": (
        "def variable_tanh(self):\n    t = math.tanh(self.value)\n    return Variable(t, (self,), (t * t,))\n"
        "Variable.tanh = variable_tanh\n",
        "check_tanh",
        {"at": [0.5, -2.0, 1.3]},
    ),
    "mul": (
        "def variable_mul(self, other):\n    y = as_variable(other)\n"
        "    return Variable(self.value * y.value, (self, y), (self.value, y.value))\n"
        "Variable.__mul__ = variable_mul\nVariable.__rmul__ = variable_mul\n",
        "check_mul",
        {"cases": [(2.0, 3.0)]},
    ),
    "pow": (
        "def variable_pow(self, other):\n    b = other.value if isinstance(other, Variable) else other\n"
        "    parents = (self, other) if isinstance(other, Variable) else (self,)\n"
        "    return Variable(self.value ** b, parents, (b * self.value ** b, 0.0)[:len(parents)])\n"
        "Variable.__pow__ = variable_pow\n",
        "check_pow",
        {"cases": [(3.0, 2.0)]},
    ),
}


@pytest.mark.parametrize("op", list(WRONG_OPERATIONS))
def test_a_wrong_operation_loses_only_its_own_points(op):
    """A wrong tanh loses tanh's points (a wrong * or ** theirs), not those of backward, zero_grad or the
    neuron: those are graded on graphs whose local derivatives are right (given, or replayed with PyTorch)."""
    source, check, params = WRONG_OPERATIONS[op]
    ns = engine(source)
    _fails(getattr(nb02, check), ns["Variable"], **params)
    _graded_elsewhere_pass(ns)


def test_engine_comparison_reports_without_raising(capsys):
    ns = engine(WRONG_OPERATIONS["tanh"][0])
    seeds = [s for s in range(60) if "tanh" in nb02.random_expression_text(s)][:3]
    assert nb02.report_engine(ns["Variable"], seeds=seeds) is None
    out = capsys.readouterr().out
    assert "0 of 3 random expressions agree" in out and "random expression" in out
    nb02.report_engine(REFERENCE["Variable"], seeds=[0, 1, 2])
    assert "3 of 3 random expressions agree" in capsys.readouterr().out


def test_no_graded_cell_of_the_notebook_compares_whole_expressions():
    """The random-expression comparison takes no points: it is a report, outside the test cells."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    graded = [c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert graded and not any("check_engine" in source or "report_engine" in source for source in graded)
    assert any("report_engine(" in c.source for c in nb.cells if c.cell_type == "code")


def test_neuron_is_replayed_whatever_way_it_is_written():
    for body in (
        "    return ((sum((w * x for w, x in zip(weights, inputs)), bias)).tanh() - target) ** 2\n",
        "    s = bias\n    for w, x in zip(weights, inputs):\n        s = x * w + s\n"
        "    e = target - s.tanh()\n    return e * e\n",
        "    s = 0\n    for w, x in zip(weights, inputs):\n        s = s + w * x\n"
        "    return (-(s + bias).tanh() + target) ** 2.0\n",
        "    s = bias * 1\n    for w, x in zip(weights, inputs):\n        s += w * x\n"
        "    d = s.tanh() - target\n    return d ** 2 / 1.0\n",
    ):
        ns = engine("def neuron_loss(weights, bias, inputs, target):\n" + body)
        nb02.check_neuron_loss(ns["neuron_loss"], cases=NEURON_CASES)


def test_neuron_with_a_hand_built_node_uses_its_own_local_derivative():
    hand_built = (
        "def neuron_loss(weights, bias, inputs, target):\n    s = bias\n"
        "    for w, x in zip(weights, inputs):\n        s = s + w * x\n"
        "    t = math.tanh(s.value)\n    y = Variable(t, (s,), ({local},))\n    return (y - target) ** 2\n"
    )
    nb02.check_neuron_loss(engine(hand_built.format(local="1 - t * t"))["neuron_loss"], cases=NEURON_CASES)
    _fails(
        nb02.check_neuron_loss,
        engine(hand_built.format(local="t * t"))["neuron_loss"],
        cases=NEURON_CASES[:1],
        contains=("d loss / d weights[0]",),
    )


def test_tanh_written_with_the_input():
    ns = engine(
        "def variable_tanh(self):\n    return Variable(math.tanh(self.value), (self,), (1 - self.value ** 2,))\n"
        "Variable.tanh = variable_tanh\n"
    )
    _fails(nb02.check_tanh, ns["Variable"], at=[0.5], contains=("written with the input",))


RECURSIVE_TOPO = """
def topological_order(root):
    order, seen = [], set()
    def visit(node):
        if node in seen:
            return
        seen.add(node)
        for parent in node.parents:
            visit(parent)
        order.append(node)
    visit(root)
    return order
"""

PER_PATH_TOPO = """
def topological_order(root):
    order, stack = [], [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            if node not in order:
                order.append(node)
            continue
        stack.append((node, True))
        stack.extend((p, False) for p in node.parents)
    return order
"""


def test_recursive_topological_order_works_on_small_graphs_and_is_named_on_deep_ones():
    ns = engine(RECURSIVE_TOPO)
    nb02.check_topological_order(ns["topological_order"], graphs=[("random", 12, 0), ("reuse", 5, 1)])
    _fails(
        nb02.check_topological_order,
        ns["topological_order"],
        graphs=[("chain", 100000, 5)],
        contains=("RecursionError", "recurses", "explicit stack"),
    )
    _fails(nb02.check_backward, ns["Variable"], graphs=[("chain", 100000, 5)], contains=("recurses",))


def test_recursion_cap_holds_even_if_the_learner_raised_the_limit():
    ns = engine(RECURSIVE_TOPO)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000_000)
    try:
        _fails(
            nb02.check_topological_order, ns["topological_order"], graphs=[("chain", 100000, 5)], contains=("recurses",)
        )
    finally:
        sys.setrecursionlimit(old)


@pytest.fixture
def doubling_limit_1s(monkeypatch):
    """The doubling graph's time limit (5 s when grading) at 1 s: a walk of every path through its 60 levels never
    ends, so the verdict and its message are the same, 4 s sooner."""
    from autograder.nb02 import probes

    monkeypatch.setitem(probes._TIME, "doubling", 1.0)


def test_per_path_topological_order_times_out_with_the_cause_and_restores_the_alarm(doubling_limit_1s):
    ns = engine(PER_PATH_TOPO)
    nb02.check_topological_order(ns["topological_order"], graphs=[("random", 12, 0)])
    before = signal.getsignal(signal.SIGALRM)
    _fails(
        nb02.check_topological_order,
        ns["topological_order"],
        graphs=[("doubling", 60, 6)],
        contains=("did not finish", "walks every path"),
    )
    assert signal.getsignal(signal.SIGALRM) is before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_topological_order_with_duplicates_missing_nodes_or_reversed():
    dup = engine(
        "def topological_order(root):\n    order, stack = [], [root]\n    while stack:\n        n = stack.pop()\n"
        "        order.append(n)\n        stack.extend(n.parents)\n    return order[::-1]\n"
    )
    _fails(nb02.check_topological_order, dup["topological_order"], graphs=[("reuse", 5, 1)], contains=("exactly once",))
    rev = engine("_reference = topological_order\ndef topological_order(root):\n    return _reference(root)[::-1]\n")
    _fails(nb02.check_topological_order, rev["topological_order"], graphs=[("random", 12, 0)], contains=("in reverse",))
    only_root = engine("def topological_order(root):\n    return [root]\n")
    _fails(
        nb02.check_topological_order,
        only_root["topological_order"],
        graphs=[("random", 12, 0)],
        contains=("leaves out",),
    )


BACKWARD = "def variable_backward(self):\n{body}\nVariable.backward = variable_backward\n"


def test_backward_that_assigns_instead_of_accumulating():
    ns = engine(
        BACKWARD.format(
            body="    self.grad = 1.0\n    for node in reversed(topological_order(self)):\n"
            "        for parent, local in zip(node.parents, node.local_grads):\n"
            "            parent.grad = node.grad * local"
        )
    )
    _fails(nb02.check_backward, ns["Variable"], graphs=[("reuse", 5, 1)], contains=("+=", "used more than once"))


def test_backward_in_forward_order():
    ns = engine(
        BACKWARD.format(
            body="    self.grad = 1.0\n    for node in topological_order(self):\n"
            "        for parent, local in zip(node.parents, node.local_grads):\n"
            "            parent.grad += node.grad * local"
        )
    )
    _fails(nb02.check_backward, ns["Variable"], graphs=[("random", 12, 0)], contains=("*reverse* topological order",))


def test_backward_without_a_seed():
    ns = engine(
        BACKWARD.format(
            body="    for node in reversed(topological_order(self)):\n"
            "        for parent, local in zip(node.parents, node.local_grads):\n"
            "            parent.grad += node.grad * local"
        )
    )
    _fails(nb02.check_backward, ns["Variable"], graphs=[("random", 12, 0)], contains=("seed",))


def test_backward_that_pushes_along_every_path(doubling_limit_1s):
    ns = engine(
        BACKWARD.format(
            body="    self.grad = 1.0\n    stack = [(self, 1.0)]\n    while stack:\n"
            "        node, g = stack.pop()\n"
            "        for parent, local in zip(node.parents, node.local_grads):\n"
            "            parent.grad += g * local\n            stack.append((parent, g * local))"
        )
    )
    nb02.check_backward(ns["Variable"], graphs=[("random", 12, 0), ("reuse", 5, 1)])  # right on small graphs ...
    _fails(
        nb02.check_backward, ns["Variable"], graphs=[("doubling", 60, 6)], contains=("walks every path",)
    )  # ... not here


def test_zero_grad_that_resets_only_the_output():
    ns = engine("def variable_zero_grad(self):\n    self.grad = 0.0\nVariable.zero_grad = variable_zero_grad\n")
    _fails(nb02.check_zero_grad, ns["Variable"], graphs=[("random", 12, 0)], contains=("every node of the graph",))


GRADIENT_CHECK = """
def gradient_check(f, inputs, h=1e-6):
    variables = [Variable(v) for v in inputs]
    f(variables).backward()
    errors = []
    for i in range(len(inputs)):
        up = [Variable(v + (h if j == i else 0.0)) for j, v in enumerate(inputs)]
        down = [Variable(v - (h if j == i else 0.0)) for j, v in enumerate(inputs)]
        here = [Variable(v) for v in inputs]
        numeric = {numeric}
        analytic = variables[i].grad
        errors.append({error})
    return errors
"""
CENTRAL = "(f(up).value - f(down).value) / (2 * h)"
RELATIVE = "abs(analytic - numeric) / max(abs(analytic), abs(numeric)) if max(abs(analytic), abs(numeric)) else 0.0"


@pytest.mark.parametrize(
    "numeric, error, expected",
    [
        (CENTRAL, "abs(analytic - numeric)", "absolute error"),
        ("(f(up).value - f(here).value) / h", RELATIVE, "one-sided"),
        (CENTRAL, "abs(analytic - numeric) / abs(numeric) if numeric else 0.0", "numerical gradient alone"),
        (CENTRAL, "abs(analytic - numeric) / max(abs(analytic), abs(numeric))", "ZeroDivisionError"),
        (
            CENTRAL,
            "(analytic - numeric) / max(abs(analytic), abs(numeric)) if max(abs(analytic), abs(numeric)) else 0.0",
            "negative",
        ),
    ],
)
def test_gradient_check_mistakes(numeric, error, expected):
    ns = engine(GRADIENT_CHECK.format(numeric=numeric, error=error))
    cases = [
        ("smooth", [0.7, -1.2]),
        ("tanh_squared", [0.5]),
        ("swapped_product", [1.5, -0.5]),
        ("flat", [0.0, 0.0]),
        ("tiny", [1e-4]),
    ]
    _fails(nb02.check_gradient_check, ns["gradient_check"], cases=cases, contains=(expected,))


def test_gradient_check_written_correctly_in_another_way_passes():
    ns = engine(GRADIENT_CHECK.format(numeric=CENTRAL, error=RELATIVE))
    nb02.check_gradient_check(
        ns["gradient_check"],
        cases=[
            ("smooth", [0.7, -1.2]),
            ("tanh_squared", [0.5]),
            ("flat", [0.0, 0.0]),
            ("tiny", [1e-4]),
            ("exp_scaled", [1e-3, 4.0]),
        ],
    )


NEURON = """
def neuron_loss(weights, bias, inputs, target):
    s = bias
    for w, x in zip(weights, inputs):
        s = s + w * x
    return {loss}
"""


@pytest.mark.parametrize(
    "loss, expected",
    [
        ("0.5 * (s.tanh() - target) ** 2", "without a factor ½"),
        ("(s - target) ** 2", "tanh of the weighted sum"),
        ("s.tanh() - target ** 2", "not the target"),
        ("(Variable(math.tanh(s.value)) - target) ** 2", "graph is broken"),
    ],
)
def test_neuron_loss_mistakes(loss, expected):
    ns = engine(NEURON.format(loss=loss))
    _fails(nb02.check_neuron_loss, ns["neuron_loss"], cases=[([0.5, -0.3], 0.1, [1.0, 1.5], 0.8)], contains=(expected,))


def test_neuron_loss_written_another_way_passes():
    ns = engine(
        "def neuron_loss(weights, bias, inputs, target):\n"
        "    error = (sum((w * x for w, x in zip(weights, inputs)), bias)).tanh() - target\n    return error * error\n"
    )
    nb02.check_neuron_loss(ns["neuron_loss"], cases=[([0.5, -0.3], 0.1, [1.0, 1.5], 0.8), ([1.5], -0.2, [0.7], -1.0)])


def test_division_written_as_a_composition_passes():
    # micrograd's way: x / y = x * y**-1 builds two nodes; the check follows the whole subgraph
    ns = engine(
        "def variable_truediv(self, other):\n    return self * as_variable(other) ** -1\n"
        "Variable.__truediv__ = variable_truediv\n"
    )
    nb02.check_truediv(ns["Variable"], cases=[(3.0, 2.0), (-1.5, 0.25), (5.0, 5.0)])


def test_judges_need_no_learner_objects():
    ns = engine()
    data = nb02.check_backward.collect(ns["Variable"], graphs=[("reuse", 5, 1)])
    assert isinstance(data, list) and all(isinstance(v, float) for v in data[0])
    nb02.check_backward.decide(data, graphs=[("reuse", 5, 1)])


def test_example_graph_is_what_the_tests_use():
    V = REFERENCE["Variable"]
    nodes = nb02.example_graph(V, "doubling", 3, 0)
    assert len(nodes) == 4 and nodes[-1].parents == (nodes[-2], nodes[-2])
    assert "x0 = Variable(" in nb02.random_expression_text(0)


# --- the benchmark --------------------------------------------------------------------------------


def test_benchmark_runs_on_the_notebooks_engine_at_a_small_size():
    out = io.StringIO()
    rows = run_benchmark([300, 3000], repeat=1, out=out)
    assert [r["agree"] for r in rows] == [True] * 4 and {r["gc"] for r in rows} == {"on", "paused"}
    text = out.getvalue()
    assert "cells tagged 'engine'" in text and "scaling" in text and "torch/engine" in text


def test_benchmark_engine_is_the_notebooks_engine():
    V = load_reference_engine()["Variable"]
    assert V.__slots__ == ("value", "grad", "parents", "local_grads", "op")
    x = V(2.0)
    y = (x * x).tanh() + x**3 / 2
    y.backward()
    assert math.isclose(x.grad, 4 * (1 - math.tanh(4.0) ** 2) + 6.0, rel_tol=1e-12)


# --- exercise 10: the published neuron --------------------------------------------------------------

SEED_CASES = [
    ("published_tanh", "half_square", 1.0, 0.0),
    ("tanh", "half_square", 1.0, 0.0),
    ("published_tanh", "published_cost", 1.0, 0.0),
    ("tanh", "published_cost", 1.0, 0.0),
    ("tanh", "half_square", -0.4, 0.7),
    ("published_tanh", "half_square", 0.3, -1.2),
]


def test_seed_neuron_reproduces_the_published_number_and_the_right_one():
    """Seed 002 as published (x = 2, w = 1, b = 0, y = 1): -0.0669 comes from the tanh² derivative with the cost
    ½(ŷ − y)²; the right value is about -0.00508; the learner's checker flags the first and passes the second."""
    ns = engine()
    data = nb02.check_seed_neuron.collect(ns["seed_neuron_report"], cases=SEED_CASES[:4])
    published, right, published_cost, _ = data
    assert round(published["dw"], 4) == -0.0669 and published["check"] > 0.5
    assert abs(right["dw"] - -0.00508) < 5e-6 and right["check"] < 1e-8
    assert (
        published_cost["loss"] < 0 and published_cost["check"] > 0.5
    )  # both mistakes: checker sees the derivative one


@pytest.mark.parametrize(
    "body, expected",
    [
        (
            "    w_, b_ = Variable(w), Variable(b)\n    out = cost(activation(weighted_sum(w_, b_)))\n    "
            "out.backward()\n"
            "    return {'loss': out.value, 'dw': w_.grad, 'check': 0.0}\n",
            "report['check']",
        ),
        (
            "    loss = lambda v: cost(activation(weighted_sum(v[0], v[1])))\n    w_, b_ = Variable(w), Variable(b)\n"
            "    out = loss([w_, b_])\n    out.backward()\n    return {'loss': out.value, 'dw': b_.grad, "
            "'check': gradient_check(loss, [w, b])[0]}\n",
            "report['dw']",
        ),
        ("    return [1, 2, 3]\n", "a dict with the keys"),
    ],
)
def test_seed_neuron_mistakes(body, expected):
    ns = engine("def seed_neuron_report(weighted_sum, activation, cost, w=1.0, b=0.0):\n" + body)
    _fails(nb02.check_seed_neuron, ns["seed_neuron_report"], cases=SEED_CASES, contains=(expected,))


def test_points_follow_effort():
    """topological_order, the hardest exercise, is worth more than any single operation; the
    one-line-per-piece seed-neuron report is worth the least."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    points = {
        c.metadata.nbgrader.grade_id: c.metadata.nbgrader.points
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("grade")
    }
    operations = [points[f"test_variable_{op}"] for op in ("mul", "truediv", "pow", "tanh")]
    assert points["test_topological_order"] > max(operations)
    assert points["test_seed_neuron_report"] == min(points.values())
