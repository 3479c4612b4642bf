"""The checks of notebook 01 accept correct answers (however written), reject wrong ones with the
hint meant for them, and never print the expected value."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder import nb01
from autograder.feedback import CheckFailed

pytestmark = pytest.mark.nb01
finite = st.floats(min_value=-50, max_value=50, allow_nan=False, allow_infinity=False)


def primal(x1, x2):
    return {"w1": x1, "w2": x2, "w3": x1 * x2, "w4": math.sin(x1), "w5": x1 * x2 + math.sin(x1)}


def adjoints(x1, x2):
    return {"w5": 1.0, "w4": 1.0, "w3": 1.0, "w2": x1, "w1": x2 + math.cos(x1)}


def tangents(x1, x2, d1, d2):
    return {
        "w1": d1,
        "w2": d2,
        "w3": d1 * x2 + x1 * d2,
        "w4": math.cos(x1) * d1,
        "w5": d1 * x2 + x1 * d2 + math.cos(x1) * d1,
    }


def _fails(check, fn, contains=(), **params):
    with pytest.raises(CheckFailed) as info:
        check(fn, **params)
    for text in contains:
        assert text in str(info.value), str(info.value)
    return str(info.value)


@settings(max_examples=60, deadline=None)
@given(finite, finite)
def test_correct_answers_pass_everywhere(x1, x2):
    nb01.check_primal_trace(primal, at=[(x1, x2)])
    nb01.check_adjoint_trace(adjoints, at=[(x1, x2)])
    nb01.check_tangent_trace(tangents, cases=[(x1, x2, 1.0, 0.0), (x1, x2, 0.3, -2.0)])


@settings(max_examples=40, deadline=None)
@given(finite, finite.filter(lambda v: abs(v) > 1e-3))
def test_missing_sine_path_always_caught(x1, x2):
    def one_path(a, b):
        return {**adjoints(a, b), "w1": b}

    if abs(math.cos(x1)) < 1e-6:
        return  # the sine path contributes nothing there: both answers agree
    _fails(nb01.check_adjoint_trace, one_path, at=[(x1, x2)], contains=("two operations",))


def test_blank_answer_says_what_to_do():
    def blank(x1, x2):
        raise NotImplementedError()

    message = _fails(nb01.check_primal_trace, blank, at=[(2.0, 3.0)], contains=("not written yet",))
    assert "raise NotImplementedError()" in message


def test_wrong_return_type_and_missing_keys():
    _fails(nb01.check_primal_trace, lambda a, b: [a, b], at=[(2.0, 3.0)], contains=("should return a dict",))
    _fails(nb01.check_primal_trace, lambda a, b: {"w1": a}, at=[(2.0, 3.0)], contains=("no entry for w2, w3, w4, w5",))
    _fails(
        nb01.check_primal_trace,
        lambda a, b: {**primal(a, b), "w3": "six"},
        at=[(2.0, 3.0)],
        contains=("should be a number",),
    )


def test_crash_is_reported_with_the_call():
    def crashes(x1, x2):
        return {"w1": x1 / 0}

    _fails(nb01.check_primal_trace, crashes, at=[(2.0, 3.0)], contains=("primal_trace(2.0, 3.0)", "ZeroDivisionError"))


def test_degrees_hint():
    def degrees(x1, x2):
        return {**primal(x1, x2), "w4": math.sin(math.radians(x1)), "w5": x1 * x2 + math.sin(math.radians(x1))}

    _fails(nb01.check_primal_trace, degrees, at=[(2.0, 3.0)], contains=("radians",))


def test_swapped_adjoints_hint():
    def swapped(x1, x2):
        return {**adjoints(x1, x2), "w1": x1, "w2": x2 + math.cos(x1)}

    _fails(nb01.check_adjoint_trace, swapped, at=[(2.0, 3.0)], contains=("swapped",))


def test_wrong_seed_hint():
    def seed_zero(x1, x2):
        return {**adjoints(x1, x2), "w5": 0.0}

    _fails(nb01.check_adjoint_trace, seed_zero, at=[(2.0, 3.0)], contains=("seed",))


def test_messages_do_not_reveal_the_expected_value():
    def one_path(a, b):
        return {**adjoints(a, b), "w1": b}

    message = _fails(nb01.check_adjoint_trace, one_path, at=[(2.0, 3.0)])
    expected = 3.0 + math.cos(2.0)
    assert f"{expected:.4f}" not in message and f"{expected:.6g}" not in message


def test_tangent_hints():
    def no_chain(x1, x2, d1, d2):
        return {**tangents(x1, x2, d1, d2), "w4": math.cos(x1), "w5": d1 * x2 + x1 * d2 + math.cos(x1)}

    _fails(nb01.check_tangent_trace, no_chain, cases=[(2.0, 3.0, 0.5, 0.0)], contains=("chain rule",))

    def half_product(x1, x2, d1, d2):
        return {**tangents(x1, x2, d1, d2), "w3": d1 * x2, "w5": d1 * x2 + math.cos(x1) * d1}

    _fails(nb01.check_tangent_trace, half_product, cases=[(2.0, 3.0, 0.0, 1.0)], contains=("product rule",))


def _jacobian_reverse(F, x):
    x = x.detach().requires_grad_()
    y = F(x)
    rows = [
        torch.autograd.grad(y, x, grad_outputs=torch.eye(y.numel())[i], retain_graph=True)[0] for i in range(y.numel())
    ]
    return torch.stack(rows)


def test_jacobian_reverse_accepts_correct_and_other_correct_ways():
    nb01.check_jacobian_reverse(_jacobian_reverse, cases=[(3, 2, 0), (1, 1, 1), (6, 4, 2)])
    # torch's own reverse-mode jacobian runs the sweeps for the learner: refused, as jacrev is
    # (tests/test_grading_hostile_123.py::test_a_reverse_jacobian_whose_rows_a_library_computes_scores_nothing)


def test_jacobian_reverse_catches_transposed_and_forward_mode():
    _fails(
        nb01.check_jacobian_reverse, lambda F, x: _jacobian_reverse(F, x).T, cases=[(3, 2, 0)], contains=("transposed",)
    )

    def forward(F, x):
        return torch.stack([torch.func.jvp(F, (x,), (torch.eye(x.numel())[i],))[1] for i in range(x.numel())], 1)

    _fails(nb01.check_jacobian_reverse, forward, cases=[(3, 2, 0)], contains=("forward mode", "no reverse sweep"))


def test_jacobian_reverse_tells_jacrev_and_jacfwd_apart_truthfully():
    """jacrev is reverse mode (vectorised): it is told so, not that no reverse sweep ran; jacfwd is forward
    mode and is told so, without a crash that names the check's internals."""
    jacrev = _fails(
        nb01.check_jacobian_reverse,
        lambda F, x: torch.func.jacrev(F)(x),
        cases=[(3, 2, 0)],
        contains=("vectorised reverse sweep", "torch.func.jacrev"),
    )
    assert "without any" not in jacrev
    jacfwd = _fails(
        nb01.check_jacobian_reverse,
        lambda F, x: torch.func.jacfwd(F)(x),
        cases=[(2, 3, 0)],
        contains=("forward mode", "torch.func.jacfwd"),
    )
    for message in (jacrev, jacfwd):
        assert "Count" not in message and "vmap" not in message and "raised" not in message
    # with one output, one vectorised sweep is one sweep per output: reverse mode, accepted
    nb01.check_jacobian_reverse(lambda F, x: torch.func.jacrev(F)(x), cases=[(4, 1, 3)])


def test_jacobian_reverse_catches_too_many_sweeps():
    def sweep_per_entry(F, x):
        x = x.detach().requires_grad_()
        y = F(x)
        J = torch.zeros(y.numel(), x.numel(), dtype=x.dtype)
        for i in range(y.numel()):
            for j in range(x.numel()):
                J[i, j] = torch.autograd.grad(y[i], x, retain_graph=True)[0][j]
        return J

    _fails(nb01.check_jacobian_reverse, sweep_per_entry, cases=[(3, 2, 0)], contains=("reverse sweeps",))


def test_central_difference_hints():
    good = lambda f, x, h: (f(x + h) - f(x - h)) / (2 * h)  # noqa: E731
    nb01.check_central_difference(good, cases=[("sin", 1.0, 1e-3), ("cube", 2.0, 1e-4)])
    _fails(
        nb01.check_central_difference,
        lambda f, x, h: (f(x + h) - f(x)) / h,
        cases=[("sin", 1.0, 1e-3)],
        contains=("one-sided",),
    )
    _fails(
        nb01.check_central_difference,
        lambda f, x, h: (f(x + h) - f(x - h)) / h,
        cases=[("sin", 1.0, 1e-3)],
        contains=("2h",),
    )
    _fails(
        nb01.check_central_difference,
        lambda f, x, h: (f(x - h) - f(x + h)) / (2 * h),
        cases=[("sin", 1.0, 1e-3)],
        contains=("other way round",),
    )

    def three_evaluations(f, x, h):
        f(x)
        return good(f, x, h)

    _fails(nb01.check_central_difference, three_evaluations, cases=[("sin", 1.0, 1e-3)], contains=("exactly 2",))


def _numerical_gradient(f, x, h=1e-6):
    g = torch.empty_like(x)
    for i in range(x.numel()):
        e = torch.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def test_numerical_gradient_checks():
    nb01.check_numerical_gradient(_numerical_gradient, cases=[(1, 0), (5, 1)])

    def in_place(f, x, h=1e-6):
        g = torch.empty_like(x)
        for i in range(x.numel()):
            x[i] += h
            up = f(x)
            x[i] -= 2 * h
            g[i] = (up - f(x)) / (2 * h)
        return g  # forgot to restore x[i]

    _fails(nb01.check_numerical_gradient, in_place, cases=[(3, 0)], contains=("changed x",))
    _fails(
        nb01.check_numerical_gradient,
        lambda f, x, h=1e-6: 2 * _numerical_gradient(f, x, h),
        cases=[(3, 0)],
        contains=("twice",),
    )
    _fails(
        nb01.check_numerical_gradient,
        lambda f, x, h=1e-6: _numerical_gradient(f, x, h)[:-1],
        cases=[(3, 0)],
        contains=("shape",),
    )

    def extra_evaluations(f, x, h=1e-6):
        f(x)
        return _numerical_gradient(f, x, h)

    _fails(nb01.check_numerical_gradient, extra_evaluations, cases=[(3, 0)], contains=("2n = 6",))


def test_blank_helper_is_named_not_its_caller():
    from autograder.probes.call import call_learner

    def helper(x):
        raise NotImplementedError()

    def written(x):
        return helper(x) + 1

    with pytest.raises(CheckFailed, match="`.*helper` is not written yet"):
        call_learner(written, 1.0, name="written")
    with pytest.raises(CheckFailed, match="`helper` is not written yet"):
        call_learner(helper, 1.0, name="helper")
